#!/usr/bin/env bash
# ctest "bench: quick smoke": runs outbox-bench --quick against the MariaDB
# that scripts/test started (OUTBOX_TEST_MYSQL_*), so a change that breaks the
# benchmark is noticed. It checks that the benchmark completes and reports
# every target; it asserts nothing about the figures (they are noise at this
# size). It also compares the build with itself (--compare-relay), so the
# comparison's runs, verdicts and its part of docs/BENCHMARKS.md (written into
# a copy) are exercised. Usage: tests/bench/smoke.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
src=$2
out=$(mktemp -d "${TMPDIR:-/tmp}/outbox-bench-smoke.XXXXXX")
trap 'rm -rf "$out"' EXIT
cp "$src/docs/BENCHMARKS.md" "$out/doc.md"
"$build/bench/outbox-bench" --quick --out "$out" --doc-template "$src/bench/BENCHMARKS.md.in" \
  --database outbox_bench_smoke --compare-relay "$build/outbox-relay" --doc "$out/doc.md" \
  >"$out/table.md" 2>"$out/bench.log" || {
  echo "outbox-bench failed:"; tail -n 40 "$out/bench.log"; exit 1; }
cat "$out/table.md"
fail=0
# The comparison: a verdict for each drain of the drain stage (this build
# and the other), and, with outbox-load, for each wakeup rate and mode.
grep -Eq '^\| drain of .*ordering none, 1 relay.*\| (PASS|MISS) \|$' "$out/table.md" ||
  { echo "no drain comparison"; fail=1; }
grep -Eq '^[0-9]+ of [0-9]+ rows PASS\.$' "$out/table.md" || { echo "no comparison summary"; fail=1; }
grep -q '"compare"' "$out/results.json" || { echo "no comparison in results.json"; fail=1; }
# --doc got the comparison part and nothing else: outside its markers the
# copy is unchanged.
outside() { sed '/<!-- compare: begin -->/,/<!-- compare: end -->/d' "$1"; }
diff <(outside "$src/docs/BENCHMARKS.md") <(outside "$out/doc.md") >/dev/null ||
  { echo "--doc changed outside its comparison part"; fail=1; }
grep -q 'rows PASS' "$out/doc.md" || { echo "--doc has no comparison"; fail=1; }
# Each argument is in the table, or the smoke test fails.
expect_rows() {
  local what
  for what in "$@"; do
    grep -q "$what" "$out/table.md" || { echo "missing from the table: $what"; fail=1; }
  done
}
expect_rows "database limit" "ordering none, 1 relay" "per_aggregate, 3 relays" \
  "idle statements/s" "RSS with 10 idle services" "SENT rows" \
  "services, one relay, wakeup binlog: idle statements/s" \
  "wakeup binlog: replication connections" \
  "fleet vs every relay serving all: connections" \
  "fleet vs every relay serving all: idle statements/s" \
  "kill -9 of a member -> its services publish again" \
  "drain, value_format json_schema vs bytes" "drain, value_format avro vs bytes"
if [[ -x "$build/outbox-load" ]]; then
  grep -q "latency insert -> broker, p50" "$out/table.md" || { echo "no latency row"; fail=1; }
  grep -E "latency insert -> broker, p50.*\| n/a \|" "$out/table.md" && { echo "latency not measured"; fail=1; }
  expect_rows "wakeup binlog: p99 insert -> broker" "drain, wakeup binlog vs poll" \
    "idle statements/s, 1 service, wakeup binlog" \
    "10 events/s, wakeup poll: insert -> broker p50 / p99" \
    "1,000 events/s, wakeup binlog: insert -> broker p50 / p99" \
    "wakeup binlog, default ordering, 1 relay, batch"
  [[ -s "$out/wakeup.dat" ]] || { echo "missing wakeup.dat"; fail=1; }
  # The latency split at the writer's commit (outbox-load --commit-times)
  # found its events: some run has a p99 that is not 0.
  grep -Eq '"commit_create_p99_ms": -?(0\.[0-9]*[1-9]|[1-9])' "$out/results.json" ||
    { echo "no commit -> CreateTime split in results.json"; fail=1; }
fi
# The fleet's kill: every moved database published again (a number, not "-").
grep -Eq 'kill -9 of a member -> its services publish again.*\| [0-9.]+ / [0-9.]+ s \|' \
  "$out/table.md" || { echo "no takeover time"; fail=1; }
grep -E "fleet: (kill|the services)" "$out/BENCHMARKS.md" && { echo "the fleet stage noted a failure"; fail=1; }
for f in results.json throughput.dat headline.dat rss.dat BENCHMARKS.md; do
  [[ -s "$out/$f" ]] || { echo "missing $f"; fail=1; }
done
exit $fail
