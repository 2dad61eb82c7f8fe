#!/usr/bin/env bash
# scripts/lint's "refs" check: the repository passes it, and each broken
# reference planted in a copy is caught (and none that resolves is).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

mapfile -t files < <(git ls-files | grep -vE '^CHANGELOG\.md$|^LICENSE$|\.(png|svg|jpg|json|csv|sql|8)$')
out=$(python3 scripts/lib/lint_refs.py "${files[@]}")
if [[ -n $out ]]; then
  echo "the repository does not pass the refs check:"; echo "$out"; exit 1
fi

cat >"$tmp/bad.cc" <<'CC'
// docs/DESIGN.md "Claiming" and DESIGN.md, "Threads and more"
// README "No such part"
// docs/CONFIG.md#no-such-anchor
// src/relay/no_such_file.h and tests/none/
// the rules of STYLE.md and SPEC §3 "Fleet"
CC
cat >"$tmp/good.cc" <<'CC'
// docs/DESIGN.md "Threads", DESIGN.md, "Lease token and fencing", README "How it works"
// docs/CONFIG.md#lease-and-fencing-why-lease_ms-is-at-least-2000
// src/relay/claim_loop.h, src/binlog/binlog_streams.*, common/clock.h, scripts/lint
// kubectl port-forward deploy/outbox-relay 9464
const char* s = "docs/DESIGN.md \"Claiming\" in a string is not a comment";
CC
bad=$(python3 scripts/lib/lint_refs.py "$tmp/bad.cc")
good=$(python3 scripts/lib/lint_refs.py "$tmp/good.cc")
fail=0
for line in '1:section "Claiming"' '1:section "Threads and more"' '2:section "No such part"' \
  '3:no-such-anchor' '4:no_such_file.h' '4:tests/none/' '5:STYLE.md: no such document' \
  '5:SPEC: not a document'; do
  n=${line%%:*} what=${line#*:}
  grep -qF "bad.cc:$n: " <<<"$bad" && grep "bad.cc:$n: " <<<"$bad" | grep -qF "$what" ||
    { echo "not caught: line $n ($what)"; fail=1; }
done
[[ $(wc -l <<<"$bad") -eq 8 ]] || { echo "expected 8 findings, got:"; echo "$bad"; fail=1; }
[[ -z $good ]] || { echo "false findings:"; echo "$good"; fail=1; }
((fail == 0)) && echo "refs: the repository passes; 8 planted broken references caught, none that resolve"
exit $fail
