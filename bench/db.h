#pragma once

// The benchmark's own database access: setup, workloads, counters and the
// in-server drain procedure that measures the database limit.

#include <cppconn/connection.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace outbox::bench {

struct DbParams {
  std::string host = "127.0.0.1";
  int port = 3306;
  std::string user = "root";
  std::string password;
  std::string database = "outbox_bench";
};

// One connection (not thread-safe). Throws sql::SQLException on errors: the
// benchmark has no use for a half-measured run.
class Db {
 public:
  // Connects and selects params.database, creating it when `create` is set.
  explicit Db(const DbParams& params, bool create = false);

  void Exec(const std::string& sql);
  int64_t QueryInt(const std::string& sql);
  std::string QueryString(const std::string& sql);
  // The first column of every row, as strings.
  std::vector<std::string> QueryColumn(const std::string& sql);
  // SHOW GLOBAL STATUS, numeric values only.
  std::map<std::string, double> GlobalStatus();
  // Waits until InnoDB's purge has caught up (history list length below
  // `max_history`) so one run's undo work does not slow the next; returns the
  // seconds waited.
  double WaitPurge(double timeout_s, int64_t max_history = 2000);

  // --- workloads -----------------------------------------------------------
  // Drops and creates `table` (in `database`, default: this connection's)
  // exactly as README "The outbox table" defines t_outbox.
  void CreateOutbox(const std::string& table, const std::string& database = "");
  // A template table `name` holding aggregates x per_aggregate NEW events
  // with ids 1..N. Events of different aggregates interleave uniformly at
  // random (seeded, so every run gets the same table); within an aggregate
  // the k-th event by id is its version k.
  void BuildTemplate(const std::string& name, int64_t aggregates, int per_aggregate);
  // The same shape of table, every event an OrderPaid whose payload (about
  // 560 bytes) fits bench/schemas/order_paid.avsc: the formats stage's.
  void BuildOrderPaidTemplate(const std::string& name, int64_t aggregates, int per_aggregate);
  // Copies the template into `table` with ids shifted by `id_offset` (and,
  // when shifted, event keys suffixed so they stay unique), as NEW rows
  // created and due now, in one transaction (one commit makes the whole
  // backlog visible at once).
  void LoadTemplate(const std::string& table, const std::string& tpl, int64_t id_offset);
  // Appends `rows` SENT rows (ids 1..rows, created a day ago) to `table`.
  void AddSentRows(const std::string& table, int64_t rows);

  // --- the database limit ----------------------------------------------------
  // (Re)creates bench_drain(batch, lease_s): the relay's claim and settle
  // statements for ordering none (src/outbox/mysql_store.cc ClaimDue,
  // MarkSendingAndCommit, Settle) run in a loop inside the server on
  // `table` until nothing is left.
  void CreateDrainProcedure(const std::string& table);
  // Runs it on this connection under READ COMMITTED (the relay's isolation
  // level); returns the events it settled.
  int64_t CallDrain(int batch_size, int lease_s);

 private:
  // BuildTemplate's table with SQL expressions over id, agg (the aggregate)
  // and ver (its version) for the event type and the payload.
  void FillTemplate(const std::string& name, int64_t aggregates, int per_aggregate,
                    const std::string& event_type, const std::string& payload);

  std::unique_ptr<sql::Connection> conn_;
};

}  // namespace outbox::bench
