//! Session captures: what a server or client sent and received, with time,
//! connection, direction and channel, in the file format of docs/CAPTURE.md.
//!
//! The transport calls a [`CaptureWriter`] for every message it sends or
//! admits; the inspector (the `zao-inspect` command) reads the file back
//! with a [`CaptureReader`]. The header carries the protocol's JSON, so a
//! capture reads without the program that wrote it.

use core::fmt;
use std::io::{self, Read, Write};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::Decode;
use crate::proto::{Channel, Protocol, Role};

use super::json::JsonError;
use super::schema::ProtocolSchema;

/// The first 8 bytes of a capture: `\x89ZAOCAP\n` (a non-ASCII first byte
/// and a newline, so a text-mode transfer that mangles bytes shows).
pub const CAPTURE_MAGIC: [u8; 8] = *b"\x89ZAOCAP\n";
/// The format version this zao writes and reads.
pub const CAPTURE_VERSION: u16 = 1;
/// Bytes of a record after its length field, payload excluded.
const RECORD_FIXED: usize = 8 + 8 + 1 + 1 + 1;
/// The channel byte of an event record.
const NO_CHANNEL: u8 = 0xff;
/// The largest record and the largest protocol JSON a reader accepts by
/// default: 16 MiB, past any message the transport carries.
const DEFAULT_MAX_RECORD: usize = 16 << 20;

/// Which way a message went.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Flow {
    /// From a client to the server.
    ClientToServer,
    /// From the server to a client.
    ServerToClient,
}

/// What happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CaptureEvent<'a> {
    /// A message, framed (`id + body`, docs/WIRE.md §9) as it went on its
    /// channel: a snapshot chunk is the chunk's message.
    Message {
        /// Which way.
        flow: Flow,
        /// On which channel.
        channel: Channel,
        /// The framed message.
        framed: &'a [u8],
    },
    /// The connection was admitted; `peer` is the other end's address.
    Connected {
        /// The peer's address, as text.
        peer: &'a str,
    },
    /// The connection ended, for `reason`.
    Disconnected {
        /// Why, as text.
        reason: &'a str,
    },
}

/// One entry of a capture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CaptureRecord<'a> {
    /// Since the capture's start.
    pub time: Duration,
    /// The connection: the client id (on a client, its own; 0 before the
    /// server's welcome).
    pub connection: u64,
    /// What happened.
    pub event: CaptureEvent<'a>,
}

/// What a capture's header says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaptureHeader {
    /// The end that wrote it.
    pub side: Role,
    /// The writer's zao version.
    pub zao_version: String,
    /// Wall-clock time of record time zero, in microseconds since the Unix
    /// epoch (0 if unknown).
    pub start_unix_micros: u64,
    /// The protocol hash of the writer (docs/WIRE.md §12.4).
    pub protocol_hash: u64,
    /// The protocol's messages and shapes, from the embedded JSON (checked
    /// against the hash); `None` if the writer embedded none.
    pub schema: Option<ProtocolSchema>,
}

/// Writes a capture: the header at creation, then one record per call.
///
/// Give it a buffered writer (`BufWriter<File>`); it writes each record
/// with one `write_all`. It is `Send`: the transports give it a thread of
/// its own, off the network tasks.
#[derive(Debug)]
pub struct CaptureWriter<W: Write> {
    out: W,
    start: Instant,
    scratch: Vec<u8>,
    /// Bytes written, header included.
    written: u64,
    /// The most bytes the capture may hold ([`with_max_bytes`](Self::with_max_bytes)).
    max_bytes: u64,
}

impl CaptureWriter<io::BufWriter<std::fs::File>> {
    /// Creates (or truncates) the file at `path` and writes the header: the
    /// call a transport makes when asked to capture. A capture holds what
    /// players sent, so on Unix the file is the owner's alone (mode 0600,
    /// set on an existing file too), `path` itself must not be a symbolic
    /// link (`O_NOFOLLOW`: a link planted where the capture goes cannot
    /// redirect it onto another file) and must be a regular file.
    ///
    /// # Errors
    /// Any error creating or writing the file; `path` a symbolic link
    /// (`ELOOP` on Linux) or not a regular file.
    pub fn create(
        path: impl AsRef<std::path::Path>,
        protocol: &Protocol,
        side: Role,
    ) -> io::Result<Self> {
        let file = create_private(path.as_ref())?;
        Self::new(io::BufWriter::new(file), protocol, side)
    }
}

/// Opens `path` for writing as [`CaptureWriter::create`] describes.
fn create_private(path: &std::path::Path) -> io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Non-blocking: opening a FIFO with no reader fails instead of
        // hanging (a regular file ignores the flag).
        options
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    let file = options.open(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not a regular file", path.display()),
        ));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(file)
}

impl<W: Write> CaptureWriter<W> {
    /// Writes the header for `protocol` (its JSON embedded), recorded at
    /// `side`; time zero is now.
    ///
    /// # Errors
    /// Any error of `out`.
    pub fn new(out: W, protocol: &Protocol, side: Role) -> io::Result<Self> {
        Self::with_start(out, protocol, side, Instant::now(), SystemTime::now())
    }

    /// As [`new`](Self::new), with time zero at `start`, which was `wall`
    /// on the wall clock (for tests, and drivers with a clock of their own).
    ///
    /// # Errors
    /// Any error of `out`.
    pub fn with_start(
        mut out: W,
        protocol: &Protocol,
        side: Role,
        start: Instant,
        wall: SystemTime,
    ) -> io::Result<Self> {
        let json = protocol.to_json();
        let version = env!("CARGO_PKG_VERSION");
        let mut header = Vec::with_capacity(64 + json.len());
        header.extend_from_slice(&CAPTURE_MAGIC);
        header.extend_from_slice(&CAPTURE_VERSION.to_le_bytes());
        header.push(match side {
            Role::Server => 0,
            Role::Client => 1,
        });
        header.push(version.len() as u8);
        header.extend_from_slice(version.as_bytes());
        let micros = wall
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX));
        header.extend_from_slice(&micros.to_le_bytes());
        header.extend_from_slice(&protocol.hash().to_le_bytes());
        let json_len = u32::try_from(json.len()).map_err(|_| io::ErrorKind::InvalidInput)?;
        header.extend_from_slice(&json_len.to_le_bytes());
        header.extend_from_slice(json.as_bytes());
        out.write_all(&header)?;
        Ok(Self {
            out,
            start,
            scratch: Vec::new(),
            written: header.len() as u64,
            max_bytes: u64::MAX,
        })
    }

    /// Holds the capture to `max_bytes` (header included): a record that
    /// would pass it is not written, and [`record`](Self::record) says so.
    #[must_use]
    pub fn with_max_bytes(mut self, max_bytes: u64) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// Bytes written so far, header included.
    #[must_use]
    pub fn written(&self) -> u64 {
        self.written
    }

    /// The time of `now` in this capture.
    #[must_use]
    pub fn since_start(&self, now: Instant) -> Duration {
        now.saturating_duration_since(self.start)
    }

    /// Appends one record.
    ///
    /// # Errors
    /// Any error of the writer; `InvalidInput` for a payload over 4 GiB;
    /// `FileTooLarge`, with nothing written, for a record that would take
    /// the capture past its [`with_max_bytes`](Self::with_max_bytes).
    pub fn record(&mut self, record: &CaptureRecord<'_>) -> io::Result<()> {
        let (kind, flow, channel, payload) = match record.event {
            CaptureEvent::Message {
                flow,
                channel,
                framed,
            } => (
                0u8,
                match flow {
                    Flow::ClientToServer => 0u8,
                    Flow::ServerToClient => 1,
                },
                channel.0,
                framed,
            ),
            CaptureEvent::Connected { peer } => (1, 0, NO_CHANNEL, peer.as_bytes()),
            CaptureEvent::Disconnected { reason } => (2, 0, NO_CHANNEL, reason.as_bytes()),
        };
        let len = u32::try_from(RECORD_FIXED + payload.len())
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        let size = 4 + u64::from(len);
        if self.written.saturating_add(size) > self.max_bytes {
            return Err(io::Error::new(
                io::ErrorKind::FileTooLarge,
                format!("the capture reached its limit of {} bytes", self.max_bytes),
            ));
        }
        let time = u64::try_from(record.time.as_micros()).unwrap_or(u64::MAX);
        let s = &mut self.scratch;
        s.clear();
        s.extend_from_slice(&len.to_le_bytes());
        s.extend_from_slice(&time.to_le_bytes());
        s.extend_from_slice(&record.connection.to_le_bytes());
        s.extend_from_slice(&[kind, flow, channel]);
        s.extend_from_slice(payload);
        self.out.write_all(s)?;
        self.written += size;
        Ok(())
    }

    /// Records a message sent or admitted at `now` on `connection`.
    ///
    /// # Errors
    /// As [`record`](Self::record).
    pub fn message(
        &mut self,
        now: Instant,
        connection: u64,
        flow: Flow,
        channel: Channel,
        framed: &[u8],
    ) -> io::Result<()> {
        self.record(&CaptureRecord {
            time: self.since_start(now),
            connection,
            event: CaptureEvent::Message {
                flow,
                channel,
                framed,
            },
        })
    }

    /// Records that `connection` was admitted, from `peer`.
    ///
    /// # Errors
    /// As [`record`](Self::record).
    pub fn connected(&mut self, now: Instant, connection: u64, peer: &str) -> io::Result<()> {
        self.record(&CaptureRecord {
            time: self.since_start(now),
            connection,
            event: CaptureEvent::Connected { peer },
        })
    }

    /// Records that `connection` ended, for `reason`.
    ///
    /// # Errors
    /// As [`record`](Self::record).
    pub fn disconnected(&mut self, now: Instant, connection: u64, reason: &str) -> io::Result<()> {
        self.record(&CaptureRecord {
            time: self.since_start(now),
            connection,
            event: CaptureEvent::Disconnected { reason },
        })
    }

    /// Flushes the writer.
    ///
    /// # Errors
    /// Any error of the writer.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// The writer, flushed.
    ///
    /// # Errors
    /// Any error of the flush.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Why a capture did not read.
#[derive(Debug)]
#[non_exhaustive]
pub enum CaptureError {
    /// The reader failed.
    Io(io::Error),
    /// The file does not start with [`CAPTURE_MAGIC`].
    NotACapture,
    /// A format version this zao does not read.
    UnsupportedVersion(u16),
    /// The input ends inside the header or a record (a writer that
    /// stopped mid-write); every record before `offset` was whole.
    Truncated {
        /// Where the cut record starts.
        offset: u64,
    },
    /// A record or the protocol JSON is longer than the reader's limit.
    TooLarge {
        /// Where it starts.
        offset: u64,
        /// The length it claims.
        len: u64,
    },
    /// A record with an unknown kind, direction or channel, or too short.
    BadRecord {
        /// Where it starts.
        offset: u64,
    },
    /// The embedded protocol JSON does not load.
    Protocol(JsonError),
    /// The embedded protocol's hash is not the one in the header.
    HashMismatch,
}

impl fmt::Display for CaptureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io(e) => write!(f, "reading the capture: {e}"),
            Self::NotACapture => f.write_str("not a zao capture (bad magic)"),
            Self::UnsupportedVersion(v) => write!(f, "capture format version {v} is not supported"),
            Self::Truncated { offset } => {
                write!(f, "the capture ends inside the record at byte {offset}")
            }
            Self::TooLarge { offset, len } => {
                write!(
                    f,
                    "the record at byte {offset} claims {len} bytes, over the limit"
                )
            }
            Self::BadRecord { offset } => write!(f, "malformed record at byte {offset}"),
            Self::Protocol(e) => write!(f, "the capture's protocol: {e}"),
            Self::HashMismatch => f.write_str("the capture's protocol does not have its hash"),
        }
    }
}

impl std::error::Error for CaptureError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io(e) => Some(e),
            Self::Protocol(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for CaptureError {
    fn from(e: io::Error) -> Self {
        Self::Io(e)
    }
}

/// Reads a capture: the header at creation, then records one at a time.
#[derive(Debug)]
pub struct CaptureReader<R: Read> {
    input: R,
    header: CaptureHeader,
    offset: u64,
    max_record: usize,
    buf: Vec<u8>,
}

impl<R: Read> CaptureReader<R> {
    /// Reads and checks the header (the embedded protocol JSON loads and
    /// has the header's hash). Records and the JSON are limited to 16 MiB.
    ///
    /// # Errors
    /// [`CaptureError`] for a header that is not a zao capture's.
    pub fn new(input: R) -> Result<Self, CaptureError> {
        Self::with_max_record(input, DEFAULT_MAX_RECORD)
    }

    /// As [`new`](Self::new), refusing records (and JSON) over `max_record`
    /// bytes.
    ///
    /// # Errors
    /// As [`new`](Self::new).
    pub fn with_max_record(input: R, max_record: usize) -> Result<Self, CaptureError> {
        let mut reader = Self {
            input,
            header: CaptureHeader {
                side: Role::Server,
                zao_version: String::new(),
                start_unix_micros: 0,
                protocol_hash: 0,
                schema: None,
            },
            offset: 0,
            max_record,
            buf: Vec::new(),
        };
        let magic: [u8; 8] = reader.header_array()?;
        if magic != CAPTURE_MAGIC {
            return Err(CaptureError::NotACapture);
        }
        let version = u16::from_le_bytes(reader.header_array()?);
        if version != CAPTURE_VERSION {
            return Err(CaptureError::UnsupportedVersion(version));
        }
        let [side, version_len] = reader.header_array()?;
        reader.header.side = match side {
            0 => Role::Server,
            1 => Role::Client,
            _ => return Err(CaptureError::BadRecord { offset: 10 }),
        };
        let zao_version = reader.header_bytes(usize::from(version_len))?;
        reader.header.zao_version = String::from_utf8_lossy(&zao_version).into_owned();
        reader.header.start_unix_micros = u64::from_le_bytes(reader.header_array()?);
        reader.header.protocol_hash = u64::from_le_bytes(reader.header_array()?);
        let json_at = reader.offset;
        let json_len = u32::from_le_bytes(reader.header_array()?) as usize;
        if json_len > max_record {
            return Err(CaptureError::TooLarge {
                offset: json_at,
                len: json_len as u64,
            });
        }
        if json_len > 0 {
            let json = reader.header_bytes(json_len)?;
            let json = core::str::from_utf8(&json)
                .map_err(|_| CaptureError::BadRecord { offset: json_at })?;
            let schema = ProtocolSchema::from_json(json).map_err(CaptureError::Protocol)?;
            if schema.hash() != reader.header.protocol_hash {
                return Err(CaptureError::HashMismatch);
            }
            reader.header.schema = Some(schema);
        }
        Ok(reader)
    }

    /// The header.
    #[must_use]
    pub fn header(&self) -> &CaptureHeader {
        &self.header
    }

    /// The next record, or `None` at the end of a whole capture.
    ///
    /// # Errors
    /// [`CaptureError::Truncated`] if the input ends inside a record, or
    /// any other [`CaptureError`] for a malformed one.
    pub fn next_record(&mut self) -> Result<Option<CaptureRecord<'_>>, CaptureError> {
        let at = self.offset;
        let mut len = [0u8; 4];
        match read_full(&mut self.input, &mut len)? {
            0 => return Ok(None),
            4 => {}
            _ => return Err(CaptureError::Truncated { offset: at }),
        }
        let len = u32::from_le_bytes(len) as usize;
        if len < RECORD_FIXED {
            return Err(CaptureError::BadRecord { offset: at });
        }
        if len > self.max_record {
            return Err(CaptureError::TooLarge {
                offset: at,
                len: len as u64,
            });
        }
        self.buf.clear();
        self.buf.resize(len, 0);
        if read_full(&mut self.input, &mut self.buf)? != len {
            return Err(CaptureError::Truncated { offset: at });
        }
        self.offset += 4 + len as u64;
        let (fixed, payload) = self.buf.split_at(RECORD_FIXED);
        let word = |i: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(fixed.get(i..i + 8).unwrap_or(&[0; 8]));
            u64::from_le_bytes(b)
        };
        let (time, connection) = (word(0), word(8));
        let bad = CaptureError::BadRecord { offset: at };
        let [kind, flow, channel] = match fixed.get(16..19) {
            Some(&[k, f, c]) => [k, f, c],
            _ => return Err(bad),
        };
        let text = |payload| {
            core::str::from_utf8(payload).map_err(|_| CaptureError::BadRecord { offset: at })
        };
        let event = match kind {
            0 => CaptureEvent::Message {
                flow: match flow {
                    0 => Flow::ClientToServer,
                    1 => Flow::ServerToClient,
                    _ => return Err(bad),
                },
                channel: Channel::decode(&[channel])
                    .map_err(|_| CaptureError::BadRecord { offset: at })?,
                framed: payload,
            },
            1 => CaptureEvent::Connected {
                peer: text(payload)?,
            },
            2 => CaptureEvent::Disconnected {
                reason: text(payload)?,
            },
            _ => return Err(bad),
        };
        Ok(Some(CaptureRecord {
            time: Duration::from_micros(time),
            connection,
            event,
        }))
    }

    fn header_array<const N: usize>(&mut self) -> Result<[u8; N], CaptureError> {
        let mut out = [0u8; N];
        if read_full(&mut self.input, &mut out)? != N {
            return Err(CaptureError::Truncated { offset: 0 });
        }
        self.offset += N as u64;
        Ok(out)
    }

    fn header_bytes(&mut self, n: usize) -> Result<Vec<u8>, CaptureError> {
        let mut out = vec![0u8; n];
        if read_full(&mut self.input, &mut out)? != n {
            return Err(CaptureError::Truncated { offset: 0 });
        }
        self.offset += n as u64;
        Ok(out)
    }
}

/// Reads until `buf` is full or the input ends; returns the bytes read.
fn read_full(input: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match input.read(buf.get_mut(n..).unwrap_or_default()) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}
