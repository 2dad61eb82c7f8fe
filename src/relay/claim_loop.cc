#include "relay/claim_loop.h"

#include <algorithm>
#include <utility>

#include "common/log.h"

namespace outbox {

namespace {
void Beat(const HeartbeatPtr& beat) {
  if (beat) beat->Beat();
}
}  // namespace

ClaimLoop::ClaimLoop(ClaimLoopParts parts)
    : parts_(std::move(parts)),
      config_(parts_.config),
      claimer_(config_, parts_.stores, &parts_.planner, &parts_.health, parts_.clock,
               [this](const ClaimedBatch& batch, Clock::TimePoint claimed_at) {
                 Publish(batch, claimed_at);
               }),
      publisher_(parts_.publisher, &parts_.router, config_.ordering, parts_.clock),
      scheduler_(parts_.scheduler),
      stop_(parts_.clock) {
  // `paused: true` (a reload restarts the service with it): the scheduler
  // claims nothing and only probes the database, so the loop beats (a paused
  // service never looks stalled) and last_poll and database_up stay true;
  // in-flight batches settle and the gauges go on.
  scheduler_.SetPaused(config_.paused);
  parts_.stats.Set(ServiceStats::Gauge::kPaused, config_.paused ? 1 : 0);
}

void ClaimLoop::Run() {
  WakeCause cause = WakeCause::kDeadline;
  while (!stop_.stopped()) {
    Beat(beat_);
    NoteWakeupState();
    ClaimAfter(cause);
    if (stop_.stopped()) break;
    cause = WaitBetween();
  }
}

void ClaimLoop::Stop() {
  stop_.Stop();
  parts_.wakeup.Interrupt();  // the loop may be waiting for a wake-up
  parts_.queue->Notify();     // or for room
}

ClaimRound ClaimLoop::ClaimOnce() {
  if (scheduler_.WindowFull(parts_.queue->inflight())) {
    scheduler_.OnRound({ClaimRound::kBusy});
    return ClaimRound::kBusy;
  }
  round_start_ = parts_.clock->Now();
  round_ = parts_.queue->BeginClaim();
  published_ = false;
  ClaimedBatch batch;
  const RoundPlan plan = scheduler_.PlanRound(parts_.planner.in_pass(), claimer_.pass_started());
  const ClaimRound r = claimer_.Claim(plan, &batch);  // publishes what it claims, before the commit
  // Its commit's event in the binary log is not a reason to wake.
  if (r != ClaimRound::kFailed && !batch.rows.empty()) parts_.wakeup.ExpectOwnChange();
  scheduler_.RecordRoundFacts({r, claimer_.stopped_at_head_read(), batch.rows.size()});
  // The claim's transaction has ended (committed or rolled back): its batch
  // may be settled now, and not before (SettleGate).
  if (published_) parts_.queue->EndClaim(round_);
  if (r == ClaimRound::kFailed) {
    // The scheduler's backoff (200 ms doubling to 5 s) comes before the
    // next attempt: without it a database that refuses connections would
    // be asked again at once, in a loop.
    scheduler_.OnRound({r, round_start_});
    return r;
  }
  parts_.stats.Observe(ServiceStats::Histogram::kPollDuration,
                       std::chrono::duration<double>(parts_.clock->Now() - round_start_).count());
  parts_.stats.Set(ServiceStats::Gauge::kLastPoll, parts_.clock->UnixNow());
  if (batch.reclaimed > 0) NoteReclaimed(batch);
  scheduler_.OnRound(
      {r, round_start_, batch.rows.size(), parts_.planner.held_by_peer(), claimer_.saw_new_rows()});
  NoteSession();
  return r;
}

void ClaimLoop::NoteReclaimed(const ClaimedBatch& batch) {
  parts_.stats.Add(ServiceStats::Counter::kLeasesReclaimed, batch.reclaimed);
  // Their holder may have published them before it died or stalled.
  parts_.stats.Add(ServiceStats::Counter::kDuplicateRiskLeaseExpired, batch.reclaimed);
  LogInfo("reclaimed rows whose lease expired", {{"service", config_.name},
                                                 {"count", batch.reclaimed},
                                                 {"first_id", batch.rows.front().id},
                                                 {"last_id", batch.rows.back().id},
                                                 {"duplicate_risk", "lease_expired"}});
}

void ClaimLoop::NoteSession() {
  const SessionInfo now = claimer_.ClaimSession();
  if (now.connects == session_.connects) return;
  const SessionInfo before = std::exchange(session_, now);
  if (before.connects == 0) return;  // the first connect
  if (now.server_identity != before.server_identity) {
    LogWarn("the database server behind mysql.host changed (a failover): following it",
            {{"service", config_.name},
             {"host", config_.mysql.host},
             {"port", config_.mysql.port},
             {"from", before.server_identity},
             {"to", now.server_identity}});
    parts_.stats.Add(ServiceStats::Counter::kServerChanges);
  }
  // Rows committed on the new server were announced to no one: a full pass.
  scheduler_.OnReconnect();
  parts_.wakeup.DatabaseReconnected();
}

ClaimRound ClaimLoop::ClaimAfter(WakeCause cause) {
  scheduler_.OnWake(cause, parts_.wakeup.inserts_in_last_wake());
  ClaimRound last = ClaimRound::kIdle;
  while (!stop_.stopped()) {
    const ClaimScheduler::Step step = scheduler_.Next(View());
    const bool attempt = step.action == ClaimScheduler::Action::kClaim ||
                         step.action == ClaimScheduler::Action::kProbe ||
                         (step.action == ClaimScheduler::Action::kWaitWake && !step.idle);
    if (!attempt) {
      pending_ = step;
      break;
    }
    if (step.action == ClaimScheduler::Action::kWaitWake) {
      const WakeCause cause = parts_.wakeup.WaitUntil(step.until);
      scheduler_.OnWake(cause, parts_.wakeup.inserts_in_last_wake());
      continue;
    }
    if (step.action == ClaimScheduler::Action::kProbe) {
      // The broker is down (or the service paused): the database alone.
      if (claimer_.Probe().ok())
        parts_.stats.Set(ServiceStats::Gauge::kLastPoll, parts_.clock->UnixNow());
      continue;
    }
    if (step.new_pass) claimer_.StartOver();
    last = ClaimOnce();
  }
  return last;
}

WakeCause ClaimLoop::WaitBetween() {
  const ClaimScheduler::Step step = pending_;
  switch (step.action) {
    case ClaimScheduler::Action::kWaitWake:  // the idle wait
      // A note that came after the step was worked out interrupts the wait
      // (WakeupSource::Interrupt is sticky): the next step sees it.
      return parts_.wakeup.WaitUntil(step.until);
    case ClaimScheduler::Action::kWaitRoom:
      parts_.queue->WaitRoom(config_.max_inflight_batches, step.until,
                             [this] { return stop_.stopped(); });
      break;
    case ClaimScheduler::Action::kSleep:
      stop_.SleepUntil(step.until);
      break;
    case ClaimScheduler::Action::kProbe:
    case ClaimScheduler::Action::kClaim:
      break;
  }
  return WakeCause::kDeadline;
}

ClaimScheduler::View ClaimLoop::View() const {
  ClaimScheduler::View v;
  v.stream_up = parts_.wakeup.binlog_up();
  v.broker_up = publisher_.Healthy();
  v.deferred = parts_.planner.deferred_count();
  if (config_.wakeup == WakeupMode::kBinlog) v.unsent = parts_.housekeeper.Unsent();
  return v;
}

void ClaimLoop::Publish(const ClaimedBatch& batch, Clock::TimePoint claimed_at) {
  parts_.queue->AddInflight();
  published_ = true;
  const uint64_t round = round_;
  // Every outcome is known a second before the lease ends (BudgetFor): the
  // batch settles while the claim is still ours.
  const PublishBudget budget = BudgetFor(claimed_at, config_.lease_ms);
  auto shared = std::make_shared<ClaimedBatch>(batch);
  std::shared_ptr<SettleQueue> queue = parts_.queue;
  const ClockPtr clock = parts_.clock;
  const bool ordered = config_.ordering == Ordering::kPerAggregate;
  publisher_.Publish(
      shared->rows, budget,
      [this, queue, clock, shared, claimed_at, round,
       ordered](std::vector<PublishOutcome> outcomes) {
        // Not `this` unless the queue is open: the loop may be
        // gone (SettleQueue::Close).
        queue->Push({std::move(*shared), std::move(outcomes), claimed_at, clock->Now(), round},
                    [this, ordered](const PublishedBatch& done) {
                      if (ordered) NoteDelivered(done);
                    });
      });
}

void ClaimLoop::NoteDelivered(const PublishedBatch& done) {
  std::vector<SettledRow> acked;
  acked.reserve(done.outcomes.size());
  for (size_t i = 0; i < done.outcomes.size(); ++i) {
    const OutboxRow& r = done.batch.rows[i];
    if (done.outcomes[i].result == PublishResult::kAcked) acked.push_back({r.id, r.aggregate});
  }
  // per_aggregate: rows deferred behind these are claimable now. Neither a
  // poll nor the stream would say so soon: the poll comes poll_interval_ms
  // later, and the stream reports the settle's commit only after it.
  if (parts_.planner.OnDelivered(acked)) {
    scheduler_.OnFreedByAck();
    parts_.wakeup.Interrupt();
  }
}

void ClaimLoop::NoteOwnRetry(int64_t backoff_ms) {
  scheduler_.OnRetryWritten(backoff_ms);
  // The loop may be waiting for the stream already: let it look again.
  parts_.wakeup.Interrupt();
}

void ClaimLoop::set_heartbeat(HeartbeatPtr beat) {
  beat_ = beat;
  claimer_.set_heartbeat(std::move(beat));
}

std::string ClaimLoop::WakeupStatus() const {
  if (config_.wakeup != WakeupMode::kBinlog) return "";
  if (parts_.wakeup.binlog_up()) return "wakeup binlog up";
  return "wakeup binlog down, polling every " + std::to_string(config_.poll_interval_ms) +
         " ms: " + parts_.wakeup.reason();
}

void ClaimLoop::NoteWakeupState() {
  if (config_.wakeup != WakeupMode::kBinlog) return;
  parts_.stats.Set(ServiceStats::Gauge::kWakeupBinlogUp, parts_.wakeup.binlog_up() ? 1 : 0);
}

}  // namespace outbox
