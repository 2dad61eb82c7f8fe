#!/usr/bin/env bash
# The inbox library as a user gets it: `cmake --install` of this build into
# a temporary prefix, then tests/package/inbox_user/ (a project of its own)
# configured with find_package(OutboxInbox CONFIG) against that prefix,
# built, and run.
# Usage: check_inbox_package.sh BUILD_DIR
set -euo pipefail
build=$1
src=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/inbox_user
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
for f in include/outbox/inbox/consumer.h include/outbox/inbox/handler.h; do
  [[ -f $tmp/prefix/$f ]] || { echo "not installed: $f" >&2; exit 1; }
done
cmake -S "$src" -B "$tmp/user" -G Ninja -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/user"
out=$("$tmp/user/inbox-user" 127.0.0.1:9 --check)
[[ $out == "consumer payments reads outbox.event.Order" ]] || { echo "inbox-user: $out" >&2; exit 1; }
echo "ok: an outside project built and ran against the installed OutboxInbox package"
