//! The broadcast section of BENCHMARKS.md, from a run's figures.

use std::fmt::Write as _;
use std::time::Duration;

use zao_perf::{fmt_us, machine, nice, percentile, ratio, today, us};

use super::{
    Cell, HZ, MIN_DELIVERY, Memory, Run, SCALE_RUN, ScaleRow, SlowResult, TARGET, TICK_BUDGET,
    Variant, limits,
};

/// Everything one run of the tool measured.
pub(super) struct Report<'a> {
    /// The cost table of each run (`--runs`), the same cells in each.
    pub(super) reps: &'a [Vec<Cell>],
    pub(super) scale: &'a [ScaleRow],
    pub(super) memory: &'a Memory,
    pub(super) slow: &'a SlowResult,
    pub(super) rounds: usize,
    pub(super) round: Duration,
    pub(super) seconds: f64,
    /// Load averages before and after.
    pub(super) load: (String, String),
}

impl Report<'_> {
    pub(super) fn to_markdown(&self) -> String {
        let mut w = String::new();
        self.intro(&mut w);
        self.costs(&mut w);
        self.scale(&mut w);
        self.memory(&mut w);
        w
    }

    fn intro(&self, w: &mut String) {
        writeln!(w, "## Broadcast: server cost per tick\n").unwrap();
        writeln!(
            w,
            "Written by `cargo run --release -p zao-perf --bin broadcast` on {}, in {:.0} s; \
             load average {} before, {} after (other builds share the machine).\n",
            today(),
            self.seconds,
            self.load.0,
            self.load.1
        )
        .unwrap();
        writeln!(
            w,
            "- Machine: {}; run at nice {}. The server, its clients and the tick thread \
             share these cores in one process over loopback, so the clients' decryption \
             competes with the server for CPU.",
            machine(),
            nice().unwrap_or(0)
        )
        .unwrap();
        writeln!(
            w,
            "- Each tick at 60 Hz sends `samples::world_snapshot(players)` to every \
             client: (a) `send_snapshot(Target::All)`, chunks encoded once; (b) \
             `send_snapshot(Target::One(c))` per client, chunks encoded per client; \
             (c) a bare quinn server with zao's TLS and transport settings \
             (`Certificate::quinn_server_config`) sending the very datagrams zao \
             sends, encoded each tick by `zao::proto::encode_chunks` (the encoder \
             `send_snapshot` calls), client by client as zao sends them. Clients are \
             `zao_perf::Fleet`: raw quinn connections on one 2-thread tokio runtime, \
             each on its own socket, counting the datagrams they read; towards zao \
             they complete its handshake and send its heartbeat."
        )
        .unwrap();
        writeln!(
            w,
            "- **server CPU** is the tick thread plus the sending server's runtime \
             threads (zao's: the threads `Server::start` started; the bare server's: \
             its runtime of as many workers), from `/proc/self/task/*/schedstat`; \
             **process CPU** is every thread: the clients and the idle server's \
             keep-alives too. \
             **send** is the wall time of the tick's send call(s) (for (c), the \
             encode and the `send_datagram` calls); **tick** adds polling events and \
             `flush`. The variants of a cell take turns over {} round(s) of {:.1} s \
             each; percentiles pool the rounds.\n",
            self.rounds,
            self.round.as_secs_f64()
        )
        .unwrap();
    }

    fn costs(&self, w: &mut String) {
        let Some(last) = self.reps.last() else {
            return;
        };
        writeln!(w, "### Cost per tick\n").unwrap();
        writeln!(
            w,
            "The last of {} run(s) of the table; the comparison below takes each \
             cell's median over all of them.\n",
            self.reps.len()
        )
        .unwrap();
        writeln!(
            w,
            "| clients | players | chunks | variant | server CPU µs/tick | process CPU µs/tick \
             | send p50 µs | send p99 µs | tick p99 µs | delivered |"
        )
        .unwrap();
        writeln!(w, "|--:|--:|--:|---|--:|--:|--:|--:|--:|--:|").unwrap();
        for cell in last {
            for (v, run) in &cell.runs {
                writeln!(
                    w,
                    "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1} % |",
                    cell.clients,
                    cell.players,
                    run.chunks,
                    v.label(),
                    fmt_us(run.server_us()),
                    fmt_us(run.process_us()),
                    us(percentile(&run.sends, 0.5)),
                    us(percentile(&run.sends, 0.99)),
                    us(percentile(&run.ticks, 0.99)),
                    run.delivery() * 100.0
                )
                .unwrap();
            }
        }
        writeln!(
            w,
            "\n### Zao over bare quinn (target: (a)/(c) server CPU ≤ {TARGET}×)\n"
        )
        .unwrap();
        writeln!(
            w,
            "| clients | players | a/c server CPU, median (each run) | b/c server CPU \
             | a/c process CPU | b/c process CPU | a/c send p50 | b/c send p50 \
             | a/c send p99 | target |"
        )
        .unwrap();
        writeln!(w, "|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|").unwrap();
        let (mut held, mut saturated) = (0, 0);
        for (i, cell) in last.iter().enumerate() {
            // This cell in every run: the median a/c server CPU decides.
            let each: Vec<&Cell> = self.reps.iter().filter_map(|r| r.get(i)).collect();
            let mut ratios: Vec<f64> = each
                .iter()
                .map(|c| c.run(Variant::Fanout).server_us() / c.run(Variant::Bare).server_us())
                .collect();
            let listed: Vec<String> = ratios.iter().map(|r| format!("{r:.2}")).collect();
            ratios.sort_by(f64::total_cmp);
            let median = ratios.get(ratios.len() / 2).copied().unwrap_or(f64::NAN);
            let (a, b, c) = (
                cell.run(Variant::Fanout),
                cell.run(Variant::PerClient),
                cell.run(Variant::Bare),
            );
            // Datagrams lost at the clients mean the machine, not the
            // sender, was the limit: the CPU figures no longer compare.
            let verdict = if each.iter().any(|c| {
                Variant::ALL
                    .iter()
                    .any(|v| c.run(*v).delivery() < MIN_DELIVERY)
            }) {
                saturated += 1;
                "saturated"
            } else if median <= TARGET {
                held += 1;
                "holds"
            } else {
                "MISSES"
            };
            let p = |r: &Run, q| percentile(&r.sends, q).as_secs_f64();
            writeln!(
                w,
                "| {} | {} | {median:.2}× ({}) | {} | {} | {} | {} | {} | {} | {} |",
                cell.clients,
                cell.players,
                listed.join(", "),
                ratio(b.server_us(), c.server_us()),
                ratio(a.process_us(), c.process_us()),
                ratio(b.process_us(), c.process_us()),
                ratio(p(a, 0.5), p(c, 0.5)),
                ratio(p(b, 0.5), p(c, 0.5)),
                ratio(p(a, 0.99), p(c, 0.99)),
                verdict
            )
            .unwrap();
        }
        writeln!(
            w,
            "\n(a)/(c) ≤ {TARGET}× as the median of {} run(s): {held} of {} compared \
             cells hold. Saturated (a variant delivered under {:.0} % in some run: the \
             machine was the limit, and the ratios compare nothing): {saturated}.\n",
            self.reps.len(),
            last.len() - saturated,
            MIN_DELIVERY * 100.0
        )
        .unwrap();
    }

    fn scale(&self, w: &mut String) {
        if self.scale.is_empty() {
            return;
        }
        writeln!(w, "### Scale: one server at 60 Hz\n").unwrap();
        writeln!(
            w,
            "Fan-out (a) only, {:.0} s per row; each clients count runs up the \
             players until a row misses. Sustained: tick p99 under {} ms and at \
             least {:.0} % of datagrams delivered.\n",
            SCALE_RUN.as_secs_f64(),
            TICK_BUDGET.as_millis(),
            MIN_DELIVERY * 100.0
        )
        .unwrap();
        writeln!(
            w,
            "| clients | players | chunks | datagrams/s | server CPU µs/tick | tick p50 µs \
             | tick p99 µs | delivered | sustained |"
        )
        .unwrap();
        writeln!(w, "|--:|--:|--:|--:|--:|--:|--:|--:|---|").unwrap();
        for row in self.scale {
            let r = &row.run;
            writeln!(
                w,
                "| {} | {} | {} | {:.0} | {} | {} | {} | {:.1} % | {} |",
                row.clients,
                row.players,
                r.chunks,
                (row.clients * r.chunks) as f64 * HZ,
                fmt_us(r.server_us()),
                us(percentile(&r.ticks, 0.5)),
                us(percentile(&r.ticks, 0.99)),
                r.delivery() * 100.0,
                if r.sustained() { "yes" } else { "no" }
            )
            .unwrap();
        }
        // Largest by datagrams per tick: clients × chunks.
        let best = self
            .scale
            .iter()
            .filter(|r| r.run.sustained())
            .max_by_key(|r| (r.clients * r.run.chunks, r.clients));
        match best {
            Some(b) => writeln!(
                w,
                "\n**Largest sustained: {} clients × {} players at 60 Hz** ({} chunks, \
                 {:.0} datagrams/s; tick p99 {} µs, {:.1} % delivered), on the cores \
                 above shared with the clients.\n",
                b.clients,
                b.players,
                b.run.chunks,
                (b.clients * b.run.chunks) as f64 * HZ,
                us(percentile(&b.run.ticks, 0.99)),
                b.run.delivery() * 100.0
            )
            .unwrap(),
            None => writeln!(w, "\nNo row sustained 60 Hz.\n").unwrap(),
        }
    }

    fn memory(&self, w: &mut String) {
        let m = self.memory;
        writeln!(w, "### Memory per connected client\n").unwrap();
        writeln!(
            w,
            "RSS growth while {} clients connect, divided by them; each fleet's \
             clients share one socket, and both ends of every connection live in \
             this process, so a figure is the server's share plus the client's \
             quinn connection.\n",
            m.clients
        )
        .unwrap();
        writeln!(w, "| | KiB per client |\n|---|--:|").unwrap();
        writeln!(
            w,
            "| zao server + raw client, connected | {:.0} |",
            m.zao_connect
        )
        .unwrap();
        writeln!(
            w,
            "| bare quinn server + raw client, connected | {:.0} |",
            m.bare_connect
        )
        .unwrap();
        writeln!(
            w,
            "| zao's own share (the difference) | {:.0} |",
            m.zao_connect - m.bare_connect
        )
        .unwrap();
        writeln!(
            w,
            "| zao, after 2 s of 1024-player snapshots ({:.1} % delivered: one client \
             socket cannot read them all, so the server's queues fill) | {:.0} |",
            m.run_delivery * 100.0,
            m.zao_after_run
        )
        .unwrap();
        writeln!(
            w,
            "| zao's limit per connection (`Limits::worst_case_bytes_per_connection`) | {} |",
            limits().worst_case_bytes_per_connection() / 1024
        )
        .unwrap();
        self.slow_clients(w);
    }

    fn slow_clients(&self, w: &mut String) {
        let slow = self.slow;
        let at = |t: f64| {
            slow.rss_kib
                .iter()
                .min_by(|a, b| (a.0 - t).abs().total_cmp(&(b.0 - t).abs()))
                .unwrap()
        };
        let (start, one, last) = (slow.rss_kib[0], at(1.0), slow.rss_kib.last().unwrap());
        let chunk_kib = slow.snapshot_bytes as f64 / slow.chunks.max(1) as f64 / 1024.0;
        let per = |kib: u64| kib as f64 / slow.stalled as f64;
        writeln!(
            w,
            "\n**Slow clients.** {} clients stop reading their sockets (their runtime \
             stops: no reads, no ACKs) while the server sends 1024-player snapshots \
             ({} B in {} chunks) to them and to one healthy client for {:.0} s. Per \
             stalled client the server was handed {} chunk datagrams (~{:.0} KiB) \
             and put {:.0} KiB on the wire before the congestion window closed; the \
             rest was dropped oldest-first within the {} KiB datagram send buffer \
             (`Limits::datagram_send_buffer`; the `Bytes` it holds are shared with \
             every other client's). RSS: {} KiB before sending, {} KiB at {:.1} s, \
             {} KiB at {:.1} s: {:+.0} KiB per stalled client in the first second, \
             {:+.0} KiB after it. {} of {} stalled clients still connected; the \
             healthy client got {:.1} % of its chunks.\n",
            slow.stalled,
            slow.snapshot_bytes,
            slow.chunks,
            slow.seconds,
            slow.queued_per_client,
            slow.queued_per_client as f64 * chunk_kib,
            slow.sent_bytes_per_client as f64 / 1024.0,
            limits().datagram_send_buffer / 1024,
            start.1,
            one.1,
            one.0,
            last.1,
            last.0,
            per(one.1.saturating_sub(start.1)),
            per(last.1.saturating_sub(one.1)),
            slow.still_connected,
            slow.stalled,
            slow.healthy_delivery * 100.0
        )
        .unwrap();
        let samples: Vec<String> = slow
            .rss_kib
            .iter()
            .map(|(t, k)| format!("{t:.1} s: {k}"))
            .collect();
        writeln!(w, "RSS samples (KiB): {}.", samples.join(", ")).unwrap();
    }
}
