//! A server's admission decisions, shared by every connection: how many
//! handshakes may be pending (in all and per address), when a new
//! connection must first validate its address (QUIC Retry), how many
//! clients may be connected (in all and per address), which ids they get,
//! and what a second connection of the same identity does.
//!
//! Addresses are counted by [`AddressKey`]: an IPv4 address whole, an IPv6
//! address by its first [`Limits::ipv6_prefix`] bits (a host rotating
//! within its /64 is one host). Players behind one address (NAT, a campus,
//! a LAN party) are told apart from a flood by address validation, not
//! refused for sharing it:
//! - an attempt that has not proved its address (no Retry answered) counts
//!   against [`Limits::max_pending_per_ip`]; past that, or past
//!   [`Limits::retry_threshold`] pending in all, it is sent a Retry, so a
//!   spoofed flood carrying a victim's address fills only the unvalidated
//!   slots, never the victim's way in;
//! - a validated attempt is not held to that cap, only to
//!   [`Limits::max_clients_per_ip`] validated handshakes per address and
//!   the global [`Limits::max_pending_handshakes`];
//! - connected clients per address are capped by
//!   [`Limits::max_clients_per_ip`], refused past it with a reason the
//!   client reads ([`RefuseReason::TooManyFromAddress`]).

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};

use super::{ClientId, DuplicateIdentity, Identity, Limits, RefuseReason};

/// What to do with a new QUIC connection attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IncomingVerdict {
    /// Start its handshake (it now counts as pending).
    Accept,
    /// Answer with a QUIC Retry: the client must prove it receives at its
    /// address before the server keeps any state for it.
    Retry,
    /// Refuse it outright (a limit is reached): the client reads
    /// [`RefuseReason::Busy`].
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

/// The unit addresses are counted in: an IPv4 address, or an IPv6 address
/// with all but its first [`Limits::ipv6_prefix`] bits cleared. (An IPv4
/// address mapped into IPv6 counts as the IPv4 address.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct AddressKey(IpAddr);

impl AddressKey {
    /// The key of `ip`, IPv6 addresses cut to `ipv6_prefix` bits.
    #[must_use]
    pub(crate) fn new(ip: IpAddr, ipv6_prefix: u8) -> Self {
        match ip {
            IpAddr::V4(v4) => Self(IpAddr::V4(v4)),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => Self(IpAddr::V4(v4)),
                None => {
                    let bits = u32::from(ipv6_prefix.min(128));
                    let mask = u128::MAX.checked_shl(128 - bits).unwrap_or(0);
                    Self(IpAddr::V6(Ipv6Addr::from(u128::from(v6) & mask)))
                }
            },
        }
    }

    /// The address (IPv6: the prefix, zeros after it).
    #[cfg(test)]
    #[must_use]
    pub(crate) fn ip(self) -> IpAddr {
        self.0
    }
}

/// A client admitted by [`Admission::admit`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Admitted {
    pub(crate) client: ClientId,
    /// A connected client with the same identity, to close.
    pub(crate) replaces: Option<ClientId>,
}

/// What one address holds now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct PerAddress {
    /// Handshakes of attempts that did not prove their address.
    unvalidated: usize,
    /// Handshakes of attempts that did (they answered a Retry).
    validated: usize,
    /// Admitted clients, not yet closed.
    connected: usize,
}

impl PerAddress {
    fn is_empty(self) -> bool {
        self == Self::default()
    }
}

/// See the module docs.
#[derive(Debug)]
pub(crate) struct Admission {
    max_pending: usize,
    per_ip: usize,
    per_ip_clients: usize,
    ipv6_prefix: u8,
    retry_threshold: usize,
    max_clients: usize,
    duplicates: DuplicateIdentity,
    /// New clients are refused with [`RefuseReason::Draining`].
    draining: bool,
    pending: usize,
    by_address: HashMap<AddressKey, PerAddress>,
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
            per_ip_clients: limits.max_clients_per_ip,
            ipv6_prefix: limits.ipv6_prefix,
            retry_threshold: limits.retry_threshold,
            max_clients: limits.max_clients,
            duplicates: limits.duplicate_identity,
            draining: false,
            pending: 0,
            by_address: HashMap::new(),
            slots: 0,
            next_id: 1,
            identities: HashMap::new(),
            stats: HandshakeStats::default(),
        }
    }

    fn key(&self, addr: SocketAddr) -> AddressKey {
        AddressKey::new(addr.ip(), self.ipv6_prefix)
    }

    /// Decides on a connection attempt from `addr`. `validated`: the client
    /// proved its address (it answered a Retry); `may_retry`: QUIC allows a
    /// Retry for this attempt. An accepted attempt counts as pending until
    /// [`handshake_ended`](Self::handshake_ended) with the same `validated`.
    pub(crate) fn handle_incoming(
        &mut self,
        addr: SocketAddr,
        validated: bool,
        may_retry: bool,
    ) -> IncomingVerdict {
        let key = self.key(addr);
        let mine = self.by_address.get(&key).copied().unwrap_or_default();
        let retry_or_refuse = if may_retry {
            IncomingVerdict::Retry
        } else {
            IncomingVerdict::Refuse
        };
        let verdict = if self.pending >= self.max_pending {
            IncomingVerdict::Refuse
        } else if validated {
            // A proven address: players behind one NAT are not turned away
            // for sharing it, up to the per-address client cap.
            if mine.validated >= self.per_ip_clients {
                IncomingVerdict::Refuse
            } else {
                IncomingVerdict::Accept
            }
        } else if mine.unvalidated >= self.per_ip || self.pending >= self.retry_threshold {
            // Retry before the cap: spoofed attempts with this source fill
            // only the unvalidated slots; a real client behind it answers
            // the Retry and comes in validated.
            retry_or_refuse
        } else {
            IncomingVerdict::Accept
        };
        match verdict {
            IncomingVerdict::Accept => {
                self.pending += 1;
                let entry = self.by_address.entry(key).or_default();
                if validated {
                    entry.validated += 1;
                } else {
                    entry.unvalidated += 1;
                }
                self.stats.accepted += 1;
            }
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
    pub(crate) fn handshake_ended(&mut self, addr: SocketAddr, validated: bool) {
        self.pending = self.pending.saturating_sub(1);
        let key = self.key(addr);
        self.update(key, |n| {
            let count = if validated {
                &mut n.validated
            } else {
                &mut n.unvalidated
            };
            *count = count.saturating_sub(1);
        });
    }

    fn update(&mut self, key: AddressKey, change: impl FnOnce(&mut PerAddress)) {
        if let Some(n) = self.by_address.get_mut(&key) {
            change(n);
            if n.is_empty() {
                self.by_address.remove(&key);
            }
        }
    }

    /// Handshakes pending now.
    #[cfg(test)]
    pub(crate) fn pending(&self) -> usize {
        self.pending
    }

    /// Refuses new clients with [`RefuseReason::Draining`] from now on
    /// (`true`), or admits them again.
    pub(crate) fn set_draining(&mut self, draining: bool) {
        self.draining = draining;
    }

    /// Whether new clients are refused as draining.
    pub(crate) fn is_draining(&self) -> bool {
        self.draining
    }

    /// Admits an authenticated client from `addr`: a free slot (in all and
    /// for its address), an id, and the duplicate-identity policy.
    pub(crate) fn admit(
        &mut self,
        addr: SocketAddr,
        identity: Option<&Identity>,
    ) -> Result<Admitted, RefuseReason> {
        if self.draining {
            return Err(RefuseReason::Draining);
        }
        let existing = identity.and_then(|i| self.identities.get(&i.key).copied());
        if existing.is_some() && self.duplicates == DuplicateIdentity::RefuseNew {
            return Err(RefuseReason::AlreadyConnected);
        }
        // A replacement frees the old slot, so it needs no free one.
        if existing.is_none() && self.slots >= self.max_clients {
            return Err(RefuseReason::ServerFull);
        }
        let key = self.key(addr);
        let mine = self.by_address.get(&key).map_or(0, |n| n.connected);
        if existing.is_none() && mine >= self.per_ip_clients {
            return Err(RefuseReason::TooManyFromAddress {
                max: self.per_ip_clients as u64,
            });
        }
        let client = ClientId(self.next_id);
        self.next_id += 1;
        if existing.is_none() {
            self.slots += 1;
        }
        // Counted for its own address, even as a replacement (the old one
        // is released against its own).
        self.by_address.entry(key).or_default().connected += 1;
        if let Some(identity) = identity {
            self.identities.insert(identity.key.clone(), client);
        }
        Ok(Admitted {
            client,
            replaces: existing,
        })
    }

    /// An admitted client from `addr` closed: its slot and identity are
    /// free (unless a newer connection of the same identity replaced it and
    /// holds both).
    pub(crate) fn release(
        &mut self,
        client: ClientId,
        addr: SocketAddr,
        identity: Option<&Identity>,
        replaced: bool,
    ) {
        if !replaced {
            self.slots = self.slots.saturating_sub(1);
        }
        let key = self.key(addr);
        self.update(key, |n| n.connected = n.connected.saturating_sub(1));
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
    use std::net::Ipv4Addr;

    use IncomingVerdict::{Accept, Refuse, Retry};

    fn limits() -> Limits {
        Limits {
            max_pending_handshakes: 10,
            max_pending_per_ip: 3,
            retry_threshold: 5,
            max_clients: 4,
            max_clients_per_ip: 2,
            ..Limits::default()
        }
    }

    fn at(ip: u8, port: u16) -> SocketAddr {
        SocketAddr::from(([10, 0, 0, ip], port))
    }

    fn v6(host: u64, port: u16) -> SocketAddr {
        let net: u128 = 0x2001_0db8_0001_0002 << 64;
        SocketAddr::from((Ipv6Addr::from(net | u128::from(host)), port))
    }

    #[test]
    fn unvalidated_attempts_per_address_are_capped_then_sent_a_retry() {
        let mut a = Admission::new(&limits());
        // One IP, many ports: three unvalidated at most, then a Retry (or a
        // refusal where QUIC allows no Retry).
        let verdicts: Vec<_> = (0..5)
            .map(|port| a.handle_incoming(at(1, port), false, true))
            .collect();
        assert_eq!(verdicts, [Accept, Accept, Accept, Retry, Retry]);
        assert_eq!(a.handle_incoming(at(1, 7), false, false), Refuse);
        // Other IPs up to the retry threshold, then retries for the unvalidated.
        assert_eq!(a.handle_incoming(at(2, 1), false, true), Accept);
        assert_eq!(a.handle_incoming(at(3, 1), false, true), Accept);
        assert_eq!(a.pending(), 5);
        assert_eq!(a.handle_incoming(at(4, 1), false, true), Retry);
        assert_eq!(a.handle_incoming(at(4, 1), false, false), Refuse);
        // Validated clients still get in, up to the global limit.
        for ip in 4..9 {
            assert_eq!(a.handle_incoming(at(ip, 1), true, false), Accept);
        }
        assert_eq!(a.handle_incoming(at(20, 1), true, false), Refuse);
        a.handshake_ended(at(1, 0), false);
        assert_eq!(a.handle_incoming(at(1, 9), true, false), Accept);
        assert_eq!(a.stats().refused, 3);
    }

    /// A spoofed flood carrying a victim's address fills the victim's
    /// unvalidated slots; the victim's own client is sent a Retry, proves
    /// its address and is accepted.
    #[test]
    fn a_flood_in_a_victims_name_leaves_the_victim_a_way_in() {
        let mut a = Admission::new(&limits());
        for port in 0..3 {
            assert_eq!(a.handle_incoming(at(9, port), false, true), Accept);
        }
        assert_eq!(a.handle_incoming(at(9, 50), false, true), Retry);
        assert_eq!(a.handle_incoming(at(9, 50), true, false), Accept);
    }

    /// Players behind one address who validate are held only to the
    /// per-address client cap, not to the unvalidated one.
    #[test]
    fn validated_attempts_from_one_address_pass_the_unvalidated_cap() {
        let mut a = Admission::new(&Limits {
            max_pending_handshakes: 128,
            max_pending_per_ip: 2,
            max_clients_per_ip: 64,
            retry_threshold: 32,
            ..Limits::default()
        });
        // Two come in unvalidated, then each answers its Retry: 64
        // validated handshakes beside them.
        let mut verdicts = Vec::new();
        for port in 0..66 {
            let verdict = match a.handle_incoming(at(1, port), false, true) {
                Retry => a.handle_incoming(at(1, port), true, false),
                other => other,
            };
            verdicts.push(verdict);
        }
        assert!(verdicts.iter().all(|v| *v == Accept), "{verdicts:?}");
        assert_eq!(a.pending(), 66);
        // The 65th validated handshake from that address is one too many.
        assert_eq!(a.handle_incoming(at(1, 66), true, false), Refuse);
    }

    #[test]
    fn ipv6_addresses_count_by_prefix() {
        let mut a = Admission::new(&limits());
        // One host rotating its interface id within its /64.
        let verdicts: Vec<_> = (1..=4)
            .map(|host| a.handle_incoming(v6(host, 1), false, true))
            .collect();
        assert_eq!(verdicts, [Accept, Accept, Accept, Retry]);
        // Another /64 is another host.
        let other = SocketAddr::from((Ipv6Addr::new(0x2001, 0xdb8, 1, 3, 0, 0, 0, 1), 1));
        assert_eq!(a.handle_incoming(other, false, true), Accept);
        // A /128 prefix counts every address on its own.
        let mut exact = Admission::new(&Limits {
            ipv6_prefix: 128,
            ..limits()
        });
        for host in 1..=4 {
            assert_eq!(exact.handle_incoming(v6(host, 1), false, true), Accept);
        }
        assert_eq!(
            AddressKey::new(v6(0xffff_ffff, 0).ip(), 64),
            AddressKey::new(v6(1, 0).ip(), 64)
        );
        assert_eq!(
            AddressKey::new(v6(1, 0).ip(), 0).ip(),
            IpAddr::V6(Ipv6Addr::UNSPECIFIED)
        );
        // An IPv4-mapped address is the IPv4 address.
        let mapped = IpAddr::V6(Ipv4Addr::new(10, 0, 0, 1).to_ipv6_mapped());
        assert_eq!(
            AddressKey::new(mapped, 64),
            AddressKey::new(at(1, 0).ip(), 64)
        );
    }

    #[test]
    fn connected_clients_per_address_are_capped_with_a_reason() {
        let mut a = Admission::new(&limits());
        let first = a.admit(at(1, 1), None).unwrap();
        a.admit(at(1, 2), None).unwrap();
        assert_eq!(
            a.admit(at(1, 3), None),
            Err(RefuseReason::TooManyFromAddress { max: 2 })
        );
        // Another address has its own count; a leaving client frees one.
        assert!(a.admit(at(2, 1), None).is_ok());
        a.release(first.client, at(1, 1), None, false);
        assert!(a.admit(at(1, 3), None).is_ok());
        assert!(a.by_address.values().all(|n| n.connected <= 2));
    }

    #[test]
    fn a_draining_server_refuses_new_clients() {
        let mut a = Admission::new(&limits());
        a.set_draining(true);
        assert_eq!(a.admit(at(1, 1), None), Err(RefuseReason::Draining));
        a.set_draining(false);
        assert!(a.admit(at(1, 1), None).is_ok());
    }

    #[test]
    fn slots_and_identities_follow_the_policy() {
        let mut a = Admission::new(&Limits {
            max_clients: 2,
            ..limits()
        });
        let alice = Identity::new("alice");
        let first = a
            .admit(at(1, 1), Some(&alice))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(first.replaces, None);
        let second = a.admit(at(2, 1), None).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(a.admit(at(3, 1), None), Err(RefuseReason::ServerFull));
        // Alice again replaces her first connection, even on a full server.
        let again = a
            .admit(at(4, 1), Some(&alice))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(again.replaces, Some(first.client));
        a.release(first.client, at(1, 1), Some(&alice), true);
        assert_eq!(a.admit(at(3, 1), None), Err(RefuseReason::ServerFull));
        a.release(second.client, at(2, 1), None, false);
        assert!(a.admit(at(3, 1), None).is_ok());
        // Nothing is left counted for the addresses that left.
        assert!(!a.by_address.contains_key(&a.key(at(1, 1))));
        assert!(!a.by_address.contains_key(&a.key(at(2, 1))));

        let mut a = Admission::new(&Limits {
            duplicate_identity: DuplicateIdentity::RefuseNew,
            ..limits()
        });
        assert!(a.admit(at(1, 1), Some(&alice)).is_ok());
        assert_eq!(
            a.admit(at(1, 2), Some(&alice)),
            Err(RefuseReason::AlreadyConnected)
        );
    }
}
