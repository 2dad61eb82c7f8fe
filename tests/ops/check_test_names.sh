#!/usr/bin/env bash
# Catch2 test names must not contain ',' or ';' (or '[' / ']'): ctest passes
# the name to Catch2 as a filter, which splits on them, so such a test would
# never run. Fails listing the offending names.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
bad=$(grep -rhozE --include='*.cc' 'TEST_CASE(_METHOD\(\s*\w+,)?\(?\s*"[^"]*"' tests | tr '\n\0' ' \n' |
      sed -E 's/^TEST_CASE[^"]*"//; s/"$//' | grep -E '[,;]|\[|\]' || true)
if [[ -n "$bad" ]]; then
  echo "test names with characters Catch2 filters split on (, ; [ ]):" >&2
  echo "$bad" >&2
  exit 1
fi
echo "test names ok"
