#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace outbox {
namespace binlog {

// What one committed transaction touched, as far as the binary log says.
struct Commit {
  struct Table {
    std::string database;
    std::string table;  // empty: some table of `database` (a statement-format write)
    // Rows may have been inserted (WRITE_ROWS, or a statement that is not an
    // UPDATE or DELETE). False: only updates and deletes, such as the relay's
    // own claims and settles, which need no commit-race retry.
    bool insert = false;
    bool operator==(const Table& o) const { return database == o.database && table == o.table; }
  };
  // ROW events name their tables. A statement-format write names the
  // session's default database, which need not be the one written to
  // (`INSERT INTO other_db.t ...`): it adds that database and every database
  // its first kStatementPrefix bytes qualify a name with (`other_db.`).
  std::vector<Table> tables;
  // The log held something that names no table (an event the library cannot
  // read, XA COMMIT, an incident): wake every subscriber of the server.
  bool all = false;
  bool empty() const { return tables.empty() && !all; }
};

inline constexpr size_t kStatementPrefix = 1024;

// The names a statement qualifies with a dot (`db`.t, db.t): a superset of
// the databases it writes to by name (a number such as 1.5 adds "1").
std::vector<std::string> QualifiedNames(std::string_view statement);

// Turns the event sequence of a binary log into committed transactions.
// Feed it the events in order; the calls that can end a transaction return
// true and fill *out when one ended having touched something.
//
// Boundaries: MariaDB opens a group with a GTID event (FL_STANDALONE: a
// single statement, no COMMIT), MySQL with a GTID event and a "BEGIN"
// query; a group ends with an XID event (InnoDB), a "COMMIT"/"ROLLBACK"
// query (non-transactional engines), or, outside a transaction, with the end
// of its statement. Single-threaded; no I/O; see tests/binlog/binlog_tracker_test.cc.
class TransactionTracker {
 public:
  // MariaDB GTID_EVENT (standalone = FL_STANDALONE) or MySQL GTID/ANONYMOUS_GTID
  // (standalone = true: MySQL opens its transactions with a BEGIN query).
  void OnGtid(bool standalone);
  // QUERY_EVENT: `database` is the session's default database.
  bool OnQuery(std::string_view database, std::string_view statement, Commit* out);
  void OnTableMap(uint64_t table_id, std::string_view database, std::string_view table);
  // A WRITE (`insert`), UPDATE or DELETE_ROWS event of the table mapped as
  // `table_id`; `statement_end` is its STMT_END_F flag.
  bool OnRows(uint64_t table_id, bool insert, bool statement_end, Commit* out);
  bool OnXid(Commit* out);
  // An event that may change tables but names none (unreadable, INCIDENT).
  void OnUnknown();
  // Hands out anything pending (the stream broke mid-transaction: wake
  // rather than lose it) and resets.
  bool Flush(Commit* out);

 private:
  bool End(Commit* out);
  void AddTable(std::string_view database, std::string_view table, bool insert);

  bool in_transaction_ = false;
  std::map<uint64_t, Commit::Table> table_ids_;  // TABLE_MAP ids of this transaction
  Commit pending_;
};

}  // namespace binlog
}  // namespace outbox
