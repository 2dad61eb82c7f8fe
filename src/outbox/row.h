#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace outbox {

// The identity that per-aggregate ordering is about.
struct AggregateKey {
  std::string type;
  int64_t id = 0;
  bool operator==(const AggregateKey&) const = default;
  auto operator<=>(const AggregateKey&) const = default;
};

struct AggregateKeyHash {
  size_t operator()(const AggregateKey& k) const {
    return std::hash<int64_t>{}(k.id) * 31 + std::hash<std::string>{}(k.type);
  }
};

// One claimed outbox row, as the relay publishes it.
struct OutboxRow {
  int64_t id = 0;
  AggregateKey aggregate;
  std::string event_type;
  std::string event_key;
  std::string payload;          // the payload column's bytes, as the database returned them
  int retry_count = 0;          // failed attempts before this claim
  int64_t created_at_unix = 0;  // created_at read in the database's zone, as unix seconds
  // The row's age when it was claimed, on the database's clock:
  // NOW(6) - created_at in microseconds, computed by the claim statement
  // itself, so neither the relay host's clock nor the server's zone enters
  // it (latency = this + the claim-to-ack time on the steady clock). Its
  // resolution is the column's: whole seconds for DATETIME. Negative when
  // created_at lies in the future (a writer's skewed clock).
  int64_t age_at_claim_us = 0;
  std::optional<std::string> topic;    // optional `topic` column
  std::optional<std::string> headers;  // optional `headers` column (JSON text)
  // Optional `aggregate_version` column: the event's version within its
  // aggregate, sent as the aggregate_version header (README "Message format").
  std::optional<int64_t> aggregate_version;
  // Optional `traceparent` and `tracestate` columns: the W3C trace context of
  // the transaction that wrote the row, as written (checked by the router,
  // src/relay/router.h; sent only when the traceparent is valid).
  std::optional<std::string> traceparent;
  std::optional<std::string> tracestate;
  // Optional `schema_id` column: the Schema Registry id of the payload's
  // schema; with a value_format other than bytes it wins over the subject
  // (docs/FORMATS.md "Which schema").
  std::optional<int32_t> schema_id = std::nullopt;
  bool reclaimed = false;  // was SENDING with an expired lease when claimed
};

// A row as the per-aggregate planner sees it while scanning.
struct WindowRow {
  int64_t id = 0;
  AggregateKey aggregate;
  bool sending = false;  // status SENDING (else NEW)
  bool due = false;      // next_retry_at <= NOW(): claimable (or lease expired)
};

// A batch claimed under one lease. `lease_token` is the exact next_retry_at
// value the claim wrote; every transition out of SENDING is conditional on
// it, which fences a relay whose lease was taken over.
struct ClaimedBatch {
  std::string lease_token;
  std::vector<OutboxRow> rows;
  int reclaimed = 0;
};

enum class SettleKind { kSent, kRetry, kDead, kRelease };

struct SettleOp {
  int64_t id = 0;
  SettleKind kind = SettleKind::kSent;
  int64_t backoff_ms = 0;  // kRetry: next_retry_at = NOW() + backoff
  std::string error;       // kRetry/kDead: written to last_error when the column exists
};

struct SettleResult {
  int applied = 0;
  int stale = 0;  // transitions that found the claim no longer ours (0 rows affected)
  // Which rows those were, so that nothing is counted or logged as done that
  // this relay did not do: every kSent, kRetry and kDead op is accounted for;
  // a stale kRelease is only counted.
  std::vector<int64_t> stale_ids;
  // The settle's write commits that changed at least one row: each is an
  // event in the binary log that wakes `wakeup: binlog` relays
  // (WakeupSource::BeginOwnChange). At most kMaxCommits.
  int commits = 0;
  static constexpr int kMaxCommits = 2;
};

// One claim's acknowledged rows, to be marked SENT under its lease token
// (OutboxStore::SettleSent).
struct SentGroup {
  std::string lease_token;
  std::vector<int64_t> ids;
};

struct DeadHead {
  AggregateKey aggregate;
  int64_t min_dead_id = 0;
};

// What one statement read of the table's head (OutboxStore::ReadHead): the
// claim round at everyday rates, where the head holds a few rows.
struct HeadQuery {
  bool ordered = false;     // per_aggregate: every unsent row; none: due rows
  bool dead_heads = false;  // per_aggregate with dead_policy: block
  int limit = 0;
  int64_t lease_ms = 0;
};
struct HeadRead {
  // The rows read (as a claim returns them, `reclaimed` for an expired
  // lease), in id order, and the same as the planner sees them.
  std::vector<OutboxRow> rows;
  std::vector<WindowRow> window;
  std::string lease_token;  // NOW() + lease at the read: the token ClaimRow writes
  // With HeadQuery::dead_heads and at least one row: the aggregates with a
  // DEAD row, as DeadHeads gives them, from the same read.
  std::vector<DeadHead> dead_heads;
  // Fewer rows than the limit: every row that matched is here.
  bool complete(const HeadQuery& q) const { return static_cast<int>(rows.size()) < q.limit; }
};

struct TableStats {
  int64_t backlog = 0;  // NEW + SENDING
  double oldest_unsent_age_s = 0;
  int64_t dead = 0;
  int64_t unknown_status = 0;  // rows whose status is none of the four
  // Seconds from the read until the first NEW or SENDING row that is not due
  // yet becomes due (a retry backoff ending, a lease expiring); none when
  // every unsent row is due already, or there is none. What the claim loop
  // sleeps until when only time can make a row claimable (src/relay/relay.cc).
  std::optional<double> next_due_in_s;
};

}  // namespace outbox
