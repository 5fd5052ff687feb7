//! Authentication: the game's callback decides, asynchronously and within
//! the handshake deadline, who a connecting client is.

use core::fmt;
use core::future::Future;
use core::pin::Pin;
use std::any::Any;
use std::net::SocketAddr;
use std::sync::Arc;

/// Who a client is, as the game's auth callback says: a key the server
/// compares (the same key connecting twice is one player, see
/// [`DuplicateIdentity`](super::DuplicateIdentity)) and optional game data
/// that arrives with the connected event.
#[derive(Clone)]
pub struct Identity {
    /// The key: a user id, an account name. Compared, never interpreted.
    pub key: String,
    /// The game's own data about the client (a profile, permissions).
    pub data: Option<Arc<dyn Any + Send + Sync>>,
}

impl Identity {
    /// An identity with `key` and no data.
    #[must_use]
    pub fn new(key: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            data: None,
        }
    }

    /// An identity with `key` and the game's `data`.
    #[must_use]
    pub fn with_data(key: impl Into<String>, data: impl Any + Send + Sync) -> Self {
        Self {
            key: key.into(),
            data: Some(Arc::new(data)),
        }
    }

    /// The game's data, if it is a `T`.
    #[must_use]
    pub fn data<T: Any>(&self) -> Option<&T> {
        self.data.as_deref().and_then(|d| d.downcast_ref())
    }
}

impl fmt::Debug for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Identity")
            .field("key", &self.key)
            .field("data", &self.data.is_some())
            .finish()
    }
}

/// Identities are equal when their keys are.
impl PartialEq for Identity {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

impl Eq for Identity {}

/// What an [`AuthCallback`] sees of a connecting client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthRequest {
    /// The token the client sent, if any.
    pub token: Option<Vec<u8>>,
    /// The client's address.
    pub addr: SocketAddr,
}

/// Why the auth callback turned a client away.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuthError {
    /// The client may not join; the reason is shown to it.
    Rejected(String),
    /// The callback could not decide (its account service is down); the
    /// client is refused and may try again later.
    Unavailable(String),
}

impl fmt::Display for AuthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Rejected(why) => write!(f, "rejected: {why}"),
            Self::Unavailable(why) => write!(f, "authentication unavailable: {why}"),
        }
    }
}

impl std::error::Error for AuthError {}

/// The future an [`AuthCallback`] returns.
pub type AuthFuture = Pin<Box<dyn Future<Output = Result<Identity, AuthError>> + Send>>;

/// Decides whether a client may join, and who it is. It runs once per
/// connection that passed the protocol and version checks, off the network
/// threads, and must finish within the handshake deadline
/// ([`Limits::handshake_timeout`](super::Limits::handshake_timeout)) or the
/// client is refused.
///
/// ```
/// use std::sync::Arc;
/// use zao::proto::{AuthCallback, AuthError, Identity};
///
/// let auth: AuthCallback = Arc::new(|request| {
///     Box::pin(async move {
///         match request.token.as_deref() {
///             Some(b"secret") => Ok(Identity::new("alice")),
///             _ => Err(AuthError::Rejected("bad token".into())),
///         }
///     })
/// });
/// ```
pub type AuthCallback = Arc<dyn Fn(AuthRequest) -> AuthFuture + Send + Sync>;
