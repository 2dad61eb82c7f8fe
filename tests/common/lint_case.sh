#!/usr/bin/env bash
# The harness of a test of one scripts/lint check (a perl checker in
# scripts/lib/), sourced by tests/common/lint_*_test.sh: src/ passes the
# check, and each violation planted in a copy is caught (and nothing allowed
# is). The caller writes the copies, $lint_tmp/bad.cc and $lint_tmp/good.cc,
# then calls lint_case.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
lint_tmp=$(mktemp -d)
trap 'rm -rf "$lint_tmp"' EXIT

# lint_case NAME CHECKER SKIP EXPECTED...: NAME for the messages; CHECKER the
# perl script; SKIP a regex of the src/ paths the check does not cover. Each
# EXPECTED is N:REGEX, a finding "bad.cc:N: " followed by REGEX; there must be
# as many findings as EXPECTED, and none in good.cc. Exits with the result.
lint_case() {
  local name=$1 checker=$2 skip=$3 out bad good fail=0 n what
  shift 3
  mapfile -t files < <(git ls-files 'src/*.cc' 'src/*.h' 2>/dev/null | grep -v "$skip" ||
    find src -name '*.cc' -o -name '*.h' | grep -v "$skip")
  out=$(perl "$checker" "${files[@]}")
  if [[ -n $out ]]; then
    echo "src/ does not pass the $name check:"; echo "$out"; exit 1
  fi
  bad=$(perl "$checker" "$lint_tmp/bad.cc")
  good=$(perl "$checker" "$lint_tmp/good.cc")
  for line in "$@"; do
    n=${line%%:*} what=${line#*:}
    grep -q "bad.cc:$n: $what" <<<"$bad" || { echo "not caught: line $n ($what)"; fail=1; }
  done
  [[ $(wc -l <<<"$bad") -eq $# ]] || { echo "expected $# findings, got:"; echo "$bad"; fail=1; }
  [[ -z $good ]] || { echo "false findings:"; echo "$good"; fail=1; }
  ((fail == 0)) && echo "lint $name: src/ passes; $# planted violations caught, none in allowed code"
  exit $fail
}
