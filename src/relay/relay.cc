#include "relay/relay.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <limits>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace outbox {

namespace {
constexpr int kMaxPagesPerRound = 8;
constexpr auto kReclaimEvery = std::chrono::seconds(1);
constexpr auto kMaxPassAge = std::chrono::seconds(10);
// After a round that claimed events the next poll comes this soon: events
// arriving one by one are claimed within a few milliseconds.
constexpr auto kActivePoll = std::chrono::milliseconds(1);
}  // namespace

std::chrono::milliseconds NextPollWait(std::chrono::milliseconds previous, size_t claimed,
                                       std::chrono::milliseconds poll_interval) {
  if (claimed > 0) return std::min(kActivePoll, poll_interval);
  return std::min(std::max(previous, kActivePoll) * 2, poll_interval);
}

Relay::Relay(RelayOptions options)
    : options_(std::move(options)),
      router_(options_.config),
      metrics_(*options_.metrics),
      claim_store_(options_.store_factory()),
      scan_store_(options_.store_factory()),
      planner_(options_.config.dead_policy),
      settle_store_(options_.store_factory()),
      retry_(options_.config.retry, options_.seed),
      house_store_(options_.store_factory()) {
  metrics_.database_up->Set(0);
  guard_->relay = this;
}

Relay::~Relay() {
  Stop(std::chrono::milliseconds(0));
  std::lock_guard<std::mutex> lock(guard_->mu);  // waits out a completion in progress
  guard_->relay = nullptr;
}

std::string Relay::LastError() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_error_;
}

void Relay::NoteDb(const Status& s, const char* what, bool settle) {
  std::lock_guard<std::mutex> lock(mu_);
  if (settle) settle_failing_ = !s.ok();
  // While the settle of a published batch fails (a trigger, a CHECK
  // constraint or a revoked grant that rejects it), other statements that
  // work do not make the service healthy: its rows wait in SENDING and
  // claiming stops at max_inflight_batches. It stays reported until the
  // settle applies.
  if (s.ok() && settle_failing_) return;
  if (s.ok()) {
    if (db_logged_down_) {
      spdlog::info("service {}: database reachable again", name());
      db_logged_down_ = false;
    }
    db_up_ = true;
    metrics_.database_up->Set(1);
    last_error_.clear();
    return;
  }
  db_up_ = false;
  metrics_.database_up->Set(0);
  if (!db_logged_down_ || last_error_ != s.message()) {
    spdlog::warn("service {}: {} failed: {}", name(), what, s.message());
    db_logged_down_ = true;
  }
  last_error_ = s.message();
}

// ---------------------------------------------------------------- claiming

Relay::Round Relay::ClaimUnordered(ClaimedBatch* batch) {
  const ServiceConfig& c = options_.config;
  auto now = options_.clock->Now();
  bool reclaim = now >= next_reclaim_;
  if (!last_round_full_ && !reclaim) {
    // The idle poll: one index probe, no transaction.
    bool due = false;
    Status s = claim_store_->HasDue(false, &due);
    NoteDb(s, "poll");
    if (!s.ok()) return Round::kFailed;
    if (!due) return Round::kIdle;
  }
  if (reclaim) next_reclaim_ = now + kReclaimEvery;
  Status s = claim_store_->ClaimDue(c.batch_size, c.lease_ms, reclaim, batch);
  NoteDb(s, "claim");
  if (!s.ok()) return Round::kFailed;
  return static_cast<int>(batch->rows.size()) >= c.batch_size ? Round::kMore : Round::kIdle;
}

void Relay::EndPass() {
  scan_store_->EndSnapshot();
  const PassStats& p = pass_stats_;
  auto ms = [](std::chrono::nanoseconds d) { return static_cast<double>(d.count()) / 1e6; };
  spdlog::debug(
      "service {}: pass ended after {:.1f} ms: {} round(s), {} page(s), {} row(s) scanned, {} "
      "claimed ({} deferred left); scan {:.1f} ms, claim {:.1f} ms",
      name(), ms(std::chrono::steady_clock::now() - p.started), p.rounds, p.pages, p.scanned,
      p.claimed, planner_.deferred_count(), ms(p.scan), ms(p.claim));
  pass_stats_ = PassStats{};
  planner_.EndPass();
}

Relay::Round Relay::ClaimOrdered(ClaimedBatch* batch) {
  const ServiceConfig& c = options_.config;
  // A long pass holds an old snapshot: it misses rows other relays claimed
  // since (wasted candidates) and keeps InnoDB from purging. Start afresh.
  if (planner_.in_pass() && options_.clock->Now() - pass_started_ > kMaxPassAge) EndPass();
  if (!planner_.in_pass()) {
    // The idle poll: one index probe outside any snapshot. A row backing off
    // or leased by a live relay starts no pass until it is due. After a pass
    // that claimed rows more are likely, and the probe would only walk the
    // status index entries those claims left behind for purge: start the
    // next pass directly.
    if (!last_pass_claimed_) {
      bool due = false;
      Status s = claim_store_->HasDue(true, &due);
      NoteDb(s, "poll");
      if (!s.ok()) return Round::kFailed;
      if (!due) return Round::kIdle;
    }
    // The pass reads everything from one snapshot (see OutboxStore::
    // BeginSnapshot), including its starting id and the DEAD rows: a row
    // below an id read before the snapshot could have committed in between,
    // and a row replayed after it is NEW but invisible to this pass's scan.
    std::optional<int64_t> min_id;
    std::vector<DeadHead> heads;
    last_pass_claimed_ = false;
    Status s = scan_store_->BeginSnapshot();
    if (s.ok()) s = scan_store_->MinPendingId(&min_id);
    NoteDb(s, "poll");
    if (s.ok() && min_id && c.dead_policy == DeadPolicy::kBlock) {
      s = scan_store_->DeadHeads(&heads);
      NoteDb(s, "read DEAD aggregates");
    }
    if (!s.ok() || !min_id) {
      scan_store_->EndSnapshot();
      return s.ok() ? Round::kIdle : Round::kFailed;
    }
    planner_.StartPass(*min_id, heads);
    pass_started_ = options_.clock->Now();
    pass_stats_.started = std::chrono::steady_clock::now();
  }
  ++pass_stats_.rounds;
  // Rows deferred behind this relay's own deliveries that are now free go
  // first, then the rest of the last page, then new pages.
  planner_.BeginRound(c.batch_size);
  planner_.ConsumeBuffered(c.batch_size);
  const int page = std::max(4 * c.batch_size, 1000);
  std::vector<WindowRow> rows;
  for (int i = 0;
       i < kMaxPagesPerRound && !planner_.pass_exhausted() && !planner_.full(c.batch_size); ++i) {
    auto t = std::chrono::steady_clock::now();
    Status s = scan_store_->ScanWindow(planner_.cursor(), page, &rows);
    pass_stats_.scan += std::chrono::steady_clock::now() - t;
    NoteDb(s, "scan");
    if (!s.ok()) {
      EndPass();
      return Round::kFailed;
    }
    ++pass_stats_.pages;
    pass_stats_.scanned += static_cast<int64_t>(rows.size());
    planner_.Consume(std::move(rows), page, c.batch_size);
  }
  bool exhausted = planner_.pass_exhausted();
  if (!planner_.candidates().empty()) {
    auto t = std::chrono::steady_clock::now();
    Status s = claim_store_->ClaimIds(
        planner_.candidates(), c.lease_ms,
        [this](const std::vector<OutboxRow>& locked) { return planner_.Choose(locked); }, batch);
    pass_stats_.claim += std::chrono::steady_clock::now() - t;
    NoteDb(s, "claim");
    if (!s.ok()) {
      EndPass();
      return Round::kFailed;
    }
    planner_.OnClaimed(batch->rows);
    pass_stats_.claimed += static_cast<int64_t>(batch->rows.size());
    last_pass_claimed_ = last_pass_claimed_ || !batch->rows.empty();
  }
  // A pass read to its end stays open while it still claims (deferred rows
  // whose older events were delivered meanwhile); the next one starts when
  // it claims nothing.
  if (exhausted && batch->rows.empty()) {
    EndPass();
    return Round::kIdle;
  }
  return Round::kMore;
}

Status Relay::ProbeDatabase() {
  bool due = false;
  Status s = claim_store_->HasDue(options_.config.ordering == Ordering::kPerAggregate, &due);
  NoteDb(s, "poll");
  return s;
}

Relay::Round Relay::ClaimOnce() {
  const ServiceConfig& c = options_.config;
  if (inflight_.load() >= c.max_inflight_batches) return Round::kBusy;
  auto t0 = options_.clock->Now();
  ClaimedBatch batch;
  Round r = c.ordering == Ordering::kPerAggregate ? ClaimOrdered(&batch) : ClaimUnordered(&batch);
  if (r == Round::kFailed) return r;
  metrics_.poll_duration->Observe(
      std::chrono::duration<double>(options_.clock->Now() - t0).count());
  metrics_.last_poll->Set(options_.clock->UnixNow());
  last_round_full_ = r == Round::kMore;
  last_claimed_ = batch.rows.size();
  if (!batch.rows.empty()) {
    if (batch.reclaimed > 0) {
      metrics_.leases_reclaimed->Increment(batch.reclaimed);
      spdlog::info("service {}: reclaimed {} row(s) whose lease expired", name(), batch.reclaimed);
    }
    Publish(std::move(batch), t0);
  }
  return r;
}

void Relay::Publish(ClaimedBatch batch, Clock::TimePoint claimed_at) {
  const size_t n = batch.rows.size();
  auto outcomes = std::make_shared<std::vector<PublishOutcome>>(n);
  std::vector<Message> messages;
  std::vector<size_t> msg_row;  // message index -> row index
  std::vector<std::vector<size_t>> chains;
  std::unordered_map<AggregateKey, size_t, AggregateKeyHash> chain_of;
  // Aggregates a row of which could not be routed.
  std::unordered_set<AggregateKey, AggregateKeyHash> broken;
  const bool ordered = options_.config.ordering == Ordering::kPerAggregate;
  for (size_t i = 0; i < n; ++i) {
    const OutboxRow& row = batch.rows[i];
    if (ordered && broken.count(row.aggregate)) {
      (*outcomes)[i] = {PublishResult::kNotAttempted, "",
                        "an earlier event of its aggregate failed"};
      continue;
    }
    std::string err;
    std::optional<Message> m = router_.Route(row, &err);
    if (!m) {
      (*outcomes)[i] = {PublishResult::kPermanent, "routing", err};
      if (ordered) broken.insert(row.aggregate);
      continue;
    }
    size_t mi = messages.size();
    messages.push_back(std::move(*m));
    msg_row.push_back(i);
    if (ordered) {
      auto [it, fresh] = chain_of.try_emplace(row.aggregate, chains.size());
      if (fresh) chains.emplace_back();
      chains[it->second].push_back(mi);
    } else {
      chains.push_back({mi});
    }
  }
  ++inflight_;
  auto shared = std::make_shared<ClaimedBatch>(std::move(batch));
  // A chain message started by then is acknowledged or failed within
  // message.timeout.ms (lease/2, see kafka_config.cc), a second before the
  // lease ends: the batch settles while the claim is still ours.
  auto elapsed =
      std::chrono::duration_cast<std::chrono::milliseconds>(options_.clock->Now() - claimed_at);
  auto budget = std::max(std::chrono::milliseconds(0),
                         std::chrono::milliseconds(options_.config.lease_ms / 2 - 1000) - elapsed);
  options_.publisher->Publish(
      std::move(messages), std::move(chains), budget,
      [guard = guard_, shared, outcomes,
       msg_row = std::move(msg_row)](std::vector<PublishOutcome> results) {
        // Not `this`: the Relay may be gone (ThreadSanitizer found the
        // notify below running on a destroyed condition variable).
        std::lock_guard<std::mutex> alive(guard->mu);
        Relay* self = guard->relay;
        if (self == nullptr) return;  // stopped and destroyed: the lease expires
        for (size_t mi = 0; mi < results.size(); ++mi)
          (*outcomes)[msg_row[mi]] = std::move(results[mi]);
        Completed done{std::move(*shared), std::move(*outcomes), self->options_.clock->UnixNow()};
        std::lock_guard<std::mutex> lock(self->mu_);
        self->completed_.push_back(std::move(done));
        self->cv_.notify_all();
      });
}

// ---------------------------------------------------------------- settling

Status Relay::SettleOne(Completed& done) {
  const ServiceConfig& c = options_.config;
  std::vector<SettleOp> ops;
  ops.reserve(done.batch.rows.size());
  for (size_t i = 0; i < done.batch.rows.size(); ++i) {
    const OutboxRow& row = done.batch.rows[i];
    const PublishOutcome& o = done.outcomes[i];
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
        // retry_count is the row's, written by anyone: at INT's limit the
        // count stays there (and the row is exhausted) instead of overflowing.
        const int failures = row.retry_count < std::numeric_limits<int>::max() ? row.retry_count + 1
                                                                               : row.retry_count;
        op.error = o.error;
        if (retry_.Exhausted(failures)) {
          op.kind = SettleKind::kDead;
          op.error = "attempts exhausted (" + std::to_string(failures) + "): " + o.error;
        } else {
          op.kind = SettleKind::kRetry;
          op.backoff_ms = retry_.BackoffMs(failures);
        }
        break;
      }
      case PublishResult::kPermanent:
        op.kind = SettleKind::kDead;
        op.error = o.error;
        break;
    }
    ops.push_back(std::move(op));
  }
  SettleResult result;
  Status s = settle_store_->Settle(done.batch.lease_token, ops, &result);
  NoteDb(s, "settle", /*settle=*/true);
  if (!s.ok()) return s;

  // Metrics and logs, once the outcome is recorded. A stale row's transition
  // was not ours: it is neither counted as published or DEAD nor logged so.
  const std::set<int64_t> stale(result.stale_ids.begin(), result.stale_ids.end());
  std::vector<SettledRow> settled;
  settled.reserve(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    const OutboxRow& row = done.batch.rows[i];
    const PublishOutcome& o = done.outcomes[i];
    bool gone = ops[i].kind == SettleKind::kSent ||
                (ops[i].kind == SettleKind::kDead && c.dead_policy == DeadPolicy::kSkip);
    settled.push_back({row.id, row.aggregate, gone && result.stale == 0});
    if (stale.count(row.id)) {
      if (ops[i].kind != SettleKind::kSent)
        metrics_.PublishFailures(o.reason.empty() ? "broker_error" : o.reason).Increment();
      continue;
    }
    switch (ops[i].kind) {
      case SettleKind::kSent: {
        metrics_.Published(router_.TopicFor(row)).Increment();
        double latency = done.finished_unix - static_cast<double>(row.created_at_unix);
        metrics_.publish_latency->Observe(std::max(0.0, latency));
        break;
      }
      case SettleKind::kRetry:
        metrics_.PublishFailures(o.reason.empty() ? "broker_error" : o.reason).Increment();
        break;
      case SettleKind::kDead:
        metrics_.PublishFailures(o.reason.empty() ? "broker_error" : o.reason).Increment();
        metrics_.events_dead->Increment();
        spdlog::error("service {}: row {} ({} {} of {} {}) is DEAD: {}", name(), row.id,
                      row.event_type, row.event_key, row.aggregate.type, row.aggregate.id,
                      ops[i].error);
        break;
      case SettleKind::kRelease:
        // Not attempted: normally nothing to count, but a full producer
        // queue is a failure to publish (that costs no attempt).
        if (!o.reason.empty()) metrics_.PublishFailures(o.reason).Increment();
        break;
    }
  }
  if (result.stale > 0) {
    metrics_.stale_transitions->Increment(result.stale);
    std::string ids;
    for (size_t i = 0; i < result.stale_ids.size() && i < 10; ++i)
      ids += (i ? ", " : " (ids ") + std::to_string(result.stale_ids[i]);
    if (!ids.empty()) ids += result.stale_ids.size() > 10 ? ", ...)" : ")";
    spdlog::warn(
        "service {}: {} row(s) of a batch were no longer ours when settled{}: the lease expired "
        "and another relay took them over, or someone changed or deleted them; left as they are",
        name(), result.stale, ids);
  }
  int queue_full = 0;
  for (const auto& o : done.outcomes) queue_full += o.reason == "queue_full";
  if (queue_full > 0)
    spdlog::warn(
        "service {}: {} event(s) not handed to the producer, its local queue is full "
        "(kafka.properties queue.buffering.max.messages / queue.buffering.max.kbytes): released "
        "without counting an attempt",
        name(), queue_full);
  int retried = 0;
  for (const auto& op : ops) retried += op.kind == SettleKind::kRetry;
  if (retried > 0) {
    const PublishOutcome* first = nullptr;
    for (const auto& o : done.outcomes)
      if (o.result == PublishResult::kRetryable) first = first ? first : &o;
    spdlog::warn("service {}: {} of {} event(s) failed and will be retried: {}", name(), retried,
                 ops.size(), first ? first->error : "");
  }
  if (c.ordering == Ordering::kPerAggregate) planner_.OnSettled(settled);
  return Status::Ok();
}

int Relay::SettleReady(bool wait, std::chrono::milliseconds timeout) {
  int settled = 0;
  for (;;) {
    Completed* front = nullptr;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (completed_.empty() && wait && settled == 0) {
        options_.clock->WaitUntil(lock, cv_, options_.clock->Now() + timeout,
                                  [this] { return !completed_.empty() || halt_.load(); });
      }
      if (completed_.empty()) return settled;
      front = &completed_.front();  // only this thread pops
    }
    if (!SettleOne(*front).ok()) return settled;
    {
      std::lock_guard<std::mutex> lock(mu_);
      completed_.pop_front();
    }
    --inflight_;
    ++settled;
    cv_.notify_all();
  }
}

// ------------------------------------------------------------ housekeeping

Status Relay::RefreshGauges() {
  TableStats st;
  Status s = house_store_->ReadStats(&st);
  NoteDb(s, "read table gauges");
  if (!s.ok()) return s;
  metrics_.backlog->Set(static_cast<double>(st.backlog));
  metrics_.oldest_unsent_age->Set(st.oldest_unsent_age_s);
  metrics_.dead->Set(static_cast<double>(st.dead));
  metrics_.unknown_status->Set(static_cast<double>(st.unknown_status));
  bool blocking = options_.config.ordering == Ordering::kPerAggregate &&
                  options_.config.dead_policy == DeadPolicy::kBlock;
  if (!blocking || st.dead == 0) {
    metrics_.blocked_aggregates->Set(0);
    return Status::Ok();
  }
  // Counting the blocked aggregates reads every DEAD row: 0.2-2 s of the
  // database's time with 100,000 of them after an incident. It runs at most
  // a tenth of the time: after a count that took d, the next waits 10 d.
  Clock::TimePoint start = options_.clock->Now();
  if (start < blocked_due_) return Status::Ok();
  int64_t blocked = 0;
  s = house_store_->CountBlockedAggregates(&blocked);
  NoteDb(s, "count blocked aggregates");
  if (!s.ok()) return s;
  blocked_due_ = start + 10 * (options_.clock->Now() - start);
  metrics_.blocked_aggregates->Set(static_cast<double>(blocked));
  return Status::Ok();
}

Status Relay::RunRetention() {
  const RetentionConfig& r = options_.config.retention;
  if (!r.sent_days) return Status::Ok();
  int64_t cursor = std::numeric_limits<int64_t>::min();
  int64_t total = 0;
  for (;;) {
    if (stopping_) break;
    int64_t deleted = 0;
    bool done = false;
    Status s = house_store_->DeleteSentBatch(*r.sent_days, r.batch_rows, &cursor, &deleted, &done);
    if (!s.ok()) {
      // Not a readiness matter: relaying goes on without retention (a
      // missing DELETE grant, a lock wait). The next pass starts over.
      spdlog::warn("service {}: retention stopped after {} row(s): {}", name(), total, s.message());
      metrics_.retention_failures->Increment();
      return s;
    }
    total += deleted;
    metrics_.retention_deleted->Increment(static_cast<double>(deleted));
    if (done) break;
    if (!SleepFor(std::chrono::milliseconds(r.pause_ms))) break;
  }
  if (total > 0)
    spdlog::info("service {}: retention deleted {} SENT row(s) older than {} day(s)", name(), total,
                 *r.sent_days);
  return Status::Ok();
}

// ----------------------------------------------------------------- threads

bool Relay::SleepFor(std::chrono::milliseconds d) {
  std::unique_lock<std::mutex> lock(mu_);
  options_.clock->WaitUntil(lock, cv_, options_.clock->Now() + d,
                            [this] { return stopping_.load(); });
  return !stopping_.load();
}

void Relay::ClaimLoop() {
  auto backoff = std::chrono::milliseconds(200);
  const auto poll_interval = std::chrono::milliseconds(options_.config.poll_interval_ms);
  auto idle_wait = poll_interval;
  while (!stopping_) {
    if (!options_.publisher->Healthy()) {
      // Claiming while the broker is down would only burn attempts; the
      // poll still checks the database, so that database_up and
      // last_poll stay true and only the Kafka alert fires.
      if (ProbeDatabase().ok()) metrics_.last_poll->Set(options_.clock->UnixNow());
      SleepFor(std::chrono::milliseconds(std::max(options_.config.poll_interval_ms, 1000)));
      continue;
    }
    Round r = ClaimOnce();
    switch (r) {
      case Round::kMore:
        backoff = std::chrono::milliseconds(200);
        idle_wait = kActivePoll;
        break;
      case Round::kIdle:
        backoff = std::chrono::milliseconds(200);
        idle_wait = NextPollWait(idle_wait, last_claimed_, poll_interval);
        SleepFor(idle_wait);
        break;
      case Round::kBusy: {
        std::unique_lock<std::mutex> lock(mu_);
        options_.clock->WaitUntil(
            lock, cv_, options_.clock->Now() + std::chrono::milliseconds(100), [this] {
              return stopping_.load() || inflight_.load() < options_.config.max_inflight_batches;
            });
        break;
      }
      case Round::kFailed:
        SleepFor(backoff);
        backoff = std::min<std::chrono::milliseconds>(backoff * 2, std::chrono::seconds(5));
        break;
    }
  }
}

void Relay::SettleLoop() {
  auto backoff = std::chrono::milliseconds(100);
  while (!halt_) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      // Only once the claim thread is gone can no new batch appear.
      if (claim_done_ && inflight_.load() == 0 && completed_.empty()) return;
    }
    SettleReady(true, std::chrono::milliseconds(200));
    bool pending;
    {
      std::lock_guard<std::mutex> lock(mu_);
      pending = !completed_.empty();
    }
    if (pending) {
      // The settle failed (database down): retry until it applies. The
      // fencing makes a late settle harmless if the lease was taken over.
      std::unique_lock<std::mutex> lock(mu_);
      options_.clock->WaitUntil(lock, cv_, options_.clock->Now() + backoff,
                                [this] { return halt_.load(); });
      backoff = std::min<std::chrono::milliseconds>(backoff * 2, std::chrono::seconds(5));
    } else {
      backoff = std::chrono::milliseconds(100);
    }
  }
}

void Relay::HousekeepingLoop() {
  auto next_retention = options_.clock->Now();
  while (!stopping_) {
    Status s = house_store_->Connect();
    NoteDb(s, "connect");
    if (s.ok()) (void)RefreshGauges();
    if (s.ok() && options_.config.retention.sent_days && options_.clock->Now() >= next_retention) {
      (void)RunRetention();
      next_retention =
          options_.clock->Now() + std::chrono::seconds(options_.config.retention.interval_s);
    }
    SleepFor(std::chrono::milliseconds(options_.config.gauge_interval_ms));
  }
}

void Relay::Start() {
  const ServiceConfig& c = options_.config;
  spdlog::info(
      "service {}: relaying {}.{} on {}:{} as {} (password from {}) to {} topic {}; batch {}, "
      "poll {} ms, lease {} ms, ordering {}, dead_policy {}, max_attempts {}",
      c.name, c.mysql.database, c.mysql.table, c.mysql.host, c.mysql.port, c.mysql.user,
      c.mysql.password_source.empty() ? "none" : c.mysql.password_source, c.kafka.bootstrap_servers,
      c.topic, c.batch_size, c.poll_interval_ms, c.lease_ms, ToString(c.ordering),
      ToString(c.dead_policy), c.retry.max_attempts);
  claim_thread_ = std::thread([this] { ClaimLoop(); });
  settle_thread_ = std::thread([this] { SettleLoop(); });
  house_thread_ = std::thread([this] { HousekeepingLoop(); });
}

void Relay::Stop(std::chrono::milliseconds grace) {
  stopping_ = true;
  cv_.notify_all();
  if (claim_thread_.joinable()) claim_thread_.join();
  claim_done_ = true;
  cv_.notify_all();
  if (house_thread_.joinable()) house_thread_.join();
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, grace, [this] { return inflight_.load() == 0; });
  }
  if (inflight_.load() > 0) {
    spdlog::warn(
        "service {}: {} batch(es) still in flight at shutdown; their rows stay SENDING until the "
        "lease expires and a relay reclaims them",
        name(), inflight_.load());
  }
  halt_ = true;
  cv_.notify_all();
  if (settle_thread_.joinable()) settle_thread_.join();
}

}  // namespace outbox
