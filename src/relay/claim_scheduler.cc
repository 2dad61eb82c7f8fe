#include "relay/claim_scheduler.h"

#include <algorithm>
#include <utility>

namespace outbox {

namespace {
using std::chrono::milliseconds;
// After a full batch the next poll comes this soon; the poll backoff never
// goes below it.
constexpr milliseconds kActivePoll(1);
constexpr milliseconds kFirstBackoff(200);
constexpr milliseconds kRoomWait(100);    // a full in-flight window looks again this often
constexpr milliseconds kDownSleep(1000);  // broker down or paused: the loop's beat

Clock::Duration Clamp0(Clock::Duration d) {
  return std::max<Clock::Duration>(d, Clock::Duration::zero());
}
}  // namespace

std::chrono::milliseconds NextPollWait(milliseconds previous, size_t claimed,
                                       milliseconds poll_interval) {
  if (claimed > 0) return std::min(std::max(previous / 2, kActivePoll), poll_interval);
  return std::min(std::max(previous, kActivePoll) * 2, poll_interval);
}

ClaimScheduler::Options ClaimScheduler::OptionsFor(const ServiceConfig& c) {
  return {c.wakeup, milliseconds(c.poll_interval_ms), milliseconds(c.gauge_interval_ms),
          static_cast<size_t>(c.max_inflight_batches), c.ordering == Ordering::kPerAggregate};
}

ClaimScheduler::ClaimScheduler(Options options, ClockPtr clock)
    : options_(options), clock_(std::move(clock)), idle_wait_(options.poll_interval) {}

ClaimScheduler::Step ClaimScheduler::Next(const View& view) {
  const Clock::TimePoint now = clock_->Now();
  switch (phase_) {
    case Phase::kStart:
      return Start(view, now);
    case Phase::kClaiming:
      return Claim(false);
    case Phase::kRacePause:
      return {Action::kWaitWake, pause_until_};
    case Phase::kIdle: {
      Step s{Action::kWaitWake, now + IdleWait(view, now)};
      s.idle = true;
      return s;
    }
    case Phase::kRoom:
      phase_ = Phase::kStart;
      return {Action::kWaitRoom, now + kRoomWait};
    case Phase::kBackoff:
      phase_ = Phase::kStart;
      return {Action::kSleep, backoff_until_};
  }
  return {Action::kSleep, now + kDownSleep};
}

ClaimScheduler::Step ClaimScheduler::Start(const View& view, Clock::TimePoint now) {
  if (paused_ || !view.broker_up) {
    // Claiming while the broker is down would only burn attempts. The probe
    // keeps database_up and last_poll true, so only the Kafka alert fires
    // (or, paused, nothing). The broker is looked at every second: with a
    // long poll_interval_ms a producer not yet connected at start must not
    // hold the first claim back that long.
    if (now >= next_probe_) {
      next_probe_ = now + std::max(options_.poll_interval, kDownSleep);
      return {Action::kProbe};
    }
    return {Action::kSleep, std::min(next_probe_, now + kDownSleep)};
  }
  next_probe_ = {};
  attempt_ = cause_;
  cause_ = Attempt::kOnce;
  attempt_inserts_ = std::exchange(cause_inserts_, 0);
  attempt_saw_new_ = false;
  got_ = 0;
  passes_ = 0;
  next_pause_ = 0;
  // A commit that inserted nothing, or the look at the end of the commit-race
  // window: seldom a row to claim, so one head read rather than a pass.
  const bool head_read =
      attempt_ == Attempt::kPass || (RaceCheckPending() && race_check_at_ <= now);
  return Claim(head_read, attempt_ == Attempt::kFullPass);
}

ClaimScheduler::Step ClaimScheduler::Claim(bool head_read_first, bool new_pass) {
  phase_ = Phase::kClaiming;
  freed_by_ack_ = false;  // this round claims what they freed
  if (new_pass) {
    // ordering none: the batch claim at once; rows committed on a new server
    // were announced to no one. (per_aggregate reads the head of every new
    // pass, which sees them.)
    last_round_full_ = true;
    head_read_first_ = false;
  }
  if (head_read_first && !options_.ordered) head_read_first_ = true;
  Step s{Action::kClaim};
  s.new_pass = new_pass;
  return s;
}

void ClaimScheduler::OnRound(const RoundResult& r) {
  const Clock::TimePoint now = clock_->Now();
  const bool done = r.kind == ClaimRound::kIdle || r.kind == ClaimRound::kMore;
  if (done) {
    last_claimed_ = r.claimed;
    last_claim_start_ = r.started;
    got_ += r.claimed;
    attempt_saw_new_ = attempt_saw_new_ || r.saw_new_rows;
  }
  if (attempt_ == Attempt::kOnce) return Finish(r.kind, now);
  // Every other attempt is a whole per_aggregate pass: a round that only
  // started a pass or read pages (kMore, nothing claimed) is not an answer.
  if (r.kind == ClaimRound::kMore && got_ == 0) return;
  const PassEnd result = !done       ? PassEnd::kFailed
                         : got_ == 0 ? PassEnd::kNothing
                                     : PassEnd::kClaimed;
  PassEnded(result, r.held_by_peer, now);
  if (phase_ == Phase::kClaiming) Finish(r.kind, now);
}

void ClaimScheduler::PassEnded(PassEnd result, bool held_by_peer, Clock::TimePoint now) {
  if (attempt_ != Attempt::kInsertRetry) return OtherPassEnded(result, held_by_peer, now);
  ++passes_;
  if (result == PassEnd::kNothing && next_pause_ < kCommitRaceRetry.size() &&
      passes_ < kMaxCommitRacePasses) {
    phase_ = Phase::kRacePause;
    pause_until_ = now + kCommitRaceRetry[next_pause_];
    got_ = 0;
    return;
  }
  if (result == PassEnd::kNothing) {
    // Still nothing: the commit may be slower to show than the retries (a
    // loaded disk), or it touched another table of the database (MIXED).
    // Poll on the backoff for a while; after that the next gauges' read
    // shows a row that is there.
    timers_until_ = std::max(timers_until_, now + TimersWindow());
  } else if (result == PassEnd::kClaimed && !InsertSeen()) {
    // It claimed rows, but maybe not the inserted one, still invisible, its
    // wake-up spent: one more look once the retry's window is over, or the
    // row waits for the next wake-up (after a burst's last insert, the
    // safety poll).
    race_check_at_ = now + CommitRaceWindow();
  }
}

void ClaimScheduler::OtherPassEnded(PassEnd result, bool held_by_peer, Clock::TimePoint now) {
  // A commit that updated rows (a DEAD row replayed to NEW, another relay's
  // settle that released a row or freed the next events of the aggregates
  // it held): like an insert it may not show yet. Unlike an insert (most
  // such wake-ups are other relays' claims and settles) it gets no retry,
  // but one more look once the race is over, whatever its pass found, or
  // what it freed would wait for the next gauges' read or the safety poll.
  // No exception as for an insert (InsertSeen): an update shows no new id.
  // A reconnect's pass looks again only while rows wait behind another
  // relay, whose settle may not show yet.
  const bool change = attempt_ == Attempt::kPass && result != PassEnd::kFailed;
  if (change || (result == PassEnd::kNothing && held_by_peer))
    race_check_at_ = now + CommitRaceWindow();
}

bool ClaimScheduler::InsertSeen() const {
  // One insert commit woke the attempt and it read a row newer than any read
  // before: a row committed since shows, and the commit's rows show together
  // (a look already due covers an earlier one that may not have shown). An
  // older id (a long transaction's) or several commits: the look.
  return attempt_inserts_ == 1 && attempt_saw_new_ && !RaceCheckPending();
}

void ClaimScheduler::Finish(ClaimRound last, Clock::TimePoint now) {
  const bool missed_insert = attempt_ == Attempt::kInsertRetry && last_claimed_ == 0;
  switch (last) {
    case ClaimRound::kMore:
      backoff_ = kFirstBackoff;
      idle_wait_ = kActivePoll;
      phase_ = Phase::kStart;
      break;
    case ClaimRound::kIdle:
      backoff_ = kFirstBackoff;
      // After an insert wake-up that found nothing the poll backoff starts
      // again where the commit-race retry stopped.
      if (missed_insert)
        idle_wait_ = std::chrono::duration_cast<milliseconds>(kCommitRaceRetry.back());
      idle_wait_ = NextPollWait(idle_wait_, last_claimed_, options_.poll_interval);
      phase_ = Phase::kIdle;
      break;
    case ClaimRound::kBusy:
      phase_ = Phase::kRoom;
      break;
    case ClaimRound::kFailed:
      backoff_until_ = now + backoff_;
      backoff_ = std::min(backoff_ * 2, kMaxFailureBackoff);
      phase_ = Phase::kBackoff;
      break;
  }
}

RoundPlan ClaimScheduler::PlanRound(bool in_pass, Clock::TimePoint pass_started) {
  const Clock::TimePoint now = clock_->Now();
  RoundPlan plan;
  if (options_.ordered) {
    // Every new pass reads the head first, whatever asked for the round.
    plan.end_pass = in_pass && now - pass_started > kMaxPassAge;
    plan.head_read = !in_pass || plan.end_pass;
    return plan;
  }
  plan.head_read = !last_round_full_ || head_read_first_;
  plan.reclaim = !plan.head_read && now >= next_reclaim_;
  if (plan.reclaim) next_reclaim_ = now + kReclaimEvery;
  if (plan.head_read) head_read_first_ = false;
  return plan;
}

void ClaimScheduler::RecordRoundFacts(const RoundFacts& f) {
  // per_aggregate plans from the pass alone (PlanRound's arguments).
  if (f.stopped_at_head_read || options_.ordered) return;
  if (f.kind == ClaimRound::kIdle || f.kind == ClaimRound::kMore)
    last_round_full_ = f.kind == ClaimRound::kMore;
}

void ClaimScheduler::OnWake(WakeCause cause, int inserts) {
  if (cause == WakeCause::kInsert) {
    if (phase_ == Phase::kRacePause)
      attempt_inserts_ += inserts;
    else
      cause_inserts_ += inserts;
  }
  if (phase_ == Phase::kRacePause) {
    // Another insert ends the pause: its row may be visible already. So does
    // an acknowledgement that freed rows deferred behind it (committed rows:
    // no race). A commit that inserted nothing (another relay's settle, an
    // Interrupt) does not: the claim after the pause serves it as well.
    if (cause == WakeCause::kInsert || freed_by_ack_) {
      next_pause_ = 0;
      Claim(false);
    } else if (cause == WakeCause::kDeadline || clock_->Now() >= pause_until_) {
      ++next_pause_;
      Claim(false);
    }
    return;
  }
  if (phase_ != Phase::kIdle && phase_ != Phase::kStart) return;
  phase_ = Phase::kStart;
  // A timer keeps what the next attempt is for (a wake-up that came while
  // the broker was down; a reconnect's full pass).
  if (cause == WakeCause::kDeadline || cause_ == Attempt::kFullPass) return;
  cause_ = cause == WakeCause::kInsert ? Attempt::kInsertRetry : Attempt::kPass;
}

void ClaimScheduler::OnOwnRetry(Clock::TimePoint due) {
  const Clock::Duration::rep ticks = due.time_since_epoch().count();
  Clock::Duration::rep seen = own_retry_due_.load();
  while ((seen == 0 || ticks < seen) && !own_retry_due_.compare_exchange_weak(seen, ticks)) {
  }
}

void ClaimScheduler::OnRetryWritten(int64_t backoff_ms) {
  // next_retry_at is NOW() + backoff rounded up to a whole second
  // (kDeadlineSql, src/outbox/mysql_store_sql.h): at most a second later.
  OnOwnRetry(clock_->Now() + milliseconds(backoff_ms + 1000));
}

Clock::Duration ClaimScheduler::TimersWindow() const {
  return std::min(options_.poll_interval, milliseconds(1000)) + milliseconds(1000);
}

Clock::Duration ClaimScheduler::MaxWait(const View& v) const {
  if (options_.wakeup == WakeupMode::kBinlog && v.stream_up)
    return std::max<Clock::Duration>(options_.poll_interval, kSafetyPoll);
  return options_.poll_interval;
}

Clock::Duration ClaimScheduler::IdleWait(const View& v, Clock::TimePoint now) {
  const Clock::Duration poll = std::min<Clock::Duration>(idle_wait_, MaxWait(v));
  if (options_.wakeup == WakeupMode::kPoll) return poll;
  // `wakeup: binlog`: a retry backoff or a lease coming due makes rows
  // claimable without a commit. This relay's own settles say when the
  // retries they wrote come due; the gauges say when the others do.
  // Everything else that frees a row is a commit, which the stream announces.
  if (now < timers_until_) return poll;  // an insert wake-up that found nothing
  // A round that claimed rows while the stream is down: more are likely
  // there already (a busy table), so look again as polling does. Not while
  // rows wait behind this relay's own deliveries: what frees them is an
  // acknowledgement (which wakes the loop), and a look before it would end
  // the pass and start a new one. With the stream up every insert wakes the
  // loop, so after a round that claimed rows there is nothing to look for
  // that it would not announce: the timers below decide.
  if (last_claimed_ > 0 && v.deferred == 0 && !v.stream_up) return poll;
  return RaceCheckWait(OwnRetryWait(UnsentWait(poll, v, now), now), now);
}

Clock::Duration ClaimScheduler::UnsentWait(Clock::Duration poll, const View& v,
                                           Clock::TimePoint now) const {
  const UnsentSnapshot& u = v.unsent;
  if (!u.read) return poll;
  if (u.backlog == 0) return MaxWait(v);
  // Unsent rows that were due at the read and still there at a later claim
  // that found nothing wait for a commit (a peer's settle, a DEAD row
  // replayed), which the stream announces. The others come due by time, the
  // first at u.next_due. A read newer than the last claim: claim first.
  if (u.read_at >= last_claim_start_) return poll;
  // Re-read at least every gauge interval: a peer's failed publish may have
  // left a retry due sooner than the read saw.
  const Clock::Duration cap = std::min<Clock::Duration>(MaxWait(v), options_.gauge_interval);
  if (!u.next_due) return cap;
  // Came due by the last claim and not claimed: the next is unknown until the
  // gauges are read again.
  if (*u.next_due <= last_claim_start_) return poll;
  return std::clamp<Clock::Duration>(*u.next_due - now, Clock::Duration::zero(), cap);
}

Clock::Duration ClaimScheduler::OwnRetryWait(Clock::Duration wait, Clock::TimePoint now) {
  Clock::Duration::rep ticks = own_retry_due_.load();
  if (ticks == 0) return wait;
  const Clock::TimePoint due{Clock::Duration(ticks)};
  // A claim after it came due took the rows (or they are another relay's now).
  // (An earlier retry noted meanwhile stays.)
  if (due <= last_claim_start_) {
    own_retry_due_.compare_exchange_strong(ticks, 0);
    return wait;
  }
  return std::min(wait, Clamp0(due - now));
}

Clock::Duration ClaimScheduler::RaceCheckWait(Clock::Duration wait, Clock::TimePoint now) const {
  if (!RaceCheckPending()) return wait;
  return std::min(wait, Clamp0(race_check_at_ - now));
}

}  // namespace outbox
