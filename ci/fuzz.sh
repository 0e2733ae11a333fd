#!/usr/bin/env bash
# Fuzzes the readers of what crosses the runner protocol, each for a bounded time (ci/test.sh runs it):
#   * the kit's job reader (native/kit/fuzz/fuzz_zjson.c: zjson and the job validation), a libFuzzer target built
#     with Debian's clang -fsanitize=fuzzer,address,undefined, from the committed corpus native/kit/fuzz/corpus;
#   * the host's frames.csv and result.json readers (tests/fuzz/test_reader_fuzz.py), with fresh Hypothesis
#     examples beyond the fixed ones the test suite draws.
#
#   bash ci/fuzz.sh [SECONDS]      SECONDS per target (default 20; ZBENCH_FUZZ_SECONDS too)
#
# Fails on a crash, a sanitizer report or a broken invariant; libFuzzer leaves the input that did it in
# build/fuzz/ (crash-*), to be added to the corpus and made a regression test. New inputs the fuzzer finds go to
# build/fuzz/corpus, not into the committed corpus: it stays small and reviewed.
set -euo pipefail
checkout="$(cd "$(dirname "$0")/.." && pwd)"
seconds="${1:-${ZBENCH_FUZZ_SECONDS:-20}}"
out="$checkout/build/fuzz"
kit="$checkout/native/kit"
clang="$(command -v clang-14 || command -v clang || true)"
[ -n "$clang" ] || { echo "fuzz: clang is not installed (apt-get install clang-14)" >&2; exit 1; }
mkdir -p "$out/corpus"

# The job reader: zjson.c and zbench_kit.c's job validation, with the platform layer zbench_kit.c links against.
"$clang" -std=c99 -D_POSIX_C_SOURCE=200809L -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
    -I"$kit" -o "$out/fuzz_zjson" "$kit/fuzz/fuzz_zjson.c" "$kit/zjson.c" "$kit/zbench_kit.c" \
    "$kit/platform_linux.c" "$kit/platform_procfs.c" -lm
echo "fuzz: zjson and the job reader for $seconds s"
# -rss_limit_mb: a reader that allocates without bound is a finding too. -timeout: one input taking over 10 s
# (quadratic parsing) is one as well.
status=0
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 "$out/fuzz_zjson" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=1024 -max_len=8192 -dict="$kit/fuzz/json.dict" -artifact_prefix="$out/" -print_final_stats=1 \
    "$out/corpus" "$kit/fuzz/corpus" > "$out/fuzz_zjson.log" 2>&1 || status=$?
# The log's summary (the whole log stays in build/fuzz/fuzz_zjson.log).
grep -E "^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::peak_rss_mb|SUMMARY)|(crash|leak|timeout|oom)-[0-9a-f]|ERROR" \
    "$out/fuzz_zjson.log" || true
[ "$status" -eq 0 ] || { tail -40 "$out/fuzz_zjson.log" >&2; echo "fuzz: the job reader failed (input in $out/)" >&2; exit 1; }

# The host's readers: fresh Hypothesis examples for about SECONDS each (two tests a reader: any bytes, and
# input shaped like the file), beyond the fixed ones the test suite draws.
echo "fuzz: frames.csv and result.json readers for about $seconds s each"
ZBENCH_FUZZ_SECONDS=$((seconds / 2)) python3 -m pytest -q -s -p no:cacheprovider "$checkout/tests/fuzz/test_reader_fuzz.py"
