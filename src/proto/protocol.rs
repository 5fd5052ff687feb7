//! The protocol: every registered message type with its channel and
//! direction, and the hash both sides compare at connect time.

use crate::wire::schema::{Shape, leaf, mix_str, mix_u64};
use crate::{Decode, Encode, NetMessage};

use super::{Channel, ChannelDef, ChannelKind, Direction, Role};

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

/// The channels and message types an app exchanges. Client and server
/// build it the same way (the same channels in the same order, the same
/// registrations in any order); its [`hash`](Self::hash) is compared at
/// connect time and a mismatch is refused with the first difference named.
///
/// Every protocol starts with three channels: [`Channel::RELIABLE`]
/// ("reliable", ordered), [`Channel::UNRELIABLE`] ("unreliable") and
/// [`Channel::SNAPSHOT`] ("snapshot"); [`add_channel`](Self::add_channel)
/// declares more.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Protocol {
    channels: Vec<ChannelDef>,
    entries: Vec<ProtocolEntry>,
    /// Each registered type's shape, by id (none for entries that came from
    /// a peer's hello).
    shapes: Vec<(u32, &'static Shape)>,
}

impl Default for Protocol {
    fn default() -> Self {
        Self::new()
    }
}

impl Protocol {
    /// A protocol with the three default channels and no message.
    #[must_use]
    pub fn new() -> Self {
        let default = |name: &str, kind| ChannelDef {
            name: name.to_owned(),
            kind,
            priority: 0,
        };
        Self {
            channels: vec![
                default("reliable", ChannelKind::ReliableOrdered),
                default("unreliable", ChannelKind::Unreliable),
                default("snapshot", ChannelKind::Snapshot),
            ],
            entries: Vec::new(),
            shapes: Vec::new(),
        }
    }

    /// Declares a channel of `kind` named `name`, priority 0, and returns
    /// it. Both sides declare the same channels in the same order.
    ///
    /// # Panics
    /// If a channel already has the name, or the protocol has 255
    /// channels: a programming error found at startup.
    pub fn add_channel(&mut self, name: &str, kind: ChannelKind) -> Channel {
        self.add_channel_with_priority(name, kind, 0)
    }

    /// Declares a channel with a priority: when the link is congested, a
    /// reliable channel of higher priority sends first.
    ///
    /// # Panics
    /// As [`add_channel`](Self::add_channel).
    pub fn add_channel_with_priority(
        &mut self,
        name: &str,
        kind: ChannelKind,
        priority: i32,
    ) -> Channel {
        assert!(
            self.channel_named(name).is_none(),
            "zao: a channel named {name:?} is declared twice"
        );
        let index = u8::try_from(self.channels.len())
            .ok()
            .filter(|&i| i < u8::MAX)
            .unwrap_or_else(|| panic!("zao: more than 255 channels"));
        self.channels.push(ChannelDef {
            name: name.to_owned(),
            kind,
            priority,
        });
        Channel(index)
    }

    /// The channels, in declaration order (a [`Channel`] is an index here).
    #[must_use]
    pub fn channels(&self) -> &[ChannelDef] {
        &self.channels
    }

    /// What `channel` is, if the protocol declares it.
    #[must_use]
    pub fn channel(&self, channel: Channel) -> Option<&ChannelDef> {
        self.channels.get(usize::from(channel.0))
    }

    /// A channel's name in quotes, or its index when undeclared: for messages.
    fn channel_label(&self, channel: Channel) -> String {
        match self.channel(channel) {
            Some(def) => format!("{:?}", def.name),
            None => format!("{}", channel.0),
        }
    }

    /// The channel named `name`.
    #[must_use]
    pub fn channel_named(&self, name: &str) -> Option<Channel> {
        let i = self.channels.iter().position(|c| c.name == name)?;
        u8::try_from(i).ok().map(Channel)
    }

    /// The kind of the channel message `id` is registered on.
    #[must_use]
    pub fn kind_of(&self, id: u32) -> Option<(Channel, ChannelKind)> {
        let entry = self.get(id)?;
        Some((entry.channel, self.channel(entry.channel)?.kind))
    }

    /// Registers message type `M` on `channel`, sent in `direction`.
    ///
    /// # Panics
    /// If another type already has `M`'s id, the id is 0 (zao's
    /// heartbeat), the channel is not declared, or a snapshot channel is
    /// given a direction clients send in: programming errors found at
    /// startup, not runtime conditions.
    pub fn add<M: NetMessage>(&mut self, channel: Channel, direction: Direction) -> &mut Self {
        assert!(
            M::ID != 0,
            "message id 0 is reserved for zao's heartbeat ({})",
            M::NAME
        );
        let kind = self.channel(channel).map(|c| c.kind).unwrap_or_else(|| {
            panic!(
                "zao: {} is registered on {channel:?}, which is not declared",
                M::NAME
            )
        });
        assert!(
            kind != ChannelKind::Snapshot || direction == Direction::ServerToClient,
            "zao: {} is on a snapshot channel, which only the server sends on",
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

    /// Builds a protocol from the entries of a hello, with the default
    /// channels.
    #[must_use]
    pub fn from_entries(entries: Vec<ProtocolEntry>) -> Self {
        Self::from_parts(Self::new().channels, entries)
    }

    /// Builds a protocol from a channel table and entries (as a hello
    /// carries them).
    #[must_use]
    pub fn from_parts(channels: Vec<ChannelDef>, mut entries: Vec<ProtocolEntry>) -> Self {
        entries.sort_by_key(|e| e.id);
        Self {
            channels,
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

    /// A digest of the channels a protocol declares beyond the three
    /// defaults (name, kind, priority) and of every (id, fingerprint,
    /// channel, direction) (docs/WIRE.md §12.4). A protocol of the default
    /// channels hashes as it did before channels could be declared.
    #[must_use]
    pub fn hash(&self) -> u64 {
        let h = self
            .channels
            .iter()
            .enumerate()
            .skip(Self::DEFAULT_CHANNELS)
            .fold(leaf("zao-protocol"), |h, (i, c)| {
                let h = mix_u64(h, i as u64);
                let h = mix_str(h, &c.name);
                let h = mix_u64(h, c.kind as u64);
                mix_u64(h, u64::from(c.priority as u32))
            });
        self.entries.iter().fold(h, |h, e| {
            let h = mix_u64(h, u64::from(e.id));
            let h = mix_u64(h, e.fingerprint);
            mix_u64(h, (u64::from(e.channel.0) << 8) | e.direction as u64)
        })
    }

    /// How many channels every protocol starts with.
    pub const DEFAULT_CHANNELS: usize = 3;

    /// Describes the first difference from `other`, or `None` if they match.
    #[must_use]
    pub fn diff(&self, other: &Protocol) -> Option<String> {
        let channels = self.channels.len().max(other.channels.len());
        for i in 0..channels {
            match (self.channels.get(i), other.channels.get(i)) {
                (Some(a), Some(b)) if a == b => {}
                (Some(a), Some(b)) => {
                    return Some(format!(
                        "channel {i} is {:?} ({:?}, priority {}) here and {:?} ({:?}, priority {}) on the peer",
                        a.name, a.kind, a.priority, b.name, b.kind, b.priority
                    ));
                }
                (Some(a), None) => {
                    return Some(format!(
                        "channel {i} ({:?}) is declared only on this side",
                        a.name
                    ));
                }
                (None, Some(b)) => {
                    return Some(format!(
                        "channel {i} ({:?}) is declared only on the peer",
                        b.name
                    ));
                }
                (None, None) => {}
            }
        }
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
                        format!(
                            "is on channel {} here and {} on the peer",
                            self.channel_label(a.channel),
                            other.channel_label(b.channel)
                        )
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

    #[derive(Encode, Decode, crate::NetMessage)]
    #[zao(id = 1)]
    struct A {
        x: u32,
    }

    #[derive(Encode, Decode, crate::NetMessage)]
    #[zao(id = 2)]
    struct B {
        y: String,
    }

    #[derive(Encode, Decode, crate::NetMessage)]
    #[zao(id = 2)]
    struct BChanged {
        y: u64,
    }

    #[test]
    fn order_of_registration_does_not_matter() {
        let mut p = Protocol::new();
        p.add::<A>(Channel::RELIABLE, Direction::Both)
            .add::<B>(Channel::UNRELIABLE, Direction::ClientToServer);
        let mut q = Protocol::new();
        q.add::<B>(Channel::UNRELIABLE, Direction::ClientToServer)
            .add::<A>(Channel::RELIABLE, Direction::Both);
        assert_eq!(p.hash(), q.hash());
        assert_eq!(p.diff(&q), None);
    }

    #[test]
    fn a_difference_names_the_message() {
        let mut p = Protocol::new();
        p.add::<A>(Channel::RELIABLE, Direction::Both)
            .add::<B>(Channel::RELIABLE, Direction::Both);
        let mut q = Protocol::new();
        q.add::<A>(Channel::RELIABLE, Direction::Both)
            .add::<BChanged>(Channel::RELIABLE, Direction::Both);
        assert_ne!(p.hash(), q.hash());
        let diff = p.diff(&q).unwrap_or_default();
        assert!(diff.contains("id 2"), "{diff}");
        let mut r = Protocol::new();
        r.add::<A>(Channel::UNRELIABLE, Direction::Both)
            .add::<B>(Channel::RELIABLE, Direction::Both);
        assert!(p.diff(&r).unwrap_or_default().contains("\"unreliable\""));
        let mut s = Protocol::new();
        s.add::<A>(Channel::RELIABLE, Direction::Both);
        assert!(p.diff(&s).unwrap_or_default().contains("only on this side"));
    }
}
