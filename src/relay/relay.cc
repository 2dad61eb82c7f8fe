#include "relay/relay.h"

#include <algorithm>
#include <optional>

#include "common/log.h"

namespace outbox {

namespace {
// After a round that claimed events the next poll comes this soon: events
// arriving one by one are claimed within a few milliseconds.
constexpr auto kActivePoll = std::chrono::milliseconds(1);

WakeupSourcePtr TakeWakeup(RelayOptions& options) {
  if (options.wakeup) return std::move(options.wakeup);
  return std::make_unique<PollWakeup>(options.clock,
                                      std::chrono::milliseconds(options.config.poll_interval_ms));
}
}  // namespace

std::chrono::milliseconds NextPollWait(std::chrono::milliseconds previous, size_t claimed,
                                       std::chrono::milliseconds poll_interval) {
  if (claimed > 0) return std::min(kActivePoll, poll_interval);
  return std::min(std::max(previous, kActivePoll) * 2, poll_interval);
}

StallLimits StallLimitsFor(const ServiceConfig& c) {
  using std::chrono::milliseconds;
  const auto statement = [&c](int round_trips) {
    return milliseconds(c.mysql.connect_timeout_ms) +
           round_trips * milliseconds(c.mysql.read_timeout_ms);
  };
  constexpr milliseconds kMargin(10000);
  constexpr milliseconds kBackoffCap(5000);  // the loops' failure backoff (relay.cc)
  milliseconds claim_wait =
      std::max({milliseconds(c.poll_interval_ms), kBackoffCap, milliseconds(1000)});
  if (c.wakeup == Wakeup::kBinlog) claim_wait = std::max(claim_wait, milliseconds(30000));
  const milliseconds house_wait =
      std::max(milliseconds(c.gauge_interval_ms), milliseconds(c.retention.pause_ms));
  return {claim_wait + statement(4) + kMargin, kBackoffCap + statement(6) + kMargin,
          house_wait + statement(4) + kMargin};
}

Relay::Relay(RelayOptions options)
    : wakeup_(TakeWakeup(options)),
      options_(std::move(options)),
      router_(options_.config),
      metrics_(*options_.metrics),
      health_(options_.config.name, options_.metrics),
      planner_(options_.config.dead_policy),
      claimer_(options_.config, options_.store_factory, &planner_, &health_, options_.clock,
               [this](const ClaimedBatch& claimed) { Publish(claimed, round_start_); }),
      publisher_(options_.publisher, &router_, options_.config.ordering, options_.clock),
      settler_(options_.config, &router_, options_.store_factory(), options_.metrics, &health_,
               options_.config.ordering == Ordering::kPerAggregate ? &planner_ : nullptr,
               options_.seed),
      housekeeper_(options_.config, options_.store_factory(), options_.metrics, &health_,
                   options_.clock) {
  MutexLock lock(&guard_->mu);
  guard_->relay = this;
}

Relay::~Relay() {
  Stop(std::chrono::milliseconds(0));
  MutexLock lock(&guard_->mu);  // waits out a completion in progress
  guard_->relay = nullptr;
}

// ---------------------------------------------------------------- claiming

Relay::Round Relay::ClaimOnce() {
  if (inflight_.load() >= options_.config.max_inflight_batches) return Round::kBusy;
  const Clock::TimePoint t0 = options_.clock->Now();
  round_start_ = t0;
  freed_by_ack_ = false;  // this round claims what they freed
  ++claim_round_;
  published_in_round_ = false;
  ClaimedBatch batch;
  Round r = claimer_.Claim(&batch);  // publishes what it claims, before the commit
  if (published_in_round_) {
    // The claim's transaction has ended (committed or rolled back): its
    // batch may be settled now, and not before (SettleReady).
    MutexLock lock(&mu_);
    claims_ended_ = claim_round_;
    cv_.SignalAll();
  }
  if (r == Round::kFailed) return r;
  metrics_.poll_duration->Observe(
      std::chrono::duration<double>(options_.clock->Now() - t0).count());
  metrics_.last_poll->Set(options_.clock->UnixNow());
  last_claimed_ = batch.rows.size();
  last_claim_start_ = t0;
  if (batch.reclaimed > 0) {
    metrics_.leases_reclaimed->Increment(batch.reclaimed);
    LogInfo("reclaimed rows whose lease expired", {{"service", name()},
                                                   {"count", batch.reclaimed},
                                                   {"first_id", batch.rows.front().id},
                                                   {"last_id", batch.rows.back().id}});
  }
  return r;
}

void Relay::Publish(const ClaimedBatch& batch, Clock::TimePoint claimed_at) {
  ++inflight_;
  published_in_round_ = true;
  const uint64_t round = claim_round_;
  // A chain message started by then is acknowledged or failed within
  // message.timeout.ms (lease/2, see src/kafka/kafka_config.cc), a second
  // before the lease ends: the batch settles while the claim is still ours.
  const auto start_by = claimed_at + std::chrono::milliseconds(options_.config.lease_ms / 2 - 1000);
  auto shared = std::make_shared<ClaimedBatch>(batch);
  publisher_.Publish(
      shared->rows, start_by,
      [guard = guard_, shared, claimed_at, round](std::vector<PublishOutcome> outcomes) {
        // Not `this`: the Relay may be gone (ThreadSanitizer found a notify
        // running on a destroyed condition variable).
        MutexLock alive(&guard->mu);
        Relay* self = guard->relay;
        if (self == nullptr) return;  // stopped and destroyed: the lease expires
        self->OnPublished({std::move(*shared), std::move(outcomes), claimed_at,
                           self->options_.clock->Now(), round});
      });
}

void Relay::OnPublished(PublishedBatch done) {
  if (options_.config.ordering == Ordering::kPerAggregate) NoteDelivered(done);
  MutexLock lock(&mu_);
  completed_.push_back(std::move(done));
  cv_.SignalAll();
}

// ---------------------------------------------------------------- settling

int Relay::SettleReady(bool wait, std::chrono::milliseconds timeout) {
  int settled = 0;
  for (;;) {
    PublishedBatch* front = nullptr;
    {
      MutexLock lock(&mu_);
      if (!FrontSettleable() && wait && settled == 0) {
        options_.clock->WaitUntil(&mu_, &cv_, options_.clock->Now() + timeout, [this] {
          mu_.AssertHeld();
          return FrontSettleable() || halt_.load();
        });
      }
      if (!FrontSettleable()) return settled;
      // Only this thread pops, and a deque's push_back keeps references to
      // its other elements valid: the front stays put while it settles.
      front = &completed_.front();
    }
    std::optional<int64_t> retry_ms;
    if (!settler_.Settle(*front, &retry_ms).ok()) return settled;
    if (retry_ms) NoteOwnRetry(*retry_ms);
    {
      MutexLock lock(&mu_);
      completed_.pop_front();
      --inflight_;
      cv_.SignalAll();
    }
    ++settled;
  }
}

// ------------------------------------------------------------ housekeeping

Status Relay::RunRetention() {
  return housekeeper_.RunRetention([this](std::chrono::milliseconds d) {
    Beat(house_beat_);  // a batch was deleted: progress
    return SleepFor(d);
  });
}

// ----------------------------------------------------------------- threads

void Relay::RegisterHeartbeats() {
  if (options_.liveness == nullptr) return;
  const StallLimits limits = StallLimitsFor(options_.config);
  claim_beat_ = options_.liveness->Register(name() + "/claim", limits.claim);
  settle_beat_ = options_.liveness->Register(name() + "/settle", limits.settle);
  house_beat_ = options_.liveness->Register(name() + "/housekeeping", limits.housekeeping);
  claimer_.set_heartbeat(claim_beat_);
  settler_.set_heartbeat(settle_beat_);
  housekeeper_.set_heartbeat(house_beat_);
}

bool Relay::SleepFor(std::chrono::milliseconds d) {
  MutexLock lock(&mu_);
  options_.clock->WaitUntil(&mu_, &cv_, options_.clock->Now() + d,
                            [this] { return stopping_.load(); });
  return !stopping_.load();
}

void Relay::WaitForRoom() {
  MutexLock lock(&mu_);
  options_.clock->WaitUntil(
      &mu_, &cv_, options_.clock->Now() + std::chrono::milliseconds(100), [this] {
        return stopping_.load() || inflight_.load() < options_.config.max_inflight_batches;
      });
}

Relay::Round Relay::ClaimAfter(WakeCause cause) {
  // A commit that inserted nothing, or the look at the end of the commit-race
  // window: seldom a row to claim, so one probe rather than a pass.
  const Clock::TimePoint now = options_.clock->Now();
  if (cause == WakeCause::kChange || (RaceCheckPending() && race_check_at_ <= now))
    claimer_.ProbeFirst();
  Round round = Round::kIdle;
  if (cause == WakeCause::kChange) {
    // A commit that updated rows: maybe another relay's settle, which frees
    // the next events of the aggregates it held. Like an insert it may not
    // show yet; unlike an insert (most such wake-ups are the relays' own
    // claims and settles) it gets no retry, but one more look once the race
    // is over while rows wait behind another relay (per_aggregate), or they
    // would wait for the next gauges' read.
    if (ClaimPass(&round) == 0 && planner_.held_by_peer())
      race_check_at_ = options_.clock->Now() + CommitRaceWindow();
    return round;
  }
  if (cause != WakeCause::kInsert) return ClaimOnce();
  // The commit race (src/common/wakeup.h): the binlog event can come before
  // the row is visible to the claim. Retry briefly while a round claims
  // nothing; only inserts get this, the relays' own settles do not.
  auto claim = [&] { return ClaimPass(&round); };
  const int claimed = ClaimAfterWakeupPausing(claim, [this](std::chrono::microseconds d) {
    return PauseForRace(options_.clock->Now() + d);
  });
  if (claimed == 0) {
    LogDebug("an insert wake-up claimed nothing after the commit-race retry",
             {{"service", name()}});
    // Still nothing: the commit may be slower to show than the retries (a
    // loaded disk), or it touched another table of the database (MIXED). Poll
    // on the backoff for a while; after that the next gauges' read shows a
    // row that is there.
    timers_until_ = std::max(timers_until_, options_.clock->Now() + TimersWindow());
  } else if (claimed > 0) {
    // It claimed rows, but maybe not the inserted one: a round takes what it
    // sees, and the insert may still be invisible (the commit race), its
    // wake-up spent. One more look once the retry's window is over, or the
    // row waits for the next wake-up: after the last insert of a burst, the
    // 30 s safety poll (one event of 2,710 in a benchmark).
    race_check_at_ = options_.clock->Now() + CommitRaceWindow();
  }
  return round;
}

int Relay::ClaimPass(Round* round) {
  // One attempt is a whole per_aggregate pass: a round that only started a
  // pass or read pages (kMore, nothing claimed) is not yet an answer.
  if (stopping_) return -1;
  size_t got = 0;
  do {
    *round = ClaimOnce();
    got += last_claimed_;
  } while (*round == Round::kMore && got == 0 && !stopping_);
  if (*round == Round::kFailed || *round == Round::kBusy) return -1;
  return got == 0 ? 0 : 1;
}

bool Relay::PauseForRace(Clock::TimePoint until) {
  // Another insert cuts the pause short: its row may be visible already. So
  // does an acknowledgement that freed rows deferred behind it (committed
  // rows: no race). A commit that inserted nothing (mostly this relay's own
  // settle) does not: the claim after the pause serves it as well.
  while (!stopping_) {
    const WakeCause cause = wakeup_->WaitUntil(until);
    if (cause == WakeCause::kInsert || freed_by_ack_.load()) return true;
    if (cause == WakeCause::kDeadline || options_.clock->Now() >= until) return false;
  }
  return false;
}

std::string Relay::WakeupStatus() const {
  if (options_.config.wakeup != Wakeup::kBinlog) return "";
  if (wakeup_->binlog_up()) return "wakeup binlog up";
  return "wakeup binlog down, polling every " + std::to_string(options_.config.poll_interval_ms) +
         " ms: " + wakeup_->reason();
}

void Relay::NoteWakeupState() {
  if (options_.config.wakeup != Wakeup::kBinlog) return;
  metrics_.WakeupBinlogUp().Set(wakeup_->binlog_up() ? 1 : 0);
}

void Relay::ClaimLoop() {
  auto backoff = std::chrono::milliseconds(200);
  const auto poll_interval = std::chrono::milliseconds(options_.config.poll_interval_ms);
  auto idle_wait = poll_interval;
  WakeCause cause = WakeCause::kDeadline;
  while (!stopping_) {
    Beat(claim_beat_);
    NoteWakeupState();
    if (!publisher_.Healthy()) {
      // Claiming while the broker is down would only burn attempts; the poll
      // still checks the database (every max(poll_interval_ms, 1 s)), so that
      // database_up and last_poll stay true and only the Kafka alert fires.
      // The broker is looked at every second: with a long poll_interval_ms
      // (wakeup: binlog) a producer not yet connected at start must not hold
      // the first claim back that long.
      const Clock::TimePoint now = options_.clock->Now();
      if (now >= next_down_probe_) {
        if (ProbeDatabase().ok()) metrics_.last_poll->Set(options_.clock->UnixNow());
        next_down_probe_ =
            now + std::chrono::milliseconds(std::max(options_.config.poll_interval_ms, 1000));
      }
      SleepFor(std::chrono::milliseconds(1000));
      continue;
    }
    next_down_probe_ = {};
    const Round round = ClaimAfter(cause);
    const bool missed_insert = cause == WakeCause::kInsert && last_claimed_ == 0;
    cause = WakeCause::kDeadline;  // a wake-up that came meanwhile stays pending
    switch (round) {
      case Round::kMore:
        backoff = std::chrono::milliseconds(200);
        idle_wait = kActivePoll;
        break;
      case Round::kIdle:
        backoff = std::chrono::milliseconds(200);
        // After an insert wake-up that found nothing the poll backoff starts
        // again where the commit-race retry stopped.
        if (missed_insert)
          idle_wait =
              std::chrono::duration_cast<std::chrono::milliseconds>(kCommitRaceRetry.back());
        idle_wait = NextPollWait(idle_wait, last_claimed_, poll_interval);
        cause = wakeup_->WaitUntil(options_.clock->Now() + IdleWait(idle_wait));
        break;
      case Round::kBusy:
        WaitForRoom();
        break;
      case Round::kFailed:
        SleepFor(backoff);
        backoff = std::min<std::chrono::milliseconds>(backoff * 2, std::chrono::seconds(5));
        break;
    }
  }
}

bool Relay::FrontSettleable() const {
  // Under READ COMMITTED a settle's UPDATE does not wait for a row the claim
  // still locks: it reads the row's last committed version (NEW, no lease),
  // finds it not matching and skips it (a semi-consistent read), and the
  // settle would be stale. So a batch published before its claim committed
  // waits for the claim round to end.
  return !completed_.empty() && completed_.front().claim_round <= claims_ended_;
}

// True once nothing can be left to settle: the claim thread is gone (so no
// new batch appears), nothing is in flight and the queue is empty.
bool Relay::SettleDrained() {
  MutexLock lock(&mu_);
  return claim_done_ && inflight_.load() == 0 && completed_.empty();
}

void Relay::SettleLoop() {
  auto backoff = std::chrono::milliseconds(100);
  while (!halt_ && !SettleDrained()) {
    Beat(settle_beat_);
    SettleReady(true, std::chrono::milliseconds(200));
    MutexLock lock(&mu_);
    if (!FrontSettleable()) {  // nothing, or its claim still committing
      backoff = std::chrono::milliseconds(100);
      continue;
    }
    // The settle failed (database down): retry until it applies. The fencing
    // makes a late settle harmless if the lease was taken over.
    options_.clock->WaitUntil(&mu_, &cv_, options_.clock->Now() + backoff,
                              [this] { return halt_.load(); });
    backoff = std::min<std::chrono::milliseconds>(backoff * 2, std::chrono::seconds(5));
  }
}

void Relay::HousekeepingLoop() {
  auto next_retention = options_.clock->Now();
  const auto& retention = options_.config.retention;
  while (!stopping_) {
    Beat(house_beat_);
    Status s = housekeeper_.Connect();
    if (s.ok()) (void)housekeeper_.RefreshGauges();
    if (s.ok() && retention.sent_days && options_.clock->Now() >= next_retention) {
      (void)RunRetention();
      next_retention = options_.clock->Now() + std::chrono::seconds(retention.interval_s);
    }
    SleepFor(std::chrono::milliseconds(options_.config.gauge_interval_ms));
  }
}

void Relay::Start() {
  const ServiceConfig& c = options_.config;
  LogInfo("relaying",
          {{"service", c.name},
           {"table", c.mysql.database + "." + c.mysql.table},
           {"server", c.mysql.host + ":" + std::to_string(c.mysql.port)},
           {"user", c.mysql.user},
           {"password_from", c.mysql.password_source.empty() ? "none" : c.mysql.password_source},
           {"bootstrap_servers", c.kafka.bootstrap_servers},
           {"topic", c.topic},
           {"batch_size", c.batch_size},
           {"poll_interval_ms", c.poll_interval_ms},
           {"wakeup", ToString(c.wakeup)},
           {"lease_ms", c.lease_ms},
           {"ordering", ToString(c.ordering)},
           {"dead_policy", ToString(c.dead_policy)},
           {"max_attempts", c.retry.max_attempts}});
  RegisterHeartbeats();
  claim_thread_ = std::thread([this] { ClaimLoop(); });
  settle_thread_ = std::thread([this] { SettleLoop(); });
  house_thread_ = std::thread([this] { HousekeepingLoop(); });
}

void Relay::Stop(std::chrono::milliseconds grace) {
  auto signal = [this] {
    MutexLock lock(&mu_);
    cv_.SignalAll();
  };
  stopping_ = true;
  signal();
  wakeup_->Interrupt();  // the claim loop may be waiting for a wake-up
  if (claim_thread_.joinable()) claim_thread_.join();
  claim_done_ = true;
  signal();
  if (house_thread_.joinable()) house_thread_.join();
  {
    MutexLock lock(&mu_);
    const auto deadline = std::chrono::steady_clock::now() + grace;
    while (inflight_.load() > 0 && cv_.WaitUntil(deadline)) {
    }
  }
  if (inflight_.load() > 0) {
    LogWarn(
        "batches still in flight at shutdown; their rows stay SENDING until the lease expires "
        "and a relay reclaims them",
        {{"service", name()}, {"count", inflight_.load()}});
  }
  halt_ = true;
  signal();
  if (settle_thread_.joinable()) settle_thread_.join();
  // A stopped service is not a stalled one: dropping every reference to its
  // heartbeats unregisters them.
  claimer_.set_heartbeat(nullptr);
  settler_.set_heartbeat(nullptr);
  housekeeper_.set_heartbeat(nullptr);
  claim_beat_.reset();
  settle_beat_.reset();
  house_beat_.reset();
}

}  // namespace outbox
