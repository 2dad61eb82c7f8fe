#!/usr/bin/env bash
# Runs COMMAND against the MariaDB that ctest gave this test: scripts/test
# starts one server per parallel slot and exports each one's variables with
# the slot's number appended (OUTBOX_TEST_MYSQL_PORT_2, ...); ctest names the
# slot in CTEST_RESOURCE_GROUP_0_MARIADB ("id:2,slots:1", RESOURCE_GROUPS in
# tests/CMakeLists.txt). Without either, COMMAND runs with the environment as
# it is. tests/main.cc does the same for the test binaries.
# Usage: tests/support/with_test_mariadb.sh COMMAND [ARGS...]
set -euo pipefail
if [[ "${CTEST_RESOURCE_GROUP_0_MARIADB:-}" =~ id:([0-9]+) ]]; then
  slot=${BASH_REMATCH[1]}
  for v in OUTBOX_TEST_MYSQL_PORT OUTBOX_TEST_MYSQL_SOCKET OUTBOX_TEST_MYSQL_DIR \
    OUTBOX_TEST_MYSQLD_CMD; do
    own="${v}_$slot"
    if [[ -n "${!own:-}" ]]; then export "$v=${!own}"; fi
  done
fi
exec "$@"
