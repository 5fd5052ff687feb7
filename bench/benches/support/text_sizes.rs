//! The text forms of each benchmark case beside its binary size: the
//! escaped size (base64 of the wire bytes, for places that carry only text:
//! JSON fields, URLs, logs) and the inspector's readable form, as
//! text-format suites report them. Its own module so that the report tool
//! calls it once (`section()`) and nothing else depends on it.

use std::fmt::Write as _;

use zao::inspect::{Inspector, TextStyle};
use zao_messages::samples;

/// One case: its name, its framed message, its wire bytes (the body, as in
/// the timing tables).
struct Row {
    name: &'static str,
    framed: Vec<u8>,
}

fn framed<M: zao::NetMessage>(m: &M) -> Vec<u8> {
    let mut buf = vec![0u8; zao::message_len(m)];
    let n = zao::encode_message(m, &mut buf).unwrap_or(0);
    buf.truncate(n);
    buf
}

/// The benchmark cases (bench/benches/support/cases.rs `KINDS`), from the same
/// sample values.
fn rows() -> Vec<Row> {
    vec![
        Row {
            name: "PlayerMoved",
            framed: framed(&samples::player_moved()),
        },
        Row {
            name: "PlayerInput",
            framed: framed(&samples::player_input()),
        },
        Row {
            name: "SpawnEntity",
            framed: framed(&samples::spawn_entity()),
        },
        Row {
            name: "WorldSnapshot(32)",
            framed: framed(&samples::world_snapshot(32)),
        },
        Row {
            name: "WorldSnapshot(1024)",
            framed: framed(&samples::world_snapshot(1024)),
        },
        Row {
            name: "Inventory(128)",
            framed: framed(&samples::inventory(128)),
        },
    ]
}

/// Padded base64 (RFC 4648) of `n` bytes: 4 characters per 3 bytes, the
/// last group padded.
pub(crate) fn base64_len(n: usize) -> usize {
    n.div_ceil(3) * 4
}

/// The "Text forms" section of BENCHMARKS.md.
pub(crate) fn section() -> String {
    let inspector = Inspector::from_protocol(&zao_messages::protocol());
    let mut md = String::from("## Text forms\n\n");
    md.push_str(
        "Where a message must travel as text, its size: base64 of the wire bytes \
         (what a JSON field or a log line carries) and the inspector's readable form \
         (`zao::inspect`, docs/INSPECT.md; compact, and pretty with one player or slot \
         per line), beside the binary wire bytes of the tables above. The readable \
         form is the whole message (its name stands for the id) and reads back to \
         the same bytes. Sizes only, no timing: the same in every run.\n\n",
    );
    md.push_str(
        "| case | wire bytes | base64 | ratio | readable (compact) | ratio | readable (pretty) | ratio |\n\
         |---|--:|--:|--:|--:|--:|--:|--:|\n",
    );
    for row in rows() {
        let body = row.framed.len().saturating_sub(1);
        let text = |style| {
            inspector
                .to_text_styled(&row.framed, style)
                .map_or(0, |t| t.len())
        };
        let (compact, pretty) = (text(TextStyle::Compact), text(TextStyle::Pretty));
        let ratio = |n: usize| format!("{:.2}×", n as f64 / body as f64);
        let _ = writeln!(
            md,
            "| {} | {body} | {} | {} | {compact} | {} | {pretty} | {} |",
            row.name,
            base64_len(body),
            ratio(base64_len(body)),
            ratio(compact),
            ratio(pretty),
        );
    }
    md.push('\n');
    md
}
