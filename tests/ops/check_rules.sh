#!/usr/bin/env bash
# Checks the Prometheus alerting rules and their unit tests:
#   promtool check rules deploy/prometheus/alerts.yml
#   promtool test rules  deploy/prometheus/alerts_test.yml
#   promtool check config deploy/prometheus/prometheus.yml (and the compose one)
# and, with python3, that every alert has severity, summary, description and a
# runbook_url whose anchor is a heading of docs/RUNBOOK.md, and that the rules
# only use metrics listed in docs/METRICS.md (the latter needs PyYAML; skipped
# with a note without it).
#
# Usage: tests/ops/check_rules.sh        (no arguments)
# Needs promtool (Debian package `prometheus`). Exit 0 ok, 1 failure.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
prom="$root/deploy/prometheus"

if ! command -v promtool >/dev/null 2>&1; then
  echo "check_rules: promtool not found; install it with: apt-get install -y prometheus" >&2
  exit 1
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail=0

echo "== promtool check rules"
promtool check rules "$prom/alerts.yml" || fail=1

echo "== promtool test rules"
# Run from the rules' folder: rule_files in the test file are relative to it.
(cd "$prom" && promtool test rules alerts_test.yml) || fail=1

echo "== promtool check config"
promtool check config "$prom/prometheus.yml" || fail=1
if [[ -f "$root/deploy/compose/prometheus.yml" ]]; then
  # The compose file mounts ../prometheus/alerts.yml beside its config.
  cp "$root/deploy/compose/prometheus.yml" "$prom/alerts.yml" "$tmp/"
  promtool check config "$tmp/prometheus.yml" || fail=1
fi

if command -v python3 >/dev/null 2>&1; then
  echo "== annotations and runbook anchors"
  python3 - "$prom/alerts.yml" "$root/docs/RUNBOOK.md" <<'PY' || fail=1
import re, sys
rules_path, runbook_path = sys.argv[1], sys.argv[2]
text = open(rules_path, encoding="utf-8").read()

def slug(heading):
    # GitHub's heading anchors: lower case, punctuation other than - and _
    # dropped, spaces to hyphens.
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")

anchors = set()
in_code = False
for line in open(runbook_path, encoding="utf-8"):
    if line.startswith("```"):
        in_code = not in_code
    m = None if in_code else re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
    if m:
        anchors.add(slug(m.group(1)))

errors = []
# Split into one chunk per rule; the rule file is plain block YAML.
chunks = re.split(r"\n(?=\s*- (?:alert|record):)", text)
alerts = 0
for chunk in chunks:
    m = re.match(r"\s*- alert:\s*(\S+)", chunk)
    if not m:
        continue
    alerts += 1
    name = m.group(1)
    for key in ("severity:", "summary:", "description:", "runbook_url:"):
        if not re.search(rf"^\s+{key}", chunk, re.M):
            errors.append(f"{name}: no {key[:-1]}")
    if not re.search(r"^\s+severity:\s*(page|warning|info)\s*$", chunk, re.M):
        errors.append(f"{name}: severity must be page, warning or info")
    if "$labels.service" not in chunk and "$labels.instance" not in chunk:
        errors.append(f"{name}: annotations name neither service nor instance")
    for url in re.findall(r"runbook_url:\s*(\S+)", chunk):
        if not url.startswith("https://github.com/outbox-relay/outbox-relay/blob/main/docs/RUNBOOK.md#"):
            errors.append(f"{name}: runbook_url {url} does not point into docs/RUNBOOK.md")
            continue
        anchor = url.split("#", 1)[1]
        if anchor not in anchors:
            errors.append(f"{name}: anchor #{anchor} is not a heading of {runbook_path}")
    # The alert's section says how to look: the relay's own commands, the SQL
    # and the PromQL to run (each a fenced block), and how to fix it.
    runbook = open(runbook_path, encoding="utf-8").read()
    sec = re.search(rf"^## {re.escape(name)}\n(.*?)(?=^## |\Z)", runbook, re.S | re.M)
    if not sec:
        errors.append(f"{name}: no '## {name}' section in {runbook_path}")
        continue
    body = sec.group(1)
    for what, pattern in (("a ```sh block with an outbox-relay command", r"```sh\n(?:(?!```).)*?outbox-relay ",),
                          ("a ```sql block", r"```sql\n"), ("a ```promql block", r"```promql\n"),
                          ("**What it means.**", r"\*\*What it means\.\*\*"),
                          ("**How to look.**", r"\*\*How to look\.\*\*"),
                          ("**How to fix.**", r"\*\*How to fix\.\*\*")):
        if not re.search(pattern, body, re.S):
            errors.append(f"{name}: its runbook section has no {what}")
for e in errors:
    print(f"{rules_path}: {e}")
print(f"{rules_path}: {alerts} alerts, {len(errors)} problems")
sys.exit(1 if errors or alerts == 0 else 0)
PY

  echo "== metric names against docs/METRICS.md"
  rc=0
  python3 "$here/promql_names.py" rules "$prom/alerts.yml" "$root/docs/METRICS.md" || rc=$?
  if [[ $rc -ne 0 && $rc -ne 77 ]]; then fail=1; fi
else
  echo "== annotations, runbook anchors, metric names: SKIP (python3 not installed)"
fi

if [[ $fail -ne 0 ]]; then
  echo "check_rules: FAILED"
  exit 1
fi
echo "check_rules: OK"
