#!/usr/bin/env bash
# Checks the Grafana dashboard deploy/grafana/outbox-relay.json:
#   - it is valid JSON with unique panel ids, a schemaVersion, the
#     DS_PROMETHEUS datasource variable and the `service` variable;
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
python3 - "$dashboard" <<'PY' || fail=1
import json, sys
path = sys.argv[1]
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
svc = variables.get("service")
svc_query = svc.get("query") if svc else None
if isinstance(svc_query, dict):
    svc_query = svc_query.get("query")
if not svc or "label_values(outbox_backlog_events, service)" not in (svc_query or ""):
    errors.append("templating needs variable service = label_values(outbox_backlog_events, service)")

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
    gp = p.get("gridPos", {})
    if gp.get("x", 0) + gp.get("w", 0) > 24:
        errors.append(f"panel {p.get('title')!r} is wider than the grid")
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
