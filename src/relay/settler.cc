#include "relay/settler.h"

#include <algorithm>
#include <limits>
#include <set>
#include <utility>

#include "common/log.h"

namespace outbox {

namespace {

SettleOp PlanRow(const OutboxRow& row, const PublishOutcome& o, RetryPolicy& retry) {
  SettleOp op;
  op.id = row.id;
  switch (o.result) {
    case PublishResult::kAcked:
      op.kind = SettleKind::kSent;
      break;
    case PublishResult::kNotAttempted:
      op.kind = SettleKind::kRelease;
      break;
    case PublishResult::kRetryable: {
      // retry_count is the row's, written by anyone: at INT's limit the count
      // stays there (and the row is exhausted) instead of overflowing.
      const int failures =
          row.retry_count < std::numeric_limits<int>::max() ? row.retry_count + 1 : row.retry_count;
      op.error = o.error;
      if (retry.Exhausted(failures)) {
        op.kind = SettleKind::kDead;
        op.error = "attempts exhausted (" + std::to_string(failures) + "): " + o.error;
      } else {
        op.kind = SettleKind::kRetry;
        op.backoff_ms = retry.BackoffMs(failures);
      }
      break;
    }
    case PublishResult::kPermanent:
      op.kind = SettleKind::kDead;
      op.error = o.error;
      break;
  }
  return op;
}

// The failure label of an outcome (a failure without one is a broker error).
std::string Reason(const PublishOutcome& o) {
  return std::string(o.reason == FailureReason::kNone ? ToLabel(FailureReason::kBrokerError)
                                                      : ToLabel(o.reason));
}

// The first ten ids, comma-separated, and ",..." when there are more.
std::string FirstIds(const std::vector<int64_t>& ids) {
  std::string out;
  for (size_t i = 0; i < ids.size() && i < 10; ++i) {
    if (i > 0) out += ',';
    out += std::to_string(ids[i]);
  }
  if (ids.size() > 10) out += ",...";
  return out;
}

}  // namespace

std::vector<SettleOp> PlanSettle(const std::vector<OutboxRow>& rows,
                                 const std::vector<PublishOutcome>& outcomes, RetryPolicy& retry) {
  std::vector<SettleOp> ops;
  ops.reserve(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) ops.push_back(PlanRow(rows[i], outcomes[i], retry));
  return ops;
}

double PublishLatencySeconds(const OutboxRow& row, Clock::TimePoint claimed_at,
                             Clock::TimePoint acked_at) {
  const double age = static_cast<double>(row.age_at_claim_us) / 1e6;
  const double since_claim = std::chrono::duration<double>(acked_at - claimed_at).count();
  return std::max(0.0, age + std::max(0.0, since_claim));
}

Settler::Settler(const ServiceConfig& config, const Router* router, OutboxStorePtr store,
                 ServiceStats* metrics, DbHealth* health, ClaimPlanner* planner, uint64_t seed,
                 SettleNotes notes)
    : config_(config),
      router_(router),
      store_(std::move(store)),
      metrics_(metrics),
      health_(health),
      planner_(planner),
      retry_(config.retry, seed),
      notes_(std::move(notes)) {
  NoteGroupRows(0);
}

namespace {

// The shortest retry backoff among the ops, if any is a retry: when a row of
// the batch comes due again without any commit.
std::optional<int64_t> FirstRetryMs(const std::vector<SettleOp>& ops) {
  std::optional<int64_t> first;
  for (const SettleOp& op : ops) {
    if (op.kind == SettleKind::kRetry)
      first = std::min(first.value_or(op.backoff_ms), op.backoff_ms);
  }
  return first;
}

}  // namespace

Status Settler::Settle(const PublishedBatch& done, std::optional<int64_t>* first_retry_ms) {
  const std::vector<SettleOp> ops = PlanSettle(done.batch.rows, done.outcomes, retry_);
  SettleResult result;
  Status s = Write([&](int* commits) {
    Status written = store_->Settle(done.batch.lease_token, ops, &result);
    *commits = result.commits;
    return written;
  });
  if (!s.ok()) return s;
  if (first_retry_ms != nullptr) *first_retry_ms = FirstRetryMs(ops);
  Settled(done, ops, result);
  return Status::Ok();
}

bool AllAcked(const PublishedBatch& done) {
  return std::all_of(done.outcomes.begin(), done.outcomes.end(),
                     [](const PublishOutcome& o) { return o.result == PublishResult::kAcked; });
}

Status Settler::SettleSent(const std::vector<PublishedBatch>& group) {
  std::vector<SentGroup> sent;
  sent.reserve(group.size());
  for (const PublishedBatch& done : group) {
    SentGroup& g = sent.emplace_back();
    g.lease_token = done.batch.lease_token;
    for (const OutboxRow& r : done.batch.rows) g.ids.push_back(r.id);
  }
  std::vector<SettleResult> results;
  // One statement (or one transaction) for the whole group: one commit when
  // it changed rows.
  Status s = Write([&](int* commits) {
    Status written = store_->SettleSent(sent, &results);
    const bool changed = std::any_of(results.begin(), results.end(),
                                     [](const SettleResult& r) { return r.applied > 0; });
    *commits = changed ? 1 : 0;
    return written;
  });
  if (!s.ok()) return s;
  for (size_t i = 0; i < group.size(); ++i) {
    // Acknowledged rows only: every op is SENT, and the retry policy's RNG
    // is not drawn.
    Settled(group[i], PlanSettle(group[i].batch.rows, group[i].outcomes, retry_), results[i]);
  }
  return Status::Ok();
}

Status Settler::Write(const std::function<Status(int* commits)>& statements) {
  if (notes_.before_write) notes_.before_write();
  int commits = 0;
  Status s = statements(&commits);
  if (notes_.after_write) notes_.after_write(s.ok() ? commits : 0);
  health_->NoteAndBeat(s, "settle", beat_, /*settle=*/true);
  return s;
}

void Settler::Settled(const PublishedBatch& done, const std::vector<SettleOp>& ops,
                      const SettleResult& result) {
  Account(done, ops, result);
  LogBatch(done, ops, result);
  NoteFreed(ops, result);
}

void Settler::NoteGroupRows(size_t rows) {
  metrics_->Set(ServiceStats::Gauge::kSentGroupRows, static_cast<double>(rows));
}

void Settler::NoteFreed(const std::vector<SettleOp>& ops, const SettleResult& result) const {
  const bool freed = std::any_of(ops.begin(), ops.end(), [](const SettleOp& op) {
    return op.kind == SettleKind::kRelease || op.kind == SettleKind::kDead;
  });
  if (freed && result.applied > 0 && notes_.freed) notes_.freed();
}

void Settler::Account(const PublishedBatch& done, const std::vector<SettleOp>& ops,
                      const SettleResult& result) {
  // A stale row's transition was not ours: it is neither counted as published
  // or DEAD nor logged so, but its failed attempt is still a failure.
  const std::set<int64_t> stale(result.stale_ids.begin(), result.stale_ids.end());
  std::vector<SettledRow> settled;
  settled.reserve(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    const OutboxRow& row = done.batch.rows[i];
    const PublishOutcome& o = done.outcomes[i];
    const SettleKind kind = ops[i].kind;
    bool gone = kind == SettleKind::kSent ||
                (kind == SettleKind::kDead && config_.dead_policy == DeadPolicy::kSkip);
    settled.push_back({row.id, row.aggregate, gone && result.stale == 0});
    if (kind == SettleKind::kRelease) {
      // Not attempted: nothing to count, except a full producer queue, which
      // is a failure to publish (that costs no attempt).
      if (o.reason != FailureReason::kNone) metrics_->AddPublishFailure(Reason(o));
      continue;
    }
    if (kind != SettleKind::kSent) metrics_->AddPublishFailure(Reason(o));
    if (stale.count(row.id)) continue;
    // Its request was on the wire: the broker may have written the copy this
    // retry sends again.
    if (kind == SettleKind::kRetry && o.maybe_written)
      metrics_->Add(ServiceStats::Counter::kDuplicateRiskMaybeWritten);
    AccountRow(done, i, ops[i]);
  }
  if (result.stale > 0) metrics_->Add(ServiceStats::Counter::kStaleTransitions, result.stale);
  if (planner_ != nullptr) planner_->OnSettled(settled);
}

void Settler::AccountRow(const PublishedBatch& done, size_t i, const SettleOp& op) {
  const OutboxRow& row = done.batch.rows[i];
  const TraceparentCheck trace = RowTraceparent(row);
  if (op.kind == SettleKind::kSent) {
    metrics_->AddPublished(router_->TopicFor(row));
    metrics_->Observe(ServiceStats::Histogram::kPublishLatency,
                      PublishLatencySeconds(row, done.claimed_at, done.finished_at));
    if (HasTraceparent(row) && !trace.valid) NoteInvalidTrace(row, trace);
  } else if (op.kind == SettleKind::kDead) {
    metrics_->Add(ServiceStats::Counter::kEventsDead);
    std::vector<LogField> fields = {{"service", config_.name},
                                    {"outbox_id", row.id},
                                    {"event_type", row.event_type},
                                    {"event_key", row.event_key},
                                    {"aggregate_type", row.aggregate.type},
                                    {"aggregate_id", row.aggregate.id},
                                    {"reason", Reason(done.outcomes[i])},
                                    {"error", op.error}};
    if (trace.valid) fields.emplace_back("trace_id", trace.trace_id);
    LogError("row is DEAD", fields);
  }
}

void Settler::NoteInvalidTrace(const OutboxRow& row, const TraceparentCheck& trace) {
  metrics_->Add(ServiceStats::Counter::kTraceInvalid);
  // At most 128 bytes of the value: the column may be wide.
  LogWarn("traceparent is not valid W3C trace context: the event was sent without it",
          {{"service", config_.name},
           {"outbox_id", row.id},
           {"event_type", row.event_type},
           {"aggregate_type", row.aggregate.type},
           {"aggregate_id", row.aggregate.id},
           {"traceparent", std::string_view(*row.traceparent).substr(0, 128)},
           {"error", trace.why}});
}

void Settler::LogReleased(const PublishedBatch& done) {
  const auto queue_full = std::count_if(done.outcomes.begin(), done.outcomes.end(), [](auto& o) {
    return o.reason == FailureReason::kQueueFull;
  });
  if (queue_full > 0)
    LogWarn(
        "events not handed to the producer, its local queue is full (kafka.properties "
        "queue.buffering.max.messages / queue.buffering.max.kbytes): released without counting "
        "an attempt",
        {{"service", config_.name},
         {"count", static_cast<int64_t>(queue_full)},
         {"reason", ToLabel(FailureReason::kQueueFull)}});
  const auto purged = std::count_if(done.outcomes.begin(), done.outcomes.end(),
                                    [](auto& o) { return o.reason == FailureReason::kPurged; });
  if (purged == 0) return;
  // The producer takes its whole queue back: a batch whose own budget
  // (claim + lease/2) had not ended went with another's, or with an outage.
  const auto budget_end = done.claimed_at + std::chrono::milliseconds(config_.lease_ms / 2);
  const int64_t budget_left_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(budget_end - done.finished_at).count();
  LogWarn(
      "events taken back from the producer's queue unsent (their claim's budget ended, or no "
      "broker was reachable): released without counting an attempt",
      {{"service", config_.name},
       {"count", static_cast<int64_t>(purged)},
       {"reason", ToLabel(FailureReason::kPurged)},
       {"budget_left_ms", budget_left_ms}});
}

void Settler::LogBatch(const PublishedBatch& done, const std::vector<SettleOp>& ops,
                       const SettleResult& result) {
  if (result.stale > 0) {
    LogWarn(
        "rows of a batch were no longer ours when settled: the lease expired and another relay "
        "took them over, the claim's commit failed after the batch was published, or someone "
        "changed or deleted them; left as they are",
        {{"service", config_.name},
         {"count", result.stale},
         {"outbox_ids", FirstIds(result.stale_ids)}});
  }
  LogReleased(done);
  const auto retried = std::count_if(
      ops.begin(), ops.end(), [](const SettleOp& op) { return op.kind == SettleKind::kRetry; });
  if (retried > 0) {
    auto first = std::find_if(done.outcomes.begin(), done.outcomes.end(),
                              [](auto& o) { return o.result == PublishResult::kRetryable; });
    const PublishOutcome none;
    const PublishOutcome& example = first != done.outcomes.end() ? *first : none;
    const auto maybe_written = std::count_if(done.outcomes.begin(), done.outcomes.end(),
                                             [](auto& o) { return o.maybe_written; });
    LogWarn("events failed and will be retried",
            {{"service", config_.name},
             {"count", static_cast<int64_t>(retried)},
             {"first_id", done.batch.rows.front().id},
             {"last_id", done.batch.rows.back().id},
             {"reason", Reason(example)},
             {"error", example.error},
             {"maybe_written", static_cast<int64_t>(maybe_written)}});
  }
}

}  // namespace outbox
