#!/usr/bin/env bash
# The inbox library as a user gets it: `cmake --install` of this build into
# a temporary prefix; the package's files checked (no path of this machine,
# no project define, a version file); then tests/package/inbox_user/ (a
# project of its own) configured with find_package(OutboxInbox CONFIG)
# against that prefix, built, and run against the relay, MariaDB and the
# mock cluster by the hidden [package] cases of the consumer tests
# (tests/integration/inbox_package_test.cc).
# Usage: check_inbox_package.sh BUILD_DIR CONSUMER_TESTS_BINARY
set -euo pipefail
build=$1
tests=$2
src=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/inbox_user
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
for f in include/outbox/inbox/consumer.h include/outbox/inbox/handler.h \
  include/outbox/inbox/testing.h include/outbox/inbox/log.h; do
  [[ -f $tmp/prefix/$f ]] || { echo "not installed: $f" >&2; exit 1; }
done
cmakedir=$(dirname "$(find "$tmp/prefix" -name OutboxInboxConfig.cmake)")
version=$(sed -n 's/^project(outbox_relay VERSION \([0-9.]*\).*/\1/p' "$src/../../../CMakeLists.txt")
grep -q "set(PACKAGE_VERSION \"$version\")" "$cmakedir/OutboxInboxConfigVersion.cmake" ||
  { echo "OutboxInboxConfigVersion.cmake does not say version $version" >&2; exit 1; }
# What a user's machine cannot have: this build's library paths and the
# project's own compile definitions.
if grep -nE "mysqlcppconn\.so|OUTBOX_VERSION|$build|/usr/(lib|include)/" "$cmakedir"/*.cmake >&2; then
  echo "the exported CMake files name this machine's paths or the project's defines (above)" >&2
  exit 1
fi
cmake -S "$src" -B "$tmp/user" -G Ninja -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/user"
INBOX_USER_BINARY="$tmp/user/inbox-user" "$tests" "[package]"
echo "ok: an outside project built against the installed OutboxInbox package consumed the relay's events"
