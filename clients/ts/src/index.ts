/**
 * zao-client: the TypeScript client of Zao. A codec runtime that generated
 * protocol modules call (`zao-codegen protocol.json > protocol.ts`), a
 * sans-I/O client session, delta snapshots with a jitter buffer, and a
 * WebTransport adapter for browsers.
 */
export { DecodeError, EncodeError, fail, isDecodeError, type DecodeErrorKind } from './codec/errors.js';
export { DEFAULT_LIMITS, DANGEROUS_UNLIMITED, type DecodeLimits } from './codec/limits.js';
export { Reader } from './codec/reader.js';
export { Writer, strLen, putStr, bytesLen, putBytes, ensureRoom } from './codec/writer.js';
export { varintLen, varintLenBig, putVarint, putVarintBig, varintBytes, MAX_VARINT_LEN } from './codec/varint.js';
export { utf8Length, utf8Bytes, getUtf8 } from './codec/utf8.js';
export { viewOf } from './codec/view.js';
export {
  boolOf,
  charOf,
  charCode,
  nonZero,
  nonZeroBig,
  getU128,
  getI128,
  putU128,
  isizeLen,
  putIsize,
  hashMapCharge,
  btreeCharge,
  cmpNum,
  cmpStr,
  cmpBool,
  cmpBytes,
  keyOf,
  badValue,
  f32Bits,
  bitsF32,
  f64Lanes,
  lanesF64,
} from './codec/helpers.js';
export { splitMessage, type Codec, type MessageCodec, type Vec2, type Vec3, type Vec4, type Quat } from './codec/message.js';
export {
  fingerprint,
  leaf,
  mixStr,
  mixU64,
  hex64,
  parseHex,
  countsWide,
  scalarSize,
  SCALARS,
  FINGERPRINT_SEED,
  type Shape,
  type ScalarName,
  type StructShape,
  type EnumShape,
  type FlagsShape,
  type CustomShape,
  type FieldShape,
  type VariantShape,
  type FieldStyle,
} from './codec/shape.js';
export { parseProtocolJson, readShape, ProtocolJsonError, type ProtocolSchema, type MessageSchema } from './codec/protocol-json.js';
export { BitReader, BitWriter, bitsFor, gammaLen } from './codec/bits.js';
export {
  qrange,
  quantize,
  dequantize,
  getQF32,
  fieldBytes,
  putQF32,
  getQVector,
  putQVector,
  getQAngle,
  putQAngle,
  getQQuat,
  putQQuat,
  qquatFits,
  qquatHalf,
  qquatIdentity,
  qquatFromXyzw,
  qquatToXyzw,
  angleFromRadians,
  angleToRadians,
  rangeFingerprint,
  qangleFingerprint,
  qquatFingerprint,
  roundHalfAway,
  quantizeVector,
  dequantizeVector,
  type QRange,
  type QQuatValue,
} from './codec/quant.js';
export {
  protocolHash,
  makeProtocol,
  DEFAULT_CHANNELS,
  Channel,
  CHANNEL_KINDS,
  DIRECTIONS,
  type ChannelKind,
  type ChannelDef,
  type Direction,
  type ProtocolEntry,
  type ProtocolInfo,
} from './session/protocol.js';
export {
  PROTOCOL_MAGIC,
  WIRE_VERSION,
  HEARTBEAT_ID,
  HEARTBEAT_FRAME,
  MAX_HANDSHAKE_FRAME,
  makeHello,
  encodeHello,
  decodeHello,
  decodeHelloReply,
  encodeHelloReply,
  refuseReasonText,
  isRetryable,
  versionsCompatible,
  type Hello,
  type HelloReply,
  type RefuseReason,
} from './session/handshake.js';
export { FrameDecoder, FrameError, frame, streamHeader } from './session/framing.js';
export {
  splitDatagram,
  ackDatagram,
  snapshotDatagram,
  deltaDatagram,
  ackHolds,
  UnreliablePacker,
  DatagramError,
  MAX_ACKS,
  type SnapshotAck,
  type SnapshotHeader,
  type DeltaHeader,
  type ParsedDatagram,
  type MessageSlice,
  MIN_UP_DATAGRAM,
} from './session/datagram.js';
export { SnapshotReceiver, MAX_CHUNKS, type SnapshotVerdict } from './session/snapshot.js';
export { CloseCode, closeCodeName, disconnectText, SendError, type DisconnectReason, type CloseCodeName } from './session/close.js';
export {
  ClientSession,
  DATAGRAM_BUDGET,
  DEFAULT_CLIENT_LIMITS,
  type ClientConfig,
  type ClientEvent,
  type ClientLimits,
  type ClientStats,
  type OutStream,
  type StreamWrite,
  type Transmit,
  type UnorderedWrite,
} from './session/client.js';
export { Lane, laneApply, laneDiff, zigzag, unzigzag, type LaneSpec } from './delta/lanes.js';
export { Table } from './delta/table.js';
export { decodeChunk, encodeDelta, DeltaTooLarge, MAX_CHUNK_ROWS, type Layout, type ChunkRows } from './delta/codec.js';
export {
  DeltaReceiver,
  ApplyError,
  DEFAULT_HISTORY,
  tableOf,
  type DeltaCodec,
  type SnapshotChunk,
  type Applied,
  type ApplyResult,
  type Assembled,
  type ReceiverStats,
  type LaneBuffer,
} from './delta/receiver.js';
export { JitterBuffer, jitterConfig, jitterConfigFromHz, pairs, interpolated, type JitterConfig, type JitterStats, type Pair, type Sample } from './delta/jitter.js';
export { lerpF32, lerpAngleStep, nlerpQuat, slerpQuat, quatOfLanes } from './delta/interp.js';
export { WebTransportClient, parseCertHash, type WebTransportClientOptions } from './transport/webtransport.js';
