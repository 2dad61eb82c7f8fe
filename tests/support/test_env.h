#pragma once

#include <cppconn/connection.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"

namespace outbox::testing {

// The MariaDB started by scripts/test (OUTBOX_TEST_MYSQL_* variables).
MysqlConfig TestMysql(const std::string& database);

// A fresh database with t_outbox exactly as SPEC §2 (plus `extra_columns`
// SQL appended to the column list, e.g. ", last_error varchar(255)").
class TestDatabase {
 public:
  explicit TestDatabase(const std::string& name, const std::string& extra_columns = "");
  ~TestDatabase();
  const std::string& name() const { return name_; }
  MysqlConfig mysql() const { return TestMysql(name_); }
  void Exec(const std::string& sql);
  int64_t QueryInt(const std::string& sql);
  std::map<std::string, int64_t> CountByStatus();
  // Inserts `aggregates` x `per_aggregate` events, interleaved in id order
  // (all first events, then all second events, ...), ids from `first_id`.
  void InsertEvents(int aggregates, int per_aggregate, int64_t first_id = 1,
                    const std::string& aggregate_type = "Order");

 private:
  template <typename F>
  auto Retrying(F f);

  std::string name_;
  std::unique_ptr<sql::Connection> conn_;
};

struct ConsumedMessage {
  std::string topic;
  int partition;
  int64_t offset;
  std::string key;
  std::string value;
  std::map<std::string, std::string> headers;
};

// Reads every message of `topics` from the start of every partition to the
// high watermark.
std::vector<ConsumedMessage> ConsumeAll(const std::string& bootstrap,
                                        const std::vector<std::string>& topics);

// A service config pointing at `db` and `bootstrap` with test-friendly
// timings (short poll, short backoff).
ServiceConfig TestService(const TestDatabase& db, const std::string& bootstrap);

}  // namespace outbox::testing
