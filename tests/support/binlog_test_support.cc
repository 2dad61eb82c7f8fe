#include "support/binlog_test_support.h"

#include <catch2/catch.hpp>

#include "support/test_env.h"

namespace outbox::testing {

binlog::BinlogOptions TestBinlogOptions() {
  binlog::BinlogOptions o;
  o.mysql = TestMysql("");
  o.instance_id = "binlog-test";
  o.heartbeat_ms = 500;
  o.stall_timeout_ms = 2000;
  o.initial_backoff_ms = 100;
  o.max_backoff_ms = 1000;
  return o;
}

void RequireLogBin() {
  SqlClient admin("mysql");
  if (admin.QueryInt("SELECT @@GLOBAL.log_bin") != 1)
    FAIL(
        "the test MariaDB runs without the binary log; scripts/test starts it with "
        "$(mariadb_binlog_args) (scripts/lib/mariadb.sh)");
}

}  // namespace outbox::testing
