#!/usr/bin/env bash
# The layering of src/ (docs/DESIGN.md, "Layers"): scripts/check-layering
# passes on the tree, and fails on trees that break it (a relay file that
# includes the MySQL store, a config file that includes librdkafka, an app
# file that includes a header carrying Connector/C++), so the check is known
# to catch what it is for. The same for the inbox library's public headers
# (scripts/check-layering --public).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
check="$ROOT/scripts/check-layering"
"$check" "$ROOT/src"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
expect_violation() {  # FILE LINE WHAT [PATTERN the message must contain]
  rm -rf "$tmp/src" && cp -r "$ROOT/src" "$tmp/src"
  printf '%s\n' "$2" >>"$tmp/src/$1"
  if out=$("$check" "$tmp/src" 2>&1); then
    echo "check-layering missed: $3" >&2
    exit 1
  fi
  grep -q "$1" <<<"$out" || { echo "check-layering did not name $1: $out" >&2; exit 1; }
  grep -q "${4:-$1}" <<<"$out" || { echo "check-layering did not say ${4}: $out" >&2; exit 1; }
}
expect_violation relay/relay.cc '#include "outbox/mysql_store.h"' "the relay including the MySQL store"
expect_violation outbox/mysql_store.cc '#include "kafka/publisher.h"' "the store including the producer"
expect_violation kafka/kafka_config.cc '#include "outbox/row.h"' "the producer including the store"
expect_violation config/config.cc '#include <librdkafka/rdkafka.h>' "config including librdkafka"
expect_violation common/clock.cc '#include "relay/relay.h"' "common including the relay"
expect_violation relay/claimer.cc '#include <cppconn/driver.h>' "Connector/C++ outside src/outbox"
expect_violation app/check.cc '#include "outbox/mysql_connection.h"' \
  "an app file including the MySQL connection" "brings <cppconn/"
expect_violation app/version.cc '#include "outbox/mysql_store.h"' \
  "an app file including a header that includes the MySQL connection" "brings <cppconn/"
expect_violation inbox/event.cc '#include "relay/relay.h"' "the inbox library including the relay"
expect_violation relay/relay.cc '#include "outbox/inbox/consumer.h"' \
  "the relay including the inbox library's public header" "only inbox/"

# The inbox library's public headers include only the standard library and
# each other.
pub="$ROOT/include"
"$check" --public "$pub"
expect_public_violation() {  # FILE LINE WHAT
  rm -rf "$tmp/include" && cp -r "$pub" "$tmp/include"
  printf '%s\n' "$2" >>"$tmp/include/outbox/inbox/$1"
  if out=$("$check" --public "$tmp/include" 2>&1); then
    echo "check-layering --public missed: $3" >&2
    exit 1
  fi
  grep -q "$1: includes" <<<"$out" || { echo "check-layering --public did not name $1: $out" >&2; exit 1; }
}
expect_public_violation handler.h '#include <librdkafka/rdkafka.h>' "librdkafka in a public header"
expect_public_violation transaction.h '#include <cppconn/connection.h>' "Connector/C++ in a public header"
expect_public_violation consumer.h '#include "inbox/inbox_consumer.h"' "a private header in a public one"
echo "layering: src/ and the inbox library's public headers are clean and 13 planted violations were caught"
