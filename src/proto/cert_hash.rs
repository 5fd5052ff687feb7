//! A certificate's SHA-256: what a client pins.

use core::fmt;

/// A certificate's SHA-256, printed and parsed as 64 hex digits. A client
/// pins it (as WebTransport's `serverCertificateHashes` does); the
/// transport computes it from the certificate's DER.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct CertHash(pub [u8; 32]);

impl CertHash {
    /// Parses 64 hex digits (colons allowed between bytes).
    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        let hex: Vec<u8> = text.bytes().filter(|b| *b != b':').collect();
        if hex.len() != 64 {
            return None;
        }
        let mut out = [0u8; 32];
        for (byte, pair) in out.iter_mut().zip(hex.chunks(2)) {
            let s = core::str::from_utf8(pair).ok()?;
            *byte = u8::from_str_radix(s, 16).ok()?;
        }
        Some(Self(out))
    }
}

impl fmt::Display for CertHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl fmt::Debug for CertHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CertHash({self})")
    }
}

/// Text that is not 64 hex digits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseCertHashError;

impl fmt::Display for ParseCertHashError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not a SHA-256 hash: expected 64 hex digits")
    }
}

impl std::error::Error for ParseCertHashError {}

impl core::str::FromStr for CertHash {
    type Err = ParseCertHashError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s).ok_or(ParseCertHashError)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_print_and_parse() {
        let hash = CertHash([0xab; 32]);
        let text = hash.to_string();
        assert_eq!(text.len(), 64);
        assert_eq!(CertHash::parse(&text), Some(hash));
        assert_eq!(text.parse::<CertHash>(), Ok(hash));
        assert_eq!(CertHash::parse("zz"), None);
        assert_eq!("ab".repeat(31).parse::<CertHash>(), Err(ParseCertHashError));
    }
}
