//! `zao-inspect`: zao messages and session captures as readable text.
//!
//! ```text
//! zao-inspect [OPTIONS] [INPUT]
//! ```
//!
//! INPUT is a file, or `-` / nothing for stdin. A capture (docs/CAPTURE.md)
//! is recognised by its magic and carries its protocol; anything else needs
//! `--protocol FILE.json` (`Protocol::to_json`, e.g.
//! `assets/conformance/protocol.json`) and is one framed message in binary,
//! or hex text with one message per line (`--hex`, or found out by itself).
//! Run with `--help` for the options.

#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{self, Read, Write};
use std::process::ExitCode;

use zao::inspect::{
    CAPTURE_MAGIC, CaptureEvent, CaptureReader, Flow, Inspector, ProtocolSchema, TextStyle,
};
use zao::proto::Role;

const USAGE: &str = "\
zao-inspect: zao messages and session captures as readable text

usage: zao-inspect [OPTIONS] [INPUT]

INPUT is a file, or `-` (the default) for stdin:
  - a capture (docs/CAPTURE.md), found by its magic; it carries its protocol;
  - hex text, one framed message (id + body) per line (`--hex`, or when the
    input is only hex digits and spaces);
  - otherwise one framed message in binary.

options:
  --protocol FILE      the protocol JSON (Protocol::to_json); needed unless
                       INPUT is a capture that embeds it
  --annotate           the annotated hex view: offset, bytes, field, value
  --pretty             one item per line for nested structs, lists and maps
  --message NAME|ID    only these messages (repeat, or a comma list)
  --client ID          only these connections of a capture (repeat, or a list)
  --hex                read hex text even if it looks binary
  --from-text          read the readable form instead, and print its bytes in hex
  --print-protocol     print the protocol JSON (of the capture, or --protocol)
  -h, --help           this text
";

#[derive(Default)]
struct Options {
    input: Option<String>,
    protocol: Option<String>,
    annotate: bool,
    pretty: bool,
    hex: bool,
    from_text: bool,
    print_protocol: bool,
    messages: Vec<String>,
    clients: Vec<u64>,
}

fn main() -> ExitCode {
    let options = match parse_args(std::env::args().skip(1)) {
        Ok(Some(options)) => options,
        Ok(None) => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("zao-inspect: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let mut out = io::stdout().lock();
    match run(&options, &mut out) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            let _ = out.flush();
            eprintln!("zao-inspect: {e}");
            ExitCode::from(1)
        }
    }
}

fn parse_args(args: impl Iterator<Item = String>) -> Result<Option<Options>, String> {
    let mut o = Options::default();
    let mut args = args.peekable();
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "-h" | "--help" => return Ok(None),
            "--protocol" => o.protocol = Some(value("--protocol")?),
            "--annotate" => o.annotate = true,
            "--pretty" => o.pretty = true,
            "--hex" => o.hex = true,
            "--from-text" => o.from_text = true,
            "--print-protocol" => o.print_protocol = true,
            "--message" => o
                .messages
                .extend(value("--message")?.split(',').map(str::to_owned)),
            "--client" => {
                for id in value("--client")?.split(',') {
                    o.clients
                        .push(id.parse().map_err(|_| format!("bad client id `{id}`"))?);
                }
            }
            _ if arg.starts_with("--") => return Err(format!("unknown option `{arg}`")),
            _ if o.input.is_none() => o.input = Some(arg),
            _ => return Err(format!("one input only (`{arg}`)")),
        }
    }
    Ok(Some(o))
}

/// Runs the command; `Ok(false)` when some message did not decode.
fn run(o: &Options, out: &mut impl Write) -> Result<bool, String> {
    let input = read_input(o.input.as_deref())?;
    let protocol = match &o.protocol {
        Some(path) => {
            let json = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
            Some(ProtocolSchema::from_json(&json).map_err(|e| format!("{path}: {e}"))?)
        }
        None => None,
    };
    if input.starts_with(&CAPTURE_MAGIC) {
        return capture(o, &input, protocol, out);
    }
    let schema = protocol.ok_or("this input is not a capture: give --protocol FILE.json")?;
    if o.print_protocol {
        write!(out, "{}", schema.to_json()).map_err(|e| e.to_string())?;
        return Ok(true);
    }
    let inspector = Inspector::new(schema);
    if o.from_text {
        let text = String::from_utf8(input).map_err(|_| "the text is not UTF-8")?;
        let bytes = inspector.from_text(&text).map_err(|e| e.to_string())?;
        writeln!(out, "{}", hex(&bytes)).map_err(|e| e.to_string())?;
        return Ok(true);
    }
    let messages = if o.hex || looks_like_hex(&input) {
        parse_hex_lines(&input)?
    } else {
        vec![input]
    };
    let mut ok = true;
    let mut first = true;
    for bytes in &messages {
        if !wanted(o, &inspector, bytes) {
            continue;
        }
        if o.annotate && !first {
            writeln!(out).map_err(|e| e.to_string())?;
        }
        first = false;
        ok &= show(o, &inspector, bytes, "", out)?;
    }
    Ok(ok)
}

fn read_input(path: Option<&str>) -> Result<Vec<u8>, String> {
    match path {
        None | Some("-") => {
            let mut buf = Vec::new();
            io::stdin()
                .read_to_end(&mut buf)
                .map_err(|e| format!("stdin: {e}"))?;
            Ok(buf)
        }
        Some(path) => std::fs::read(path).map_err(|e| format!("{path}: {e}")),
    }
}

/// Prints one message as text (or annotated); `false` if it did not decode.
fn show(
    o: &Options,
    inspector: &Inspector,
    bytes: &[u8],
    indent: &str,
    out: &mut impl Write,
) -> Result<bool, String> {
    let io = |e: io::Error| e.to_string();
    if o.annotate {
        let annotated = inspector.annotate(bytes);
        for line in annotated.to_string().lines() {
            writeln!(out, "{indent}{line}").map_err(io)?;
        }
        return Ok(annotated.error().is_none());
    }
    let style = if o.pretty {
        TextStyle::Pretty
    } else {
        TextStyle::Compact
    };
    match inspector.to_text_styled(bytes, style) {
        Ok(text) => {
            let mut lines = text.lines();
            writeln!(out, "{}", lines.next().unwrap_or_default()).map_err(io)?;
            for line in lines {
                writeln!(out, "{indent}{line}").map_err(io)?;
            }
            Ok(true)
        }
        Err(e) => {
            writeln!(out, "<{e}> {}", hex(bytes)).map_err(io)?;
            Ok(false)
        }
    }
}

/// Whether `--message` lets this framed message through.
fn wanted(o: &Options, inspector: &Inspector, bytes: &[u8]) -> bool {
    if o.messages.is_empty() {
        return true;
    }
    let Ok((id, _)) = zao::split_message(bytes) else {
        return false;
    };
    let name = inspector.message(id).map(|m| m.name.as_str());
    o.messages
        .iter()
        .any(|m| m.parse::<u32>().ok() == Some(id) || Some(m.as_str()) == name)
}

fn capture(
    o: &Options,
    input: &[u8],
    protocol: Option<ProtocolSchema>,
    out: &mut impl Write,
) -> Result<bool, String> {
    let io = |e: io::Error| e.to_string();
    let mut reader = CaptureReader::new(input).map_err(|e| e.to_string())?;
    let header = reader.header().clone();
    let schema = match (protocol, header.schema) {
        (Some(given), _) => {
            if given.hash() != header.protocol_hash {
                eprintln!(
                    "zao-inspect: warning: --protocol has hash {:#018x}, the capture {:#018x}",
                    given.hash(),
                    header.protocol_hash
                );
            }
            given
        }
        (None, Some(embedded)) => embedded,
        (None, None) => return Err("the capture embeds no protocol: give --protocol".into()),
    };
    if o.print_protocol {
        write!(out, "{}", schema.to_json()).map_err(io)?;
        return Ok(true);
    }
    let side = match header.side {
        Role::Server => "the server",
        Role::Client => "a client",
    };
    writeln!(
        out,
        "capture recorded by {side}, zao {}, started {}, protocol {:#018x} ({} messages)",
        header.zao_version,
        utc(header.start_unix_micros),
        header.protocol_hash,
        schema.messages().len()
    )
    .map_err(io)?;
    let inspector = Inspector::new(schema);
    let mut ok = true;
    let mut shown = 0usize;
    let mut counts: HashMap<String, usize> = HashMap::new();
    loop {
        let record = match reader.next_record() {
            Ok(Some(record)) => record,
            Ok(None) => break,
            Err(e) => {
                writeln!(out, "{e}").map_err(io)?;
                ok = false;
                break;
            }
        };
        if !o.clients.is_empty() && !o.clients.contains(&record.connection) {
            continue;
        }
        let time = record.time.as_secs_f64();
        let who = format!("client {}", record.connection);
        match record.event {
            CaptureEvent::Message {
                flow,
                channel,
                framed,
            } => {
                if !wanted(o, &inspector, framed) {
                    continue;
                }
                let arrow = match flow {
                    Flow::ClientToServer => format!("{who} → server"),
                    Flow::ServerToClient => format!("server → {who}"),
                };
                let name = zao::split_message(framed)
                    .ok()
                    .and_then(|(id, _)| inspector.message(id))
                    .map_or("?", |m| m.name.as_str());
                *counts.entry(name.to_owned()).or_default() += 1;
                let channel = inspector
                    .schema()
                    .channels()
                    .get(usize::from(channel.0))
                    .map_or_else(|| format!("channel {}", channel.0), |c| c.name.clone());
                let head = format!("[{time:12.6}] {arrow:<20} {channel:<10} ");
                if o.annotate {
                    writeln!(out, "{head}{name}").map_err(io)?;
                    ok &= show(o, &inspector, framed, "    ", out)?;
                } else {
                    write!(out, "{head}").map_err(io)?;
                    ok &= show(o, &inspector, framed, "    ", out)?;
                }
            }
            CaptureEvent::Connected { peer } => {
                if !o.messages.is_empty() {
                    continue;
                }
                writeln!(out, "[{time:12.6}] {who} connected from {peer}").map_err(io)?;
            }
            CaptureEvent::Disconnected { reason } => {
                if !o.messages.is_empty() {
                    continue;
                }
                writeln!(out, "[{time:12.6}] {who} disconnected: {reason}").map_err(io)?;
            }
            _ => continue,
        }
        shown += 1;
    }
    let mut counts: Vec<_> = counts.into_iter().collect();
    counts.sort();
    let summary: Vec<String> = counts.iter().map(|(n, c)| format!("{c} {n}")).collect();
    writeln!(
        out,
        "{shown} records shown; messages: {}",
        summary.join(", ")
    )
    .map_err(io)?;
    Ok(ok)
}

fn looks_like_hex(input: &[u8]) -> bool {
    !input.is_empty()
        && input
            .iter()
            .all(|b| b.is_ascii_hexdigit() || b.is_ascii_whitespace())
}

/// One message per non-empty line; bytes may be spaced (`01 07 00`) or not.
fn parse_hex_lines(input: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    let text = std::str::from_utf8(input).map_err(|_| "the hex is not text")?;
    let mut messages = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let digits: Vec<u8> = line.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
        if digits.is_empty() {
            continue;
        }
        let bytes = digits
            .chunks(2)
            .map(|pair| {
                std::str::from_utf8(pair)
                    .ok()
                    .filter(|p| p.len() == 2)
                    .and_then(|p| u8::from_str_radix(p, 16).ok())
            })
            .collect::<Option<Vec<u8>>>()
            .ok_or_else(|| format!("line {}: not hex bytes", n + 1))?;
        messages.push(bytes);
    }
    Ok(messages)
}

fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 3);
    for (i, b) in bytes.iter().enumerate() {
        if i > 0 {
            s.push(' ');
        }
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// `YYYY-MM-DD HH:MM:SS.ffffff UTC` from Unix microseconds (the proleptic
/// Gregorian calendar; days to a civil date by Howard Hinnant's algorithm).
fn utc(micros: u64) -> String {
    if micros == 0 {
        return "at an unknown time".to_owned();
    }
    let secs = micros / 1_000_000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}.{:06} UTC",
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        micros % 1_000_000
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_utc() {
        assert_eq!(utc(1_700_000_000_000_000), "2023-11-14 22:13:20.000000 UTC");
        assert_eq!(utc(951_782_400_000_001), "2000-02-29 00:00:00.000001 UTC");
    }

    #[test]
    fn hex_lines_with_and_without_spaces() {
        assert_eq!(
            parse_hex_lines(b"01 02\n\n0a0B\n").ok(),
            Some(vec![vec![1, 2], vec![10, 11]])
        );
        assert!(parse_hex_lines(b"012").is_err());
    }
}
