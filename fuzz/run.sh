#!/usr/bin/env bash
# Builds every fuzz target and runs each in turn for SECONDS (one fuzzer at a
# time), then prints each target's executions and wall time.
#
#   fuzz/run.sh SECONDS [TARGET...]
#
# Exits non-zero if any target crashed or failed to start; the crashing
# input is in fuzz/artifacts/<target>/ and the log in fuzz/artifacts/<target>.log.
# Environment: FUZZ_SANITIZER (default `address`: with -malloc_limit_mb it
# turns any single allocation over 64 MiB into a failure, which is how these
# runs check "memory stays bounded"; `none` runs about twice as fast).
set -euo pipefail

if [[ $# -lt 1 || ! $1 =~ ^[0-9]+$ ]]; then
    echo "usage: $0 SECONDS [TARGET...]" >&2
    exit 2
fi
seconds=$1
shift

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# cargo-fuzz passes nightly-only flags (-Zsanitizer, -Cpasses=sancov-module);
# our toolchain is stable.
export RUSTC_BOOTSTRAP=1
sanitizer=${FUZZ_SANITIZER:-address}
flags=(--fuzz-dir fuzz --sanitizer "$sanitizer")

if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
fi

cargo fuzz build "${flags[@]}"

if [[ $# -gt 0 ]]; then
    targets=("$@")
else
    mapfile -t targets < <(cargo fuzz list --fuzz-dir fuzz)
fi

# The golden vectors seed the decoder's corpus, and fuzz/seeds/<target>/ (the
# committed seeds, replayed by `cargo test`) seed theirs (copies: the corpus
# is ours to grow).
mkdir -p fuzz/corpus/decode_messages fuzz/artifacts
cp -n assets/golden/*.bin fuzz/corpus/decode_messages/ 2>/dev/null || true
for seeds in fuzz/seeds/*/; do
    target=$(basename "$seeds")
    mkdir -p "fuzz/corpus/$target"
    cp -n "$seeds"* "fuzz/corpus/$target/" 2>/dev/null || true
done

failed=()
summary=()
for target in "${targets[@]}"; do
    mkdir -p "fuzz/corpus/$target" "fuzz/artifacts/$target"
    log="fuzz/artifacts/$target.log"
    echo "== $target: ${seconds}s, log $log"
    start=$(date +%s)
    status=ok
    # -timeout: one input taking over 10 s is a hang. -malloc_limit_mb: no
    # single allocation over 64 MiB (decode budgets are 8 MiB).
    if ! cargo fuzz run "${flags[@]}" "$target" -- \
        -max_total_time="$seconds" -print_final_stats=1 \
        -timeout=10 -malloc_limit_mb=64 -rss_limit_mb=2048 \
        >"$log" 2>&1; then
        status=FAILED
        failed+=("$target")
        grep -E "^(==[0-9]+==ERROR|thread '.*' panicked|SUMMARY|artifact_prefix|Test unit written)" \
            "$log" | head -20 || true
    fi
    wall=$(($(date +%s) - start))
    execs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' | tail -1)
    line="$target: ${execs:-?} executions in ${wall}s ($status)"
    echo "$line"
    summary+=("$line")
done

echo "== summary"
printf '%s\n' "${summary[@]}"
if [[ ${#failed[@]} -gt 0 ]]; then
    echo "crashed or failed: ${failed[*]}" >&2
    exit 1
fi
