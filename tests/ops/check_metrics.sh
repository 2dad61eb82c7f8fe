#!/usr/bin/env bash
# Contract test between the relay binary and docs/METRICS.md (and so the
# alert rules and the dashboard, which check_rules.sh / check_dashboard.sh
# hold to METRICS.md).
#
# Starts RELAY_BINARY on a free loopback port with a database and a broker that
# refuse connections (127.0.0.1:1), waits for /healthz, then checks:
#   - /healthz is 200 and /readyz is not 200 (nothing is reachable);
#   - every outbox_* family it exposes is listed in METRICS.md, with the same type;
#   - every metric listed in METRICS.md is exposed (the service has a
#     value_format, for the outbox_schema_* ones), except
#     outbox_events_published_total, whose topic label values only exist after
#     traffic;
#   - outbox_publish_failures_total has a series for exactly the reasons of
#     METRICS.md's reason table, from the start;
#   - outbox_database_up, outbox_kafka_up and outbox_wakeup_binlog_up (the
#     service has `wakeup: binlog`) are 0 (what the alerts watch);
#   - the gauges read from the database (backlog, oldest age, DEAD, blocked
#     aggregates, unknown-status rows, last poll) have no sample: the
#     database was never reachable, and a 0 would read as "empty table"
#     (docs/METRICS.md: no false zeros; OutboxPollingStalled relies on it);
#   - `promtool check metrics` finds no problem in the exposition (if installed).
# The relay is stopped with SIGTERM and must exit 0 within 45 s (README "Guarantees").
#
# Usage: tests/ops/check_metrics.sh RELAY_BINARY     e.g. build/outbox-relay
# Needs python3 and curl. Exit 0 ok, 1 failure, 77 no binary given.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
relay="${1:-}"
metrics_md="$root/docs/METRICS.md"

if [[ -z "$relay" ]]; then
  echo "SKIP: no relay binary given (usage: $0 build/outbox-relay)"
  exit 77
fi
if [[ ! -x "$relay" ]]; then
  echo "check_metrics: $relay is not an executable file" >&2
  exit 1
fi
for tool in python3 curl; do
  command -v "$tool" >/dev/null 2>&1 || { echo "check_metrics: $tool is required" >&2; exit 1; }
done

tmp="$(mktemp -d)"
pid=""
cleanup() {
  if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
cat > "$tmp/config.yaml" <<YAML
instance_id: check-metrics
http:
  listen: 127.0.0.1:$port
log:
  level: error
  format: text
kafka:
  bootstrap_servers: 127.0.0.1:1
  schema_registry: {url: "http://127.0.0.1:1"}
services:
  - name: order
    mysql:
      host: 127.0.0.1
      port: 1
      user: relay
      password_env: CHECK_METRICS_DB_PASSWORD
      database: order_db
    wakeup: binlog          # exports outbox_wakeup_binlog_up (0: no server)
    value_format: avro      # exports the outbox_schema_* metrics
    retention:
      sent_days: 7
YAML

CHECK_METRICS_DB_PASSWORD=unused "$relay" run --config "$tmp/config.yaml" >"$tmp/relay.log" 2>&1 &
pid=$!

fail=0
base="http://127.0.0.1:$port"
ready=0
for _ in $(seq 1 100); do           # up to 10 s for the listener
  if ! kill -0 "$pid" 2>/dev/null; then break; fi
  if [[ "$(curl -s -o /dev/null -w '%{http_code}' "$base/healthz")" == 200 ]]; then ready=1; break; fi
  sleep 0.1
done
if [[ $ready -ne 1 ]]; then
  echo "FAIL  /healthz never answered 200 on $base"
  sed 's/^/      /' "$tmp/relay.log" | tail -n 20
  exit 1
fi
echo "ok    /healthz 200"

code="$(curl -s -o /dev/null -w '%{http_code}' "$base/readyz")"
if [[ "$code" == 200 ]]; then
  echo "FAIL  /readyz is 200 although no database or broker is reachable"; fail=1
else
  echo "ok    /readyz $code while database and broker are unreachable"
fi

# The up gauges change when the first poll fails and librdkafka reports all
# brokers down: wait up to 10 s for both to read 0, then judge what is there.
for _ in $(seq 1 100); do
  curl -s "$base/metrics" >"$tmp/metrics.txt"
  grep -Eq '^outbox_database_up\{[^}]*\} 0$' "$tmp/metrics.txt" \
    && grep -Eq '^outbox_kafka_up 0$' "$tmp/metrics.txt" && break
  sleep 0.1
done

python3 - "$tmp/metrics.txt" "$metrics_md" "$here" <<'PY' || fail=1
import re, sys
expo, md, here = sys.argv[1], sys.argv[2], sys.argv[3]
types, samples, reasons = {}, {}, {}
for line in open(expo, encoding="utf-8"):
    m = re.match(r'outbox_publish_failures_total\{[^}]*reason="([^"]*)"[^}]*\}\s+(\S+)', line)
    if m:
        reasons[m.group(1)] = float(m.group(2))
    m = re.match(r"# TYPE (\S+) (\S+)", line)
    if m:
        types[m.group(1)] = m.group(2)
        continue
    if line.startswith("#") or not line.strip():
        continue
    name, value = re.match(r"([A-Za-z_:][\w:]*)(?:\{[^}]*\})?\s+(\S+)", line).groups()
    samples.setdefault(name, []).append(float(value))

sys.path.insert(0, here)
import promql_names  # noqa: E402  (METRICS.md's tables, read as the other checks read them)
documented = {name: cells[1] for name, cells in promql_names.documented_names(md, "metric").items()
              if len(cells) > 1}
documented_reasons = set(promql_names.documented_names(md, "reason"))

errors = []
for name, t in sorted(types.items()):
    if not name.startswith("outbox_"):
        continue
    if name not in documented:
        errors.append(f"{name} ({t}) is exposed but not in METRICS.md")
    elif documented[name] != t:
        errors.append(f"{name} is a {t}, METRICS.md says {documented[name]}")
# Read from the database: no sample before the first successful read (their
# family may still be announced by # HELP / # TYPE lines).
FROM_DATABASE = {"outbox_backlog_events", "outbox_oldest_unsent_age_seconds", "outbox_dead_events",
                 "outbox_blocked_aggregates", "outbox_unknown_status_rows",
                 "outbox_last_poll_timestamp_seconds"}
LAZY = {"outbox_events_published_total"} | FROM_DATABASE
for name in sorted(FROM_DATABASE):
    if samples.get(name):
        errors.append(f"{name} has the sample(s) {samples[name]} although the database was never "
                      f"reachable; want none (a 0 reads as an empty table)")
# Every failure reason is exported at 0 from the start (so that rate() and
# increase() count a reason's first failures), and is one METRICS.md lists.
if set(reasons) != documented_reasons:
    errors.append(f"outbox_publish_failures_total reasons exposed {sorted(reasons)}, "
                  f"METRICS.md lists {sorted(documented_reasons)}")
for name in sorted(set(documented) - set(types) - LAZY):
    errors.append(f"{name} is in METRICS.md but not exposed")
# A gauge read from the database has no sample before its first successful
# read: a 0 would read as an empty table (METRICS.md).
for name in ("outbox_database_up", "outbox_kafka_up", "outbox_wakeup_binlog_up"):
    if samples.get(name) and any(v != 0 for v in samples[name]):
        errors.append(f"{name} is {samples[name]} 10 s after start with nothing reachable, want 0")
    if not samples.get(name):
        errors.append(f"{name} has no sample")
for e in errors:
    print(f"FAIL  {e}")
print(f"{'ok   ' if not errors else 'FAIL '} {len([n for n in types if n.startswith('outbox_')])} outbox_* families exposed, "
      f"{len(documented)} in METRICS.md")
sys.exit(1 if errors else 0)
PY

if command -v promtool >/dev/null 2>&1; then
  if lint="$(promtool check metrics <"$tmp/metrics.txt" 2>&1)"; then
    echo "ok    promtool check metrics"
  else
    echo "FAIL  promtool check metrics:"; sed 's/^/      /' <<<"$lint"; fail=1
  fi
fi

# Graceful shutdown: SIGTERM, exit 0 within the unit's TimeoutStopSec.
kill -TERM "$pid"
rc=""
for _ in $(seq 1 450); do
  if ! kill -0 "$pid" 2>/dev/null; then wait "$pid"; rc=$?; break; fi
  sleep 0.1
done
if [[ -z "$rc" ]]; then
  echo "FAIL  relay still running 45 s after SIGTERM"; fail=1
elif [[ "$rc" != 0 ]]; then
  echo "FAIL  relay exited $rc after SIGTERM, want 0"; fail=1
else
  echo "ok    SIGTERM: exit 0"
fi
pid=""

if [[ $fail -ne 0 ]]; then
  echo "check_metrics: FAILED (relay log: last lines below)"
  tail -n 20 "$tmp/relay.log"
  exit 1
fi
echo "check_metrics: OK"
