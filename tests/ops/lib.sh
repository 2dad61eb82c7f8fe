# Sourced by the tests/ops/check_*.sh scripts that use it, after they set
# `here` (their own folder): the checkout's root, a scratch directory removed
# on exit, the failure flag the checks set, and need() for a required tool.
# shellcheck shell=bash
root="$(cd "$here/../.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail=0

# need TOOL MESSAGE: exits 1 printing MESSAGE unless TOOL is on the PATH.
need() {
  command -v "$1" >/dev/null 2>&1 || { echo "$2" >&2; exit 1; }
}
