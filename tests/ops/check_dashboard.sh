#!/usr/bin/env bash
# Checks the Grafana dashboard deploy/grafana/outbox-relay.json:
#   - it is valid JSON with unique panel ids, a schemaVersion, the
#     DS_PROMETHEUS datasource variable and the variables cluster, namespace,
#     job (for a Prometheus shared by namespaces and clusters), service and
#     instance; service and instance come from outbox_database_up, which
#     every service exports from the start (the table gauges have no sample
#     before the first successful read, so a service whose database was never
#     reachable would be missing from a list built on them);
#   - every outbox_* selector filters on $cluster, $namespace and $job;
#   - every metric of docs/METRICS.md's table has a panel;
#   - every panel over a gauge read from the database says what no value
#     means (noValue), and a panel lists the services not read yet;
#   - every panel and target uses the ${DS_PROMETHEUS} datasource;
#   - every metric it queries (histogram _bucket/_sum/_count counted as the
#     histogram) is listed in docs/METRICS.md;
#   - if promtool is installed, every query parses as PromQL (Grafana
#     variables replaced by neutral values).
#
# Usage: tests/ops/check_dashboard.sh [DASHBOARD.json [METRICS.md]]
# Needs python3 (standard library only). Exit 0 ok, 1 failure.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$here/lib.sh"  # root, tmp, fail, need
dashboard="${1:-$root/deploy/grafana/outbox-relay.json}"
metrics_md="${2:-$root/docs/METRICS.md}"
need python3 "check_dashboard: python3 is required (apt-get install -y python3)"

echo "== structure of $dashboard"
python3 - "$dashboard" "$metrics_md" "$here" <<'PY' || fail=1
import json, re, sys
path, metrics_md, here = sys.argv[1], sys.argv[2], sys.argv[3]
try:
    with open(path, encoding="utf-8") as f:
        d = json.load(f)
except (OSError, ValueError) as e:
    sys.exit(f"{path}: not valid JSON: {e}")
errors = []
if not isinstance(d.get("schemaVersion"), int):
    errors.append("schemaVersion missing")
if not d.get("uid") or not d.get("title"):
    errors.append("uid and title are required")
variables = {v.get("name"): v for v in d.get("templating", {}).get("list", [])}
ds = variables.get("DS_PROMETHEUS")
if not ds or ds.get("type") != "datasource" or ds.get("query") != "prometheus":
    errors.append("templating needs a datasource variable DS_PROMETHEUS of type prometheus")
def var_query(name):
    v = variables.get(name)
    q = v.get("query") if v else None
    return (q.get("query") if isinstance(q, dict) else q) or ""
for name in ("cluster", "namespace", "job"):
    if not re.search(rf"label_values\([^)]*,\s*{name}\)", var_query(name)):
        errors.append(f"templating needs a variable {name} = label_values(..., {name})")
for name in ("service", "instance"):
    if not re.search(rf"label_values\(outbox_database_up\{{[^}}]*\}}, {name}\)", var_query(name)):
        errors.append(f"variable {name} must list label_values(outbox_database_up{{...}}, {name}): a "
                      f"series every service has from the start (got {var_query(name)!r})")
for name in ("cluster", "namespace", "job", "service", "instance"):
    v = variables.get(name) or {}
    if not (v.get("includeAll") and v.get("allValue") == ".*"):
        errors.append(f"variable {name} needs includeAll with allValue .* (matches a missing label too)")
FROM_DATABASE = {"outbox_backlog_events", "outbox_oldest_unsent_age_seconds", "outbox_dead_events",
                 "outbox_blocked_aggregates", "outbox_unknown_status_rows"}
sys.path.insert(0, here)
import promql_names  # noqa: E402  (METRICS.md's tables, read as the other checks read them)
documented = promql_names.documented_metrics(metrics_md)
queried = set()
never_read_panel = False

def panels(ps):
    for p in ps:
        yield p
        yield from panels(p.get("panels", []))

ids = {}
n = 0
for p in panels(d.get("panels", [])):
    n += 1
    pid = p.get("id")
    if pid in ids:
        errors.append(f"panel id {pid} used by {ids[pid]!r} and {p.get('title')!r}")
    ids[pid] = p.get("title")
    if p.get("type") == "row":
        continue
    for obj in [p] + list(p.get("targets", [])):
        uid = (obj.get("datasource") or {}).get("uid")
        if uid != "${DS_PROMETHEUS}":
            errors.append(f"panel {p.get('title')!r}: datasource uid {uid!r}, want ${{DS_PROMETHEUS}}")
    if not p.get("targets"):
        errors.append(f"panel {p.get('title')!r} has no query")
    exprs = [t.get("expr", "") for t in p.get("targets", [])]
    for e in exprs:
        for m in re.finditer(r"\b(outbox_[a-z_]+)(\{[^}]*\})?", e):
            queried.add(re.sub(r"_(bucket|sum|count)$", "", m.group(1)))
            for want in ('cluster=~"$cluster"', 'namespace=~"$namespace"', 'job=~"$job"'):
                if want not in (m.group(2) or ""):
                    errors.append(f"panel {p.get('title')!r}: {m.group(1)} does not filter on {want}")
        if re.search(r"unless on \([^)]*\) outbox_last_poll_timestamp_seconds", e):
            never_read_panel = True
    if any(n in e for e in exprs for n in FROM_DATABASE) and p.get("type") in ("stat", "timeseries"):
        if not (p.get("fieldConfig", {}).get("defaults", {}).get("noValue")):
            errors.append(f"panel {p.get('title')!r} shows a gauge read from the database but does not "
                          f"say what no value means (fieldConfig.defaults.noValue)")
    gp = p.get("gridPos", {})
    if gp.get("x", 0) + gp.get("w", 0) > 24:
        errors.append(f"panel {p.get('title')!r} is wider than the grid")
for name in sorted(documented - queried):
    errors.append(f"{name} (docs/METRICS.md) has no panel")
if not never_read_panel:
    errors.append("no panel lists the services not read yet (outbox_database_up unless on (...) "
                  "outbox_last_poll_timestamp_seconds)")
for e in errors:
    print(f"{path}: {e}")
print(f"{path}: {n} panels, {len(errors)} problems")
sys.exit(1 if errors else 0)
PY

echo "== metric names against $metrics_md"
python3 "$here/promql_names.py" dashboard "$dashboard" "$metrics_md" \
  --exprs-out "$tmp/exprs.txt" || fail=1

if command -v promtool >/dev/null 2>&1 && [[ -s "$tmp/exprs.txt" ]]; then
  echo "== PromQL syntax (promtool)"
  python3 - "$tmp/exprs.txt" "$tmp/rules.yml" <<'PY'
import json, sys
exprs = [l.rstrip("\n") for l in open(sys.argv[1], encoding="utf-8") if l.strip()]
with open(sys.argv[2], "w", encoding="utf-8") as f:
    f.write("groups:\n  - name: dashboard-queries\n    rules:\n")
    for i, e in enumerate(exprs):
        f.write(f"      - record: dashboard:query_{i}\n        expr: {json.dumps(e)}\n")
PY
  if ! promtool check rules "$tmp/rules.yml"; then
    echo "check_dashboard: a dashboard query does not parse (rule N = query N of:)" >&2
    nl -v0 "$tmp/exprs.txt" >&2
    fail=1
  fi
else
  echo "== PromQL syntax: SKIP (promtool not installed; apt-get install -y prometheus)"
fi

if [[ $fail -ne 0 ]]; then
  echo "check_dashboard: FAILED"
  exit 1
fi
echo "check_dashboard: OK"
