#pragma once

#include <cppconn/connection.h>
#include <cppconn/exception.h>
#include <cppconn/prepared_statement.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "inbox/event.h"
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

// "MySQL error N (state): message", for logs and ApplyResult's *error.
std::string DescribeSqlError(const sql::SQLException& e);

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
  const std::string& consumer() const override { return consumer_; }
  int DrainParked(const Event& ev, int64_t* max_outbox_id);

  const DbConfig db_;
  const std::string consumer_;
  const VersionCheck check_;
  const bool use_inbox_;
  Handler& handler_;
  std::unique_ptr<sql::Connection> conn_;
  // Prepared on conn_.
  std::unique_ptr<sql::PreparedStatement> insert_inbox_, lock_aggregate_, read_aggregate_,
      applied_aggregate_, stale_aggregate_, park_gap_, next_parked_, delete_parked_;
  // The handler's statements (Transaction::Prepare), prepared on conn_.
  std::map<std::string, std::unique_ptr<sql::PreparedStatement>> handler_statements_;
  std::function<void()> before_commit_;
};

}  // namespace outbox::inbox
