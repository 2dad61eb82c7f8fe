#pragma once

#include <cppconn/connection.h>
#include <cppconn/exception.h>
#include <cppconn/prepared_statement.h>

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>

#include "inbox/event.h"
#include "inbox/value_reader.h"
#include "outbox/inbox/config.h"
#include "outbox/inbox/handler.h"

namespace outbox::inbox {

enum class ApplyResult {
  kApplied,      // new to the inbox: the effect was applied and committed
  kDuplicate,    // the inbox already had (consumer, event_key): nothing changed
  kStale,        // new to the inbox but older than the last applied: recorded, not applied
  kParked,       // strict: a later version; parked until the gap fills (inbox row written)
  kRejected,     // the database refused this event's values: counts as a failed attempt
  kUnavailable,  // the database failed (down, lost connection, deadlock...): retry later
  kRetryLater,   // the handler said kRetriable: the partition waits, as for kUnavailable
  kDeadLetter,   // the handler said kPermanent: dead-letter at once
  // The handler returned kOk but its transaction had been rolled back
  // under it (a deadlock or a lost connection it caught): rolled back,
  // retry later, as for kUnavailable.
  kLostTransaction,
};

// A message whose dead letter the broker refused for good (too large, not
// authorized, no such topic): kept in t_inbox_parked instead.
struct Undeliverable {
  Source source;
  std::string detail;       // the refusal and why it was a dead letter
  std::string message_key;  // raw
  std::string headers;      // "name: value" lines
  std::string_view payload;
};

// What t_inbox_aggregate holds for one aggregate: its last applied event.
struct AggregateState {
  int64_t version = 0;  // aggregate_version (0: none carried one)
  int64_t outbox_id = 0;
};

// What t_inbox_parked holds for this consumer, and what retention deleted.
struct ParkedSummary {
  int64_t version_gaps = 0;       // events waiting for an earlier version
  int64_t undeliverable = 0;      // refused dead letters
  int64_t oldest_gap_age_s = 0;   // 0 when there is no gap
  std::string oldest_gap;         // "Order 7 waits for version 2", for the log
  int64_t purged_inbox_rows = 0;  // deleted by retention in this call
};

// Whether the database can take events (InboxStore::Check).
enum class DatabaseCheck {
  kOk,
  kDown,          // no connection, or the server refuses the statements
  kMissingTable,  // a table of the inbox's is not there
};

// A handler's Status other than kOk, thrown from InboxStore::ApplyEffect to
// Apply so that every path out of the transaction goes through its one
// rollback.
struct HandlerFailed {
  Status status;
};

// "MySQL error N (state): message", for logs and ApplyResult's *error.
std::string DescribeSqlError(const sql::SQLException& e);
// The connection to `db`: its timeouts, TLS, no reconnect.
sql::ConnectOptionsMap ConnectOptions(const DbConfig& db);

// The inbox transaction against t_inbox, t_inbox_aggregate (the version
// check's state) and t_inbox_parked (sql/), with the service's Handler
// called inside it. One connection, opened on demand and reopened after a
// failure. Not thread-safe: one per consumer loop. *handler must outlive
// the store.
class InboxStore : private Transaction {
 public:
  // `use_inbox` false skips the inbox row: for the benchmark only (the
  // effect is then applied once per delivery, duplicates included).
  InboxStore(DbConfig db, std::string consumer, VersionCheck check, Handler& handler,
             bool use_inbox = true);
  ~InboxStore() override;

  // In one transaction: insert the inbox row; on a duplicate of
  // uk_consumer_event stop (kDuplicate); otherwise run the version check
  // (version_check.h) and apply the effect, record the event as stale, or
  // park it; with strict, apply after it, in order, the parked versions it
  // lets through (*drained counts them). The handler's Status decides
  // between COMMIT and ROLLBACK (kRetryLater, kRejected, kDeadLetter).
  // *error says why for every result that did not commit.
  ApplyResult Apply(const Event& event, const Source& source, std::string* error,
                    int* drained = nullptr);

  // Parks a refused dead letter (idempotent per source offset). kParked or kUnavailable.
  ApplyResult Park(const Undeliverable& u, std::string* error);

  // Reads t_inbox_parked's summary and, with retention_days > 0, deletes
  // up to `batch` processed inbox rows older than that (never the rows of
  // parked events). False with *error when the database failed.
  bool Housekeep(int retention_days, int batch, ParkedSummary* out, std::string* error);

  // Connects (when not connected) and reads no row from each of the
  // inbox's tables. *error says what is wrong unless kOk.
  DatabaseCheck Check(std::string* error);

  // The connection, opened if need be (the test kit's queries, between
  // Applys); throws std::runtime_error when it cannot be opened.
  sql::Connection& connection();

  // How a parked version's value is read again when its gap fills (null:
  // its wire header only). *reader must outlive the store.
  void set_value_reader(const ValueReader* reader) { value_reader_ = reader; }

  // Test-only: called after the effect, before COMMIT (a failpoint).
  void set_before_commit(std::function<void()> hook) { before_commit_ = std::move(hook); }

 private:
  bool Connect(std::string* error);
  void Close();
  ApplyResult Fail(const std::string& what, int code, std::string* error);
  bool ClaimEvent(const Event& ev);
  ApplyResult Decide(const Event& ev, const Source& source, int* drained);
  void BindAggregate(sql::PreparedStatement& st, int first, const Event& ev);
  AggregateState LockAggregate(const Event& ev);
  ApplyResult ApplyInOrder(const Event& ev, int* drained);
  void ParkGap(const Event& ev, const Source& source, int64_t last_version);
  void ReadParked(ParkedSummary* out);
  int64_t PurgeInbox(int retention_days, int batch);
  // The handler, on this transaction; throws HandlerFailed unless kOk.
  void ApplyEffect(const Event& ev);
  ApplyResult HandlerFailure(const Status& s, std::string* error);
  // Transaction:
  sql::PreparedStatement& Prepare(const std::string& statement) override;
  // Drops least recently used statements the running Apply does not use
  // until at most `keep` remain (or only those it uses).
  void EvictStatements(size_t keep);
  std::unique_ptr<sql::PreparedStatement> PrepareNew(const std::string& statement);
  // After the handler returned Ok: whether this transaction still holds the
  // event's inbox row (false: it was rolled back under the handler).
  bool InboxRowHeld(const Event& ev, std::string* why);
  ApplyResult LostTransaction(const Event& ev, const std::string& why, std::string* error);
  const std::string& consumer() const override { return consumer_; }
  int DrainParked(const Event& ev, int64_t* max_outbox_id);
  void ReadParkedValue(Event* ev);

  const DbConfig db_;
  const std::string consumer_;
  const VersionCheck check_;
  const bool use_inbox_;
  Handler& handler_;
  std::unique_ptr<sql::Connection> conn_;
  // Prepared on conn_.
  std::unique_ptr<sql::PreparedStatement> insert_inbox_, lock_aggregate_, read_aggregate_,
      applied_aggregate_, stale_aggregate_, park_gap_, next_parked_, delete_parked_, inbox_row_;
  // The handler's statements (Transaction::Prepare), prepared on conn_, at
  // most statement_cap_ of them (more only while one Apply uses them all):
  // the least recently used one not used by the running Apply goes first.
  struct CachedStatement {
    std::unique_ptr<sql::PreparedStatement> statement;
    uint64_t used_in = 0;  // the apply_seq_ of its last use
    std::list<std::string>::iterator at;
  };
  std::unordered_map<std::string, CachedStatement> handler_statements_;
  std::list<std::string> recent_;  // handler_statements_' keys, most recently used first
  uint64_t apply_seq_ = 0;         // counts Apply calls
  size_t statement_cap_;           // db_.statement_cache, halved on error 1461
  std::function<void()> before_commit_;
  int connect_error_ = 0;  // the MySQL error of the last failed Connect
  const ValueReader* value_reader_ = nullptr;
};

}  // namespace outbox::inbox
