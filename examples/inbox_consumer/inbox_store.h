#pragma once

#include <cppconn/connection.h>
#include <cppconn/prepared_statement.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "consumer_config.h"

namespace inbox {

// One event as the relay publishes it (docs/CONSUMERS.md): the headers and
// the key, validated.
struct Event {
  std::string event_key;       // header event_key: the idempotency key
  std::string event_type;      // header event_type
  std::string aggregate_type;  // header aggregate_type
  int64_t aggregate_id = 0;    // the message key, decimal
  int64_t outbox_id = 0;       // header outbox_id: t_outbox.id, grows within an aggregate
};

enum class ApplyResult {
  kApplied,      // new to the inbox: the effect was applied and committed
  kDuplicate,    // the inbox already had (consumer, event_key): nothing changed
  kRejected,     // the database refused this event's values: counts as a failed attempt
  kUnavailable,  // the database failed (down, lost connection, deadlock...): retry later
};

// The inbox transaction against t_inbox and t_aggregate_effect
// (sql/t_inbox.sql, sql/t_aggregate_effect.sql). One connection, opened on
// demand and reopened after a failure. Not thread-safe: one per consumer loop.
class InboxStore {
 public:
  // `use_inbox` false skips the inbox row: for the benchmark only (the
  // effect is then applied once per delivery, duplicates included).
  InboxStore(DbConfig db, std::string consumer, bool use_inbox = true);
  ~InboxStore();

  // In one transaction: insert the inbox row; on a duplicate of
  // uk_consumer_event stop (kDuplicate); otherwise apply the effect and
  // commit. *error says why for kRejected and kUnavailable.
  ApplyResult Apply(const Event& event, std::string* error);

  // Test-only: called after the effect, before COMMIT (a failpoint).
  void set_before_commit(std::function<void()> hook) { before_commit_ = std::move(hook); }

 private:
  bool Connect(std::string* error);
  void Close();

  const DbConfig db_;
  const std::string consumer_;
  const bool use_inbox_;
  std::unique_ptr<sql::Connection> conn_;
  std::unique_ptr<sql::PreparedStatement> insert_inbox_;  // prepared on conn_
  std::unique_ptr<sql::PreparedStatement> apply_effect_;
  std::function<void()> before_commit_;
};

}  // namespace inbox
