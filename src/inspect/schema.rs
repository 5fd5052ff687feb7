//! A protocol's messages with their shapes, from the Rust registrations or
//! from the protocol's JSON.

use crate::proto::{Channel, ChannelDef, Direction, Protocol, ProtocolEntry};

use super::shape::OwnedShape;

/// Every message of a protocol: id, name, fingerprint, channel, direction
/// and shape. Built from a [`Protocol`] ([`from_protocol`](Self::from_protocol))
/// or read from the JSON that [`Protocol::to_json`] writes
/// ([`from_json`](Self::from_json)), so a tool needs no Rust type to read
/// the protocol's traffic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProtocolSchema {
    /// The channel table (a message's `channel` is an index in it).
    pub(crate) channels: Vec<ChannelDef>,
    /// Sorted by id, ids unique.
    pub(crate) messages: Vec<MessageSchema>,
}

impl Default for ProtocolSchema {
    fn default() -> Self {
        Self {
            channels: Protocol::new().channels().to_vec(),
            messages: Vec::new(),
        }
    }
}

/// One message type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MessageSchema {
    /// The message id.
    pub id: u32,
    /// The type's `NetMessage::NAME`.
    pub name: String,
    /// The schema fingerprint (docs/WIRE.md §9).
    pub fingerprint: u64,
    /// Its channel.
    pub channel: Channel,
    /// Who sends it.
    pub direction: Direction,
    /// Its wire form; `None` for an entry known only by its fingerprint
    /// (a peer's hello): the inspector then shows its body as bytes.
    pub shape: Option<OwnedShape>,
}

impl ProtocolSchema {
    /// The messages of `protocol`, with the shapes of the types it registered.
    #[must_use]
    pub fn from_protocol(protocol: &Protocol) -> Self {
        let messages = protocol
            .entries()
            .iter()
            .map(|e| MessageSchema {
                id: e.id,
                name: e.name.clone(),
                fingerprint: e.fingerprint,
                channel: e.channel,
                direction: e.direction,
                shape: protocol.shape(e.id).map(OwnedShape::from),
            })
            .collect();
        Self {
            channels: protocol.channels().to_vec(),
            messages,
        }
    }

    /// The channels, in declaration order.
    #[must_use]
    pub fn channels(&self) -> &[ChannelDef] {
        &self.channels
    }

    /// The messages, sorted by id.
    #[must_use]
    pub fn messages(&self) -> &[MessageSchema] {
        &self.messages
    }

    /// The message with id `id`.
    #[must_use]
    pub fn get(&self, id: u32) -> Option<&MessageSchema> {
        let i = self.messages.binary_search_by_key(&id, |m| m.id).ok()?;
        self.messages.get(i)
    }

    /// The message named `name` (the first, should two share it).
    #[must_use]
    pub fn by_name(&self, name: &str) -> Option<&MessageSchema> {
        self.messages.iter().find(|m| m.name == name)
    }

    /// The entries a [`Protocol`] holds (no shapes).
    #[must_use]
    pub fn to_protocol(&self) -> Protocol {
        Protocol::from_parts(
            self.channels.clone(),
            self.messages
                .iter()
                .map(|m| ProtocolEntry {
                    id: m.id,
                    name: m.name.clone(),
                    fingerprint: m.fingerprint,
                    channel: m.channel,
                    direction: m.direction,
                })
                .collect(),
        )
    }

    /// The protocol hash both peers compare (docs/WIRE.md §12.4).
    #[must_use]
    pub fn hash(&self) -> u64 {
        self.to_protocol().hash()
    }
}
