#!/usr/bin/env bash
# Runs every ops check in this folder and prints one closing line
# "N passed, N failed, N skipped". A check that exits 77 counts as skipped.
#
# Usage: tests/ops/run_all.sh [RELAY_BINARY]     e.g. build/outbox-relay
# Without RELAY_BINARY the checks that need it are skipped.
# Exit 0 when nothing failed, 1 otherwise.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
relay="${1:-}"
if [[ -n "$relay" ]]; then
  relay="$(cd "$(dirname "$relay")" && pwd)/$(basename "$relay")"
fi

passed=0 failed=0 skipped=0
failed_names=()
run() {
  local name="$1"; shift
  echo "---- $name"
  "$@"
  local rc=$?
  case $rc in
    0) passed=$((passed + 1)) ;;
    77) skipped=$((skipped + 1)) ;;
    *) failed=$((failed + 1)); failed_names+=("$name") ;;
  esac
}

run check_rules     "$here/check_rules.sh"
run check_dashboard "$here/check_dashboard.sh"
run check_yaml      "$here/check_yaml.sh" ${relay:+"$relay"}
run check_systemd   "$here/check_systemd.sh" ${relay:+"$relay"}
run check_metrics   "$here/check_metrics.sh" ${relay:+"$relay"}

echo "----"
if ((failed)); then
  echo "failed: ${failed_names[*]}"
fi
echo "$passed passed, $failed failed, $skipped skipped"
((failed == 0))
