#!/usr/bin/env bash
# scripts/lib/selftest.sh — exercise common.sh and mariadb.sh end to end:
# start a throwaway MariaDB, create the outbox table, insert a row, stop,
# restart with DIR/restart.sh, check the row survived, stop, clean up.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/lib/common.sh
. "$here/common.sh"
# shellcheck source=scripts/lib/mariadb.sh
. "$here/mariadb.sh"
# shellcheck source=scripts/lib/deps.sh
. "$here/deps.sh"

fail() { log "SELFTEST FAILED: $*"; exit 1; }

# --- common.sh -------------------------------------------------------------
port=$(outbox_free_port)
[[ "$port" =~ ^[0-9]+$ && "$port" -gt 0 && "$port" -lt 65536 ]] || fail "outbox_free_port gave '$port'"

# cleanup registry runs in reverse order, also when a command fails
rc=0
order=$(bash -c '
    set -euo pipefail
    . "$1/common.sh"
    outbox_on_exit "echo first"
    outbox_on_exit "false"
    outbox_on_exit "echo second"
    exit 3' _ "$here" 2>/dev/null) || rc=$?
[[ "$rc" == 3 ]] || fail "outbox_on_exit changed the exit code to $rc"
[[ "$order" == $'second\nfirst' ]] || fail "outbox_on_exit order: $order"

if outbox_wait_http "http://127.0.0.1:$port/" 1 2>/dev/null; then
    fail "outbox_wait_http succeeded on a closed port"
fi

missing_pkgs=$(outbox_missing_deps)
[[ -z "$missing_pkgs" ]] || log "note: missing packages: $missing_pkgs"

# --- mariadb.sh ------------------------------------------------------------
dir=$(outbox_tmpdir)
outbox_on_exit "rm -rf '$dir'"
outbox_on_exit "mariadb_stop '$dir'"

t0=$(date +%s.%N)
mariadb_start "$dir"
t1=$(date +%s.%N)
log "first start (incl. mariadb-install-db) took $(python3 -c "print(round($t1-$t0,2))")s"

for v in OUTBOX_TEST_MYSQL_HOST OUTBOX_TEST_MYSQL_PORT OUTBOX_TEST_MYSQL_USER \
    OUTBOX_TEST_MYSQL_SOCKET OUTBOX_TEST_MYSQL_DIR OUTBOX_TEST_MYSQLD_CMD; do
    [[ -n "${!v:-}" ]] || fail "$v not exported"
done
[[ "${OUTBOX_TEST_MYSQL_PASSWORD+set}" == set && -z "$OUTBOX_TEST_MYSQL_PASSWORD" ]] ||
    fail "OUTBOX_TEST_MYSQL_PASSWORD should be exported and empty"
[[ -x "$dir/restart.sh" && -x "$dir/stop.sh" && -r "$dir/env.sh" ]] || fail "helper scripts missing"

# root over TCP without a password
tcp_user=$(mariadb --no-defaults --protocol=TCP -h "$OUTBOX_TEST_MYSQL_HOST" -P "$OUTBOX_TEST_MYSQL_PORT" \
    -u root -N -B -e 'select current_user()') || fail "TCP root login failed"
[[ "$tcp_user" == "root@127.0.0.1" ]] || fail "TCP login as $tcp_user"
mariadb --no-defaults --protocol=TCP -h 127.0.0.1 -P "$OUTBOX_TEST_MYSQL_PORT" -u root \
    -e "create database grant_check; create user 'probe'@'127.0.0.1' identified by 'p';
        grant select on grant_check.* to 'probe'@'127.0.0.1'; drop user 'probe'@'127.0.0.1';
        drop database grant_check;" || fail "root@127.0.0.1 cannot grant"

mariadb_create_outbox "$dir" selftest
mariadb_sql "$dir" "insert into selftest.t_outbox
    (id, aggregate_type, aggregate_id, event_type, event_key, payload, status,
     next_retry_at, created_at, updated_at)
    values (1, 'Order', 42, 'OrderPaid', 'OrderPaid:42:1', '{\"amount\": 10}', 'NEW',
     now(), now(), now())"
[[ "$(mariadb_sql "$dir" "select count(*) from selftest.t_outbox")" == 1 ]] || fail "insert"
engine=$(mariadb_sql "$dir" "select engine, table_collation from information_schema.tables
    where table_schema='selftest' and table_name='t_outbox'")
[[ "$engine" == $'InnoDB\tutf8mb4_general_ci' ]] || fail "table engine/collation: $engine"
[[ "$(mariadb_sql "$dir" "select count(*) from information_schema.statistics
    where table_schema='selftest' and table_name='t_outbox' and index_name='idx_status_retry'")" == 2 ]] ||
    fail "idx_status_retry missing"

# clean stop, restart through restart.sh on the same port
port1=$OUTBOX_TEST_MYSQL_PORT
mariadb_stop "$dir"
[[ ! -S "$dir/mysqld.sock" ]] || log "note: socket file left after clean stop"
if mariadb_sql "$dir" "select 1" >/dev/null 2>&1; then fail "server still answers after stop"; fi
t0=$(date +%s.%N)
"$dir/restart.sh"
t1=$(date +%s.%N)
log "restart took $(python3 -c "print(round($t1-$t0,2))")s"
[[ "$(mariadb_sql "$dir" "select concat(id,':',event_key,':',status) from selftest.t_outbox")" == "1:OrderPaid:42:1:NEW" ]] ||
    fail "row lost across restart"
[[ "$(mariadb --no-defaults --protocol=TCP -h 127.0.0.1 -P "$port1" -u root -N -B -e 'select @@port')" == "$port1" ]] ||
    fail "restart not on the same port"

# crash (SIGKILL of the pid in the pid file) and restart with the exported command
pid=$(cat "$dir/mysqld.pid")
mariadb_sql "$dir" "insert into selftest.t_outbox
    (id, aggregate_type, aggregate_id, event_type, event_key, payload, status,
     next_retry_at, created_at, updated_at)
    values (2, 'Order', 42, 'OrderShipped', 'OrderShipped:42:2', '{}', 'NEW', now(), now(), now())"
kill -KILL "$pid"
while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
t0=$(date +%s.%N)
bash -c "$OUTBOX_TEST_MYSQLD_CMD >/dev/null 2>&1 </dev/null &"
until mariadb-admin --no-defaults --socket="$OUTBOX_TEST_MYSQL_SOCKET" -uroot ping >/dev/null 2>&1; do
    (( $(date +%s) - ${t0%.*} < 60 )) || fail "restart via OUTBOX_TEST_MYSQLD_CMD after SIGKILL"
    sleep 0.1
done
t1=$(date +%s.%N)
log "restart after SIGKILL (crash recovery) took $(python3 -c "print(round($t1-$t0,2))")s"
[[ "$(mariadb_sql "$dir" "select count(*) from selftest.t_outbox")" == 2 ]] ||
    fail "committed row lost after SIGKILL"

# restart.sh is a no-op when already running; stop.sh is a no-op when stopped
"$dir/restart.sh" >/dev/null
mariadb_stop "$dir"
mariadb_stop "$dir"
[[ -z "$(_mariadb_ours_pid "$dir" || true)" ]] || fail "server still running"

log "SELFTEST PASSED"
