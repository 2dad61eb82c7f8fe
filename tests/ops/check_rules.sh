#!/usr/bin/env bash
# Checks the Prometheus alerting rules and their unit tests:
#   deploy/prometheus/generate-rules --check (alerts.yml and the k8s
#     PrometheusRule are what alerts.in.yml + rules.conf generate)
#   promtool check rules deploy/prometheus/alerts.yml
#   promtool test rules  deploy/prometheus/alerts_test.yml (static job and
#     PodMonitor job names)
#   the rules generated with another selector (namespace="shop",
#     job=~".+/outbox-relay") select only that namespace's series; with
#     other group labels (rules.conf group_labels) they aggregate by those
#     (promtool tests tests/ops/rules/selector_test.yml and group_test.yml)
#   promtool check config deploy/prometheus/prometheus.yml (and the compose one)
# and, with python3, that every alert has severity critical or warning,
# summary, description and a runbook_url built from rules.conf's runbook_base
# whose anchor is a heading of docs/RUNBOOK.md, that no expression names a job
# (only the selector does), that annotations use only labels the alert's
# series carry (the labels the rule tests expect), and that the rules only use
# metrics listed in docs/METRICS.md (the latter needs PyYAML; skipped with a
# note without it).
#
# Usage: tests/ops/check_rules.sh        (no arguments)
# Needs promtool (Debian package `prometheus`). Exit 0 ok, 1 failure.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$here/lib.sh"  # root, tmp, fail, need
prom="$root/deploy/prometheus"
need promtool "check_rules: promtool not found; install it with: apt-get install -y prometheus"

echo "== generated files up to date"
"$prom/generate-rules" --check || fail=1

echo "== promtool check rules"
promtool check rules "$prom/alerts.yml" || fail=1

echo "== promtool test rules"
# Run from the rules' folder: rule_files in the test file are relative to it.
(cd "$prom" && promtool test rules alerts_test.yml) || fail=1

echo "== another selector, from the one place it is set"
"$prom/generate-rules" --selector 'namespace="shop",job=~".+/outbox-relay"' \
  --alerts "$tmp/alerts.yml" --prometheusrule "$tmp/prometheusrule.yaml" >/dev/null || fail=1
cp "$here/rules/selector_test.yml" "$tmp/"  # rule_files: the generated alerts.yml beside it
(cd "$tmp" && promtool test rules selector_test.yml) || fail=1
echo "== other group labels, from the one place they are set"
# group_labels: team: the rules keep `team` instead of cluster and namespace.
"$prom/generate-rules" --group-labels team \
  --alerts "$tmp/alerts.yml" --prometheusrule "$tmp/prometheusrule.yaml" >/dev/null || fail=1
cp "$here/rules/group_test.yml" "$tmp/"  # rule_files: the generated alerts.yml beside it
(cd "$tmp" && promtool test rules group_test.yml) || fail=1
# An empty list aggregates by service alone and still parses.
"$prom/generate-rules" --group-labels '' \
  --alerts "$tmp/alerts.yml" --prometheusrule "$tmp/prometheusrule.yaml" >/dev/null || fail=1
promtool check rules "$tmp/alerts.yml" >/dev/null || { echo "FAIL  rules with no group labels do not parse"; fail=1; }
grep -q 'max by (service)' "$tmp/alerts.yml" \
  || { echo "FAIL  with no group labels the table alerts do not aggregate by (service)"; fail=1; }
if "$prom/generate-rules" --group-labels 'namespace, bad-label' --alerts "$tmp/bad.yml" \
     --prometheusrule "$tmp/bad2.yaml" >/dev/null 2>&1; then
  echo "FAIL  generate-rules accepted a group label that is not a label name"; fail=1
fi
if "$prom/generate-rules" --selector 'job="x"}' --alerts "$tmp/bad.yml" \
     --prometheusrule "$tmp/bad2.yaml" >/dev/null 2>&1; then
  echo "FAIL  generate-rules accepted a selector that is not a matcher list"; fail=1
fi

echo "== promtool check config"
promtool check config "$prom/prometheus.yml" || fail=1
if [[ -f "$root/deploy/compose/prometheus.yml" ]]; then
  # The compose file mounts ../prometheus/alerts.yml beside its config.
  cp "$root/deploy/compose/prometheus.yml" "$prom/alerts.yml" "$tmp/"
  promtool check config "$tmp/prometheus.yml" || fail=1
fi

if command -v python3 >/dev/null 2>&1; then
  echo "== annotations and runbook anchors"
  python3 - "$prom/alerts.yml" "$root/docs/RUNBOOK.md" "$prom" <<'PY' || fail=1
import re, sys
rules_path, runbook_path, prom = sys.argv[1], sys.argv[2], sys.argv[3]
text = open(rules_path, encoding="utf-8").read()
conf = dict(l.split(":", 1) for l in open(f"{prom}/rules.conf", encoding="utf-8")
            if l.strip() and not l.startswith("#"))
runbook_base = conf["runbook_base"].strip()
source = open(f"{prom}/alerts.in.yml", encoding="utf-8").read()
tests = open(f"{prom}/alerts_test.yml", encoding="utf-8").read()

# The labels each alert fires with in the rule tests (exp_labels blocks).
fired = {}
for block in re.split(r"\n\s+- eval_time:", tests)[1:]:
    m = re.search(r"alertname:\s*(\S+)", block)
    for labels in re.findall(r"exp_labels:\n((?:\s{14,}\S[^\n]*\n?)+)", block):
        fired.setdefault(m.group(1), []).append(set(re.findall(r"^\s+([a-z_]+):", labels, re.M)))

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
    if not re.search(r"^\s+severity:\s*(critical|warning)\s*$", chunk, re.M):
        errors.append(f"{name}: severity must be critical or warning")
    # Labels the annotations use: plain $labels.x must be on every alert the
    # tests saw; inside `with $labels.x` on at least one.
    ann = chunk.split("annotations:", 1)[-1]
    guarded = set(re.findall(r"with \$labels\.([a-z_]+)", ann))
    plain = set(re.findall(r"\$labels\.([a-z_]+)", re.sub(r"with \$labels\.[a-z_]+", "", ann)))
    seen = fired.get(name, [])
    if not seen:
        errors.append(f"{name}: no rule test shows it firing (alerts_test.yml)")
    for label in sorted(plain):
        if any(label not in s for s in seen):
            errors.append(f"{name}: annotations use $labels.{label}, which not every firing alert has")
    for label in sorted(guarded):
        if seen and all(label not in s for s in seen):
            errors.append(f"{name}: annotations use $labels.{label}, which no firing alert has")
    if "$labels.service" not in chunk and "$labels.instance" not in chunk:
        errors.append(f"{name}: annotations name neither service nor instance")
    for url in re.findall(r"runbook_url:\s*(\S+)", chunk):
        url = url.strip('"')
        if url != f"{runbook_base}#{name.lower()}":
            errors.append(f"{name}: runbook_url {url} is not rules.conf's runbook_base#{name.lower()}")
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
# The selector is set in one place: no expression of the source names a job.
for line in source.splitlines():
    code = line.split("#", 1)[0] if line.lstrip().startswith("#") else line
    if re.search(r"\bjob\s*(=|!=|=~|!~)", code):
        errors.append(f"alerts.in.yml: `{line.strip()}` names a job; use %%SELECTOR%%")
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
