//! The protocol: every registered message type with its channel and
//! direction, and the hash both sides compare at connect time.

use crate::wire::schema::{Shape, leaf, mix_u64};
use crate::{Decode, Encode, Message};

use super::{Channel, Direction, Role};

/// Why a message may not travel where it was sent or received.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Inadmissible {
    /// No message type has this id.
    Unknown(u32),
    /// The type is registered on another channel.
    WrongChannel {
        /// The message id.
        id: u32,
        /// Its registered channel.
        registered: Channel,
        /// The channel it was sent or received on.
        used: Channel,
    },
    /// The type is not sent by this side.
    WrongDirection {
        /// The message id.
        id: u32,
        /// Its registered direction.
        direction: Direction,
    },
}

impl core::fmt::Display for Inadmissible {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Unknown(id) => write!(f, "unknown message id {id}"),
            Self::WrongChannel {
                id,
                registered,
                used,
            } => write!(
                f,
                "message id {id} is registered on {registered:?}, not {used:?}"
            ),
            Self::WrongDirection { id, direction } => {
                write!(f, "message id {id} is sent {direction:?}, not by this side")
            }
        }
    }
}

/// One registered message type.
#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
pub struct ProtocolEntry {
    /// The message id.
    pub id: u32,
    /// The type's name, to say which one differs.
    pub name: String,
    /// The schema fingerprint.
    pub fingerprint: u64,
    /// Its channel.
    pub channel: Channel,
    /// Who sends it.
    pub direction: Direction,
}

/// The set of message types an app exchanges. Client and server build it
/// the same way (the same registrations, in any order); its [`hash`](Self::hash)
/// is compared at connect time and a mismatch is refused with the first
/// differing entry.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Protocol {
    entries: Vec<ProtocolEntry>,
    /// Each registered type's shape, by id (none for entries that came from
    /// a peer's hello).
    shapes: Vec<(u32, &'static Shape)>,
}

impl Protocol {
    /// An empty protocol.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers message type `M` on `channel`, sent in `direction`.
    ///
    /// # Panics
    /// If another type already has `M`'s id, or the id is 0 (zao's
    /// heartbeat): ids must be unique, and this is a programming error found
    /// at startup, not a runtime condition.
    pub fn add<M: Message>(&mut self, channel: Channel, direction: Direction) -> &mut Self {
        assert!(
            M::ID != 0,
            "message id 0 is reserved for zao's heartbeat ({})",
            M::NAME
        );
        let entry = ProtocolEntry {
            id: M::ID,
            name: M::NAME.to_owned(),
            fingerprint: M::FINGERPRINT,
            channel,
            direction,
        };
        match self.entries.binary_search_by_key(&entry.id, |e| e.id) {
            Ok(i) => {
                let existing = self.entries.get(i).map(|e| e.name.as_str()).unwrap_or("");
                panic!(
                    "message id {} is registered twice: {} and {}",
                    entry.id, existing, entry.name
                );
            }
            Err(i) => self.entries.insert(i, entry),
        }
        if let Err(i) = self.shapes.binary_search_by_key(&M::ID, |&(id, _)| id) {
            self.shapes.insert(i, (M::ID, &M::SHAPE));
        }
        self
    }

    /// The wire shape of message `id`, for a type registered with
    /// [`add`](Self::add) (entries from [`from_entries`](Self::from_entries)
    /// have none). `zao::inspect` reads messages with it.
    #[must_use]
    pub fn shape(&self, id: u32) -> Option<&'static Shape> {
        let i = self.shapes.binary_search_by_key(&id, |&(id, _)| id).ok()?;
        self.shapes.get(i).map(|&(_, shape)| shape)
    }

    /// The entries, sorted by id.
    #[must_use]
    pub fn entries(&self) -> &[ProtocolEntry] {
        &self.entries
    }

    /// Builds a protocol from entries (as received in a handshake).
    #[must_use]
    pub fn from_entries(mut entries: Vec<ProtocolEntry>) -> Self {
        entries.sort_by_key(|e| e.id);
        Self {
            entries,
            shapes: Vec::new(),
        }
    }

    /// The registration for message `id`.
    #[must_use]
    pub fn get(&self, id: u32) -> Option<&ProtocolEntry> {
        self.entries
            .binary_search_by_key(&id, |e| e.id)
            .ok()
            .and_then(|i| self.entries.get(i))
    }

    /// The one admission rule, applied on send and on receipt: message `id`
    /// may travel on `channel` when `sender` sends it.
    ///
    /// # Errors
    /// [`Inadmissible`] naming the rule it breaks.
    pub fn admits(
        &self,
        id: u32,
        channel: Channel,
        sender: Role,
    ) -> Result<&ProtocolEntry, Inadmissible> {
        let entry = self.get(id).ok_or(Inadmissible::Unknown(id))?;
        if entry.channel != channel {
            return Err(Inadmissible::WrongChannel {
                id,
                registered: entry.channel,
                used: channel,
            });
        }
        if !entry.direction.sent_by(sender) {
            return Err(Inadmissible::WrongDirection {
                id,
                direction: entry.direction,
            });
        }
        Ok(entry)
    }

    /// A digest of every (id, fingerprint, channel, direction).
    #[must_use]
    pub fn hash(&self) -> u64 {
        self.entries.iter().fold(leaf("zao-protocol"), |h, e| {
            let h = mix_u64(h, u64::from(e.id));
            let h = mix_u64(h, e.fingerprint);
            mix_u64(h, ((e.channel as u64) << 8) | e.direction as u64)
        })
    }

    /// Describes the first difference from `other`, or `None` if they match.
    #[must_use]
    pub fn diff(&self, other: &Protocol) -> Option<String> {
        let mut ours = self.entries.iter().peekable();
        let mut theirs = other.entries.iter().peekable();
        loop {
            match (ours.peek(), theirs.peek()) {
                (None, None) => return None,
                (Some(a), None) => {
                    return Some(format!(
                        "{} (id {}) is registered only on this side",
                        a.name, a.id
                    ));
                }
                (None, Some(b)) => {
                    return Some(format!(
                        "{} (id {}) is registered only on the peer",
                        b.name, b.id
                    ));
                }
                (Some(a), Some(b)) if a.id < b.id => {
                    return Some(format!(
                        "{} (id {}) is registered only on this side",
                        a.name, a.id
                    ));
                }
                (Some(a), Some(b)) if a.id > b.id => {
                    return Some(format!(
                        "{} (id {}) is registered only on the peer",
                        b.name, b.id
                    ));
                }
                (Some(a), Some(b)) if a != b => {
                    let what = if a.name != b.name {
                        format!("is {} here and {} on the peer", a.name, b.name)
                    } else if a.fingerprint != b.fingerprint {
                        "has different fields (schema fingerprint differs)".to_owned()
                    } else if a.channel != b.channel {
                        format!("is on {:?} here and {:?} on the peer", a.channel, b.channel)
                    } else {
                        format!(
                            "is sent {:?} here and {:?} on the peer",
                            a.direction, b.direction
                        )
                    };
                    return Some(format!("message {} (id {}) {what}", a.name, a.id));
                }
                _ => {
                    ours.next();
                    theirs.next();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Encode, Decode, crate::Message)]
    #[zao(id = 1)]
    struct A {
        x: u32,
    }

    #[derive(Encode, Decode, crate::Message)]
    #[zao(id = 2)]
    struct B {
        y: String,
    }

    #[derive(Encode, Decode, crate::Message)]
    #[zao(id = 2)]
    struct BChanged {
        y: u64,
    }

    #[test]
    fn order_of_registration_does_not_matter() {
        let mut p = Protocol::new();
        p.add::<A>(Channel::Reliable, Direction::Both)
            .add::<B>(Channel::Unreliable, Direction::ClientToServer);
        let mut q = Protocol::new();
        q.add::<B>(Channel::Unreliable, Direction::ClientToServer)
            .add::<A>(Channel::Reliable, Direction::Both);
        assert_eq!(p.hash(), q.hash());
        assert_eq!(p.diff(&q), None);
    }

    #[test]
    fn a_difference_names_the_message() {
        let mut p = Protocol::new();
        p.add::<A>(Channel::Reliable, Direction::Both)
            .add::<B>(Channel::Reliable, Direction::Both);
        let mut q = Protocol::new();
        q.add::<A>(Channel::Reliable, Direction::Both)
            .add::<BChanged>(Channel::Reliable, Direction::Both);
        assert_ne!(p.hash(), q.hash());
        let diff = p.diff(&q).unwrap_or_default();
        assert!(diff.contains("id 2"), "{diff}");
        let mut r = Protocol::new();
        r.add::<A>(Channel::Unreliable, Direction::Both)
            .add::<B>(Channel::Reliable, Direction::Both);
        assert!(p.diff(&r).unwrap_or_default().contains("Unreliable"));
        let mut s = Protocol::new();
        s.add::<A>(Channel::Reliable, Direction::Both);
        assert!(p.diff(&s).unwrap_or_default().contains("only on this side"));
    }
}
