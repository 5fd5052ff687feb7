//! A server's admission decisions, shared by every connection: how many
//! handshakes may be pending (in all and per IP), when a new connection
//! must first validate its address (QUIC Retry), how many clients may be
//! connected, which ids they get, and what a second connection of the same
//! identity does.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};

use super::{ClientId, DuplicateIdentity, Identity, Limits, RefuseReason};

/// What to do with a new QUIC connection attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IncomingVerdict {
    /// Start its handshake (it now counts as pending).
    Accept,
    /// Answer with a QUIC Retry: the client must prove it receives at its
    /// address before the server keeps any state for it.
    Retry,
    /// Refuse it outright (a limit is reached).
    Refuse,
}

/// What a server's admission has done so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct HandshakeStats {
    /// Handshakes under way now.
    pub pending: usize,
    /// Clients connected now (admitted and not yet closed).
    pub connected: usize,
    /// Connection attempts accepted into a handshake.
    pub accepted: u64,
    /// Connection attempts answered with a QUIC Retry (address validation).
    pub retried: u64,
    /// Connection attempts refused outright (a pending limit).
    pub refused: u64,
}

/// A client admitted by [`Admission::admit`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Admitted {
    pub(crate) client: ClientId,
    /// A connected client with the same identity, to close.
    pub(crate) replaces: Option<ClientId>,
}

/// See the module docs.
#[derive(Debug)]
pub(crate) struct Admission {
    max_pending: usize,
    per_ip: usize,
    retry_threshold: usize,
    max_clients: usize,
    duplicates: DuplicateIdentity,
    pending: usize,
    by_ip: HashMap<IpAddr, usize>,
    /// Clients admitted and not yet closed.
    slots: usize,
    next_id: u64,
    identities: HashMap<String, ClientId>,
    stats: HandshakeStats,
}

impl Admission {
    pub(crate) fn new(limits: &Limits) -> Self {
        Self {
            max_pending: limits.max_pending_handshakes,
            per_ip: limits.max_pending_per_ip,
            retry_threshold: limits.retry_threshold,
            max_clients: limits.max_clients,
            duplicates: limits.duplicate_identity,
            pending: 0,
            by_ip: HashMap::new(),
            slots: 0,
            next_id: 1,
            identities: HashMap::new(),
            stats: HandshakeStats::default(),
        }
    }

    /// Decides on a connection attempt from `addr`. `validated`: the client
    /// proved its address (it answered a Retry); `may_retry`: QUIC allows a
    /// Retry for this attempt.
    pub(crate) fn handle_incoming(
        &mut self,
        addr: SocketAddr,
        validated: bool,
        may_retry: bool,
    ) -> IncomingVerdict {
        let ip = addr.ip();
        let mine = self.by_ip.get(&ip).copied().unwrap_or(0);
        let verdict = if self.pending >= self.max_pending || mine >= self.per_ip {
            IncomingVerdict::Refuse
        } else if self.pending >= self.retry_threshold && !validated {
            if may_retry {
                IncomingVerdict::Retry
            } else {
                IncomingVerdict::Refuse
            }
        } else {
            self.pending += 1;
            self.by_ip.insert(ip, mine + 1);
            IncomingVerdict::Accept
        };
        match verdict {
            IncomingVerdict::Accept => self.stats.accepted += 1,
            IncomingVerdict::Retry => self.stats.retried += 1,
            IncomingVerdict::Refuse => self.stats.refused += 1,
        }
        verdict
    }

    /// The counters, with the pending handshakes and connected clients now.
    pub(crate) fn stats(&self) -> HandshakeStats {
        HandshakeStats {
            pending: self.pending,
            connected: self.slots,
            ..self.stats
        }
    }

    /// A handshake accepted by [`handle_incoming`](Self::handle_incoming)
    /// ended (admitted, refused or failed).
    pub(crate) fn handshake_ended(&mut self, addr: SocketAddr) {
        self.pending = self.pending.saturating_sub(1);
        let ip = addr.ip();
        if let Some(n) = self.by_ip.get_mut(&ip) {
            *n -= 1;
            if *n == 0 {
                self.by_ip.remove(&ip);
            }
        }
    }

    /// Handshakes pending now.
    #[cfg(test)]
    pub(crate) fn pending(&self) -> usize {
        self.pending
    }

    /// Admits an authenticated client: a free slot, an id, and the
    /// duplicate-identity policy.
    pub(crate) fn admit(&mut self, identity: Option<&Identity>) -> Result<Admitted, RefuseReason> {
        let existing = identity.and_then(|i| self.identities.get(&i.key).copied());
        if existing.is_some() && self.duplicates == DuplicateIdentity::RefuseNew {
            return Err(RefuseReason::AlreadyConnected);
        }
        // A replacement frees the old slot, so it needs no free one.
        if existing.is_none() && self.slots >= self.max_clients {
            return Err(RefuseReason::ServerFull);
        }
        let client = ClientId(self.next_id);
        self.next_id += 1;
        if existing.is_none() {
            self.slots += 1;
        }
        if let Some(identity) = identity {
            self.identities.insert(identity.key.clone(), client);
        }
        Ok(Admitted {
            client,
            replaces: existing,
        })
    }

    /// An admitted client closed: its slot and identity are free (unless a
    /// newer connection of the same identity replaced it and holds both).
    pub(crate) fn release(
        &mut self,
        client: ClientId,
        identity: Option<&Identity>,
        replaced: bool,
    ) {
        if !replaced {
            self.slots = self.slots.saturating_sub(1);
        }
        if let Some(identity) = identity
            && self.identities.get(&identity.key) == Some(&client)
        {
            self.identities.remove(&identity.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits {
            max_pending_handshakes: 10,
            max_pending_per_ip: 3,
            retry_threshold: 5,
            max_clients: 2,
            ..Limits::default()
        }
    }

    fn at(ip: u8, port: u16) -> SocketAddr {
        SocketAddr::from(([10, 0, 0, ip], port))
    }

    #[test]
    fn pending_handshakes_are_limited_per_ip_then_validated_then_refused() {
        let mut a = Admission::new(&limits());
        // One IP, many ports: three at most.
        let verdicts: Vec<_> = (0..5)
            .map(|port| a.handle_incoming(at(1, port), false, true))
            .collect();
        assert_eq!(&verdicts[..3], &[IncomingVerdict::Accept; 3]);
        assert_eq!(&verdicts[3..], &[IncomingVerdict::Refuse; 2]);
        // Other IPs up to the retry threshold, then retries for the unvalidated.
        assert_eq!(
            a.handle_incoming(at(2, 1), false, true),
            IncomingVerdict::Accept
        );
        assert_eq!(
            a.handle_incoming(at(3, 1), false, true),
            IncomingVerdict::Accept
        );
        assert_eq!(a.pending(), 5);
        assert_eq!(
            a.handle_incoming(at(4, 1), false, true),
            IncomingVerdict::Retry
        );
        assert_eq!(
            a.handle_incoming(at(4, 1), false, false),
            IncomingVerdict::Refuse
        );
        // Validated clients still get in, up to the global limit.
        for ip in 4..9 {
            assert_eq!(
                a.handle_incoming(at(ip, 1), true, false),
                IncomingVerdict::Accept
            );
        }
        assert_eq!(
            a.handle_incoming(at(20, 1), true, false),
            IncomingVerdict::Refuse
        );
        a.handshake_ended(at(1, 0));
        assert_eq!(
            a.handle_incoming(at(1, 9), true, false),
            IncomingVerdict::Accept
        );
    }

    #[test]
    fn slots_and_identities_follow_the_policy() {
        let mut a = Admission::new(&limits());
        let alice = Identity::new("alice");
        let first = a.admit(Some(&alice)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(first.replaces, None);
        let second = a.admit(None).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(a.admit(None), Err(RefuseReason::ServerFull));
        // Alice again replaces her first connection, even on a full server.
        let again = a.admit(Some(&alice)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(again.replaces, Some(first.client));
        a.release(first.client, Some(&alice), true);
        assert_eq!(a.admit(None), Err(RefuseReason::ServerFull));
        a.release(second.client, None, false);
        assert!(a.admit(None).is_ok());

        let mut a = Admission::new(&Limits {
            duplicate_identity: DuplicateIdentity::RefuseNew,
            ..limits()
        });
        assert!(a.admit(Some(&alice)).is_ok());
        assert_eq!(a.admit(Some(&alice)), Err(RefuseReason::AlreadyConnected));
    }
}
