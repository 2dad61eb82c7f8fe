#pragma once

// The two stores the contract suite (store_contract_test.cc) holds to one
// set of behaviours: the fake (tests/fakes/fake_store.h) and MysqlStore on
// the throwaway MariaDB. Each environment is a fresh, empty table; rows are
// seeded and changed "as another writer would", on the store's own clock.

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "fakes/fake_store.h"
#include "outbox/mysql_store_factory.h"
#include "support/test_env.h"

namespace outbox::testing {

// One row to seed. Times are relative to the database's now.
struct SeedRow {
  int64_t id = 0;
  int64_t aggregate_id = 0;
  std::string status = "NEW";
  int64_t due_in_s = 0;       // next_retry_at = now + due_in_s (negative: in the past)
  int64_t created_ago_s = 0;  // created_at = now - created_ago_s
  std::string aggregate_type = "Order";
  int retry_count = 0;
};

// A row as the table holds it.
struct SeenRow {
  bool exists = false;
  std::string status;
  int retry_count = 0;
  bool due = false;  // next_retry_at <= now
  std::string last_error;
};

class FakeTableEnv {
 public:
  FakeTableEnv()
      : clock_(std::make_shared<FakeClock>()), table_(std::make_shared<FakeTable>(clock_)) {}

  OutboxStorePtr NewStore() { return std::make_unique<FakeStore>(table_); }
  void Seed(const std::vector<SeedRow>& rows) {
    for (const auto& s : rows) {
      FakeRow r;
      r.row.id = s.id;
      r.row.aggregate = {s.aggregate_type, s.aggregate_id};
      r.row.event_type = "E";
      r.row.event_key = "k" + std::to_string(s.id);
      r.row.payload = "{}";
      r.row.retry_count = s.retry_count;
      r.row.created_at_unix = static_cast<int64_t>(clock_->UnixNow()) - s.created_ago_s;
      r.status = s.status;
      r.next_retry_at_ms = clock_->UnixMs() + s.due_in_s * 1000;
      table_->Put(s.id, r);
    }
  }
  void Set(int64_t id, const std::string& status, int64_t due_in_s) {
    FakeRow r = table_->Get(id);
    r.status = status;
    r.next_retry_at_ms = clock_->UnixMs() + due_in_s * 1000;
    table_->Put(id, r);
  }
  SeenRow Get(int64_t id) {
    FakeRow r;
    try {
      r = table_->Get(id);
    } catch (const std::out_of_range&) {
      return {};
    }
    return {true, r.status, r.row.retry_count, r.next_retry_at_ms <= clock_->UnixMs(),
            r.last_error};
  }
  void GrantDelete() {}
  // A store whose database does not answer.
  OutboxStorePtr NewUnreachableStore() {
    auto down = std::make_shared<FakeTable>(clock_);
    down->set_down(true);
    return std::make_unique<FakeStore>(down);
  }

 private:
  std::shared_ptr<FakeClock> clock_;
  std::shared_ptr<FakeTable> table_;
};

class MariaDbEnv {
 public:
  MariaDbEnv() : db_("store_contract_" + std::to_string(++count_), ", last_error varchar(255)") {}

  OutboxStorePtr NewStore() { return NewMysqlStore(db_.mysql()); }
  void Seed(const std::vector<SeedRow>& rows) {
    std::string values;
    for (const auto& s : rows) {
      values += std::string(values.empty() ? "" : ",") + "(" + std::to_string(s.id) + ",'" +
                s.aggregate_type + "'," + std::to_string(s.aggregate_id) + ",'E','k" +
                std::to_string(s.id) + "','{}','" + s.status + "'," +
                std::to_string(s.retry_count) + ",NOW() + INTERVAL " + std::to_string(s.due_in_s) +
                " SECOND,NOW() - INTERVAL " + std::to_string(s.created_ago_s) + " SECOND,NOW())";
    }
    db_.Exec(
        "INSERT INTO t_outbox (id, aggregate_type, aggregate_id, event_type, event_key, payload,"
        " status, retry_count, next_retry_at, created_at, updated_at) VALUES " +
        values);
  }
  void Set(int64_t id, const std::string& status, int64_t due_in_s) {
    db_.Exec("UPDATE t_outbox SET status = '" + status + "', next_retry_at = NOW() + INTERVAL " +
             std::to_string(due_in_s) + " SECOND WHERE id = " + std::to_string(id));
  }
  SeenRow Get(int64_t id) {
    const std::string where = " FROM t_outbox WHERE id = " + std::to_string(id);
    if (db_.QueryInt("SELECT COUNT(*)" + where) == 0) return {};
    return {true, db_.QueryString("SELECT status" + where),
            static_cast<int>(db_.QueryInt("SELECT retry_count" + where)),
            db_.QueryInt("SELECT next_retry_at <= NOW()" + where) == 1,
            db_.QueryString("SELECT last_error" + where)};
  }
  void GrantDelete() { db_.GrantDelete(); }
  // Nothing listens on port 1: the connection is refused at once.
  OutboxStorePtr NewUnreachableStore() {
    MysqlConfig m = db_.mysql();
    m.port = 1;
    m.connect_timeout_ms = 1000;
    return NewMysqlStore(m);
  }

 private:
  static inline std::atomic<int> count_{0};
  TestDatabase db_;
};

}  // namespace outbox::testing
