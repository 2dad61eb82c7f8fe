#!/usr/bin/env bash
# The inbox library as a user gets it: `cmake --install` of this build into
# a temporary prefix; the package's files checked (the shared library with
# its SONAME and nothing but outbox::inbox exported, no path of this
# machine, no project define and no private dependency in the CMake files,
# a version file, the schema, the example service); then the installed
# example service (share/doc/liboutbox-inbox-dev/examples/payments/, a
# project of its own) configured with find_package(OutboxInbox CONFIG)
# against that prefix, built, and run against the relay, MariaDB and the
# mock cluster by the hidden [package] cases of the consumer tests
# (tests/integration/inbox_package_test.cc).
# Usage: check_inbox_package.sh BUILD_DIR CONSUMER_TESTS_BINARY
set -euo pipefail
build=$1
tests=$2
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "$*" >&2; exit 1; }
prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
for f in include/outbox/inbox/consumer.h include/outbox/inbox/handler.h \
  include/outbox/inbox/testing.h include/outbox/inbox/log.h include/outbox/inbox/export.h \
  share/outbox-inbox/inbox_schema.sql share/outbox-inbox/t_inbox.sql \
  share/doc/liboutbox-inbox-dev/docs/CONSUMERS.md \
  share/doc/liboutbox-inbox-dev/examples/payments/CMakeLists.txt \
  share/doc/liboutbox-inbox-dev/examples/payments/payments.yaml \
  share/doc/liboutbox-inbox-dev/examples/payments/payments.sql; do
  [[ -f $prefix/$f ]] || fail "not installed: $f"
done
lib=$(find "$prefix" -name 'liboutbox-inbox.so.1.*' -type f)
[[ -n $lib ]] || fail "not installed: lib/.../liboutbox-inbox.so.1.*"
[[ -L $(dirname "$lib")/liboutbox-inbox.so ]] || fail "no liboutbox-inbox.so link beside $lib"
# Not `objdump | grep -q`: grep leaving early fails objdump with SIGPIPE,
# and pipefail the check.
soname=$(objdump -p "$lib" | awk '$1 == "SONAME" { print $2 }')
[[ $soname == liboutbox-inbox.so.1 ]] || fail "$lib: SONAME is $soname, not liboutbox-inbox.so.1"
if find "$prefix" -name '*.a' | grep .; then fail "static archives installed (above)"; fi
# Exported: outbox::inbox and its classes' type_info and vtables only.
nm -D --defined-only --demangle "$lib" | awk '$2 != "A" { $1 = $2 = ""; print substr($0, 3) }' >"$tmp/exported"
if grep -vE '^(outbox::inbox::|typeinfo (name )?for outbox::inbox::|vtable for outbox::inbox::)' "$tmp/exported"; then
  fail "$lib exports more than outbox::inbox (above)"
fi
echo "ok: $(basename "$lib") exports $(wc -l <"$tmp/exported") symbols, all of outbox::inbox"
cmakedir=$(dirname "$(find "$prefix" -name OutboxInboxConfig.cmake)")
version=$(sed -n 's/^project(outbox_relay VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")
grep -q "set(PACKAGE_VERSION \"$version\")" "$cmakedir/OutboxInboxConfigVersion.cmake" ||
  fail "OutboxInboxConfigVersion.cmake does not say version $version"
# What a user's machine cannot have: this build's library paths and the
# project's own compile definitions; what a user must not need: the
# libraries the shared library links privately.
if grep -nE "mysqlcppconn\.so|OUTBOX_VERSION|$build|/usr/(lib|include)/" "$cmakedir"/*.cmake >&2; then
  fail "the exported CMake files name this machine's paths or the project's defines (above)"
fi
# (CMake records the library's private shared libraries as
# IMPORTED_LINK_DEPENDENT_LIBRARIES, a hint for the linker's search path
# used only where a project has such targets itself: not a requirement.)
grep -qF 'INTERFACE_INCLUDE_DIRECTORIES "${_IMPORT_PREFIX}/include"' "$cmakedir/OutboxInboxTargets.cmake" ||
  fail "OutboxInbox::inbox does not give its users the installed include/ directory"
grep -qxF '  INTERFACE_LINK_LIBRARIES "Threads::Threads;OutboxInbox::mysqlcppconn"' \
  "$cmakedir/OutboxInboxTargets.cmake" ||
  fail "OutboxInbox::inbox's interface is not Threads and Connector/C++ alone"
if grep -v IMPORTED_LINK_DEPENDENT_LIBRARIES "$cmakedir"/*.cmake |
  grep -nE "Boost|yaml-cpp|prometheus|spdlog|fmt::|nlohmann|rdkafka|outbox_(config|common|http)" >&2; then
  fail "the exported CMake files name a private dependency of the library (above)"
fi
example=$prefix/share/doc/liboutbox-inbox-dev/examples/payments
cmake -S "$example" -B "$tmp/payments" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$tmp/payments"
PAYMENTS_EXAMPLE_BUILD="$tmp/payments" "$tests" "[package]"
echo "ok: the installed example service, built against the installed OutboxInbox package, consumed the relay's events"
