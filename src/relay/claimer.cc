#include "relay/claimer.h"

#include <algorithm>

#include "common/log.h"

namespace outbox {

namespace {
constexpr int kMaxPagesPerRound = 8;

double Ms(Clock::Duration d) { return std::chrono::duration<double, std::milli>(d).count(); }
}  // namespace

Claimer::Claimer(const ServiceConfig& config, const StoreFactory& stores, ClaimPlanner* planner,
                 DbHealth* health, ClockPtr clock, PublishFn publish)
    : config_(config),
      planner_(planner),
      health_(health),
      clock_(std::move(clock)),
      publish_(std::move(publish)),
      publish_round_([this](const ClaimedBatch& b) { publish_(b, round_started_); }),
      claim_store_(stores()),
      scan_store_(stores()) {}

ClaimRound Claimer::Claim(const RoundPlan& plan, ClaimedBatch* batch) {
  round_started_ = clock_->Now();
  stopped_at_probe_ = false;
  return config_.ordering == Ordering::kPerAggregate ? ClaimOrdered(plan, batch)
                                                     : ClaimUnordered(plan, batch);
}

ClaimRound Claimer::ProbeDue(bool ordered) {
  bool due = false;
  Status s = claim_store_->HasDue(ordered, &due);
  health_->NoteAndBeat(s, "poll", beat_);
  stopped_at_probe_ = !s.ok() || !due;
  if (!s.ok()) return ClaimRound::kFailed;
  return due ? ClaimRound::kMore : ClaimRound::kIdle;
}

Status Claimer::Probe() {
  bool due = false;
  Status s = claim_store_->HasDue(config_.ordering == Ordering::kPerAggregate, &due);
  health_->NoteAndBeat(s, "poll", beat_);
  return s;
}

ClaimRound Claimer::ClaimUnordered(const RoundPlan& plan, ClaimedBatch* batch) {
  if (plan.probe) {
    // The idle poll: one index probe, no transaction.
    const ClaimRound due = ProbeDue(false);
    if (due != ClaimRound::kMore) return due;
  }
  Status s = claim_store_->ClaimDue(config_.batch_size, config_.lease_ms, plan.reclaim, batch,
                                    publish_round_);
  health_->NoteAndBeat(s, "claim", beat_);
  if (!s.ok()) return ClaimRound::kFailed;
  const bool full = static_cast<int>(batch->rows.size()) >= config_.batch_size;
  return full ? ClaimRound::kMore : ClaimRound::kIdle;
}

void Claimer::StartOver() {
  if (planner_->in_pass()) EndPass();
}

void Claimer::EndPass() {
  scan_store_->EndSnapshot();
  const PassStats& p = pass_stats_;
  LogDebug("claim pass ended", {{"service", config_.name},
                                {"duration_ms", Ms(clock_->Now() - pass_started_)},
                                {"rounds", p.rounds},
                                {"pages", p.pages},
                                {"scanned", p.scanned},
                                {"count", p.claimed},
                                {"deferred", planner_->deferred_count()},
                                {"scan_ms", Ms(p.scan)},
                                {"claim_ms", Ms(p.claim)}});
  pass_stats_ = PassStats{};
  planner_->EndPass();
}

ClaimRound Claimer::StartPass(bool probe) {
  // The idle poll: one index probe outside any snapshot. A row backing off or
  // leased by a live relay starts no pass until it is due.
  if (probe) {
    const ClaimRound due = ProbeDue(true);
    if (due == ClaimRound::kIdle) planner_->NothingDue();
    if (due != ClaimRound::kMore) return due;
  }
  // The pass reads everything from one snapshot (see OutboxStore::
  // BeginSnapshot), including its starting id and the DEAD rows: a row below
  // an id read before the snapshot could have committed in between, and a
  // row replayed after it is NEW but invisible to this pass's scan.
  std::optional<int64_t> min_id;
  std::vector<DeadHead> heads;
  Status s = scan_store_->BeginSnapshot();
  if (s.ok()) s = scan_store_->MinPendingId(&min_id);
  health_->NoteAndBeat(s, "poll", beat_);
  if (s.ok() && min_id && config_.dead_policy == DeadPolicy::kBlock) {
    s = scan_store_->DeadHeads(&heads);
    health_->NoteAndBeat(s, "read DEAD aggregates", beat_);
  }
  if (!s.ok() || !min_id) {
    scan_store_->EndSnapshot();
    return s.ok() ? ClaimRound::kIdle : ClaimRound::kFailed;
  }
  planner_->StartPass(*min_id, heads);
  pass_started_ = clock_->Now();
  return ClaimRound::kMore;
}

bool Claimer::ScanPages() {
  const int want = config_.batch_size;
  const int page = std::max(4 * want, 1000);
  std::vector<WindowRow> rows;
  for (int i = 0; i < kMaxPagesPerRound && !planner_->pass_exhausted() && !planner_->full(want);
       ++i) {
    auto t = clock_->Now();
    Status s = scan_store_->ScanWindow(planner_->cursor(), page, &rows);
    pass_stats_.scan += clock_->Now() - t;
    health_->NoteAndBeat(s, "scan", beat_);
    if (!s.ok()) return false;
    ++pass_stats_.pages;
    pass_stats_.scanned += static_cast<int64_t>(rows.size());
    planner_->Consume(std::move(rows), page, want);
  }
  return true;
}

ClaimRound Claimer::ClaimOrdered(const RoundPlan& plan, ClaimedBatch* batch) {
  if (plan.end_pass && planner_->in_pass()) EndPass();
  if (!planner_->in_pass()) {
    ClaimRound r = StartPass(plan.probe);
    if (r != ClaimRound::kMore) return r;
  }
  ++pass_stats_.rounds;
  // Rows deferred behind this relay's own deliveries that are now free go
  // first, then the rest of the last page, then new pages.
  planner_->BeginRound(config_.batch_size);
  planner_->ConsumeBuffered(config_.batch_size);
  if (!ScanPages()) {
    EndPass();
    return ClaimRound::kFailed;
  }
  const bool exhausted = planner_->pass_exhausted();
  if (!planner_->candidates().empty() && !ClaimCandidates(batch)) {
    EndPass();
    return ClaimRound::kFailed;
  }
  // A pass read to its end stays open while it still claims (deferred rows
  // whose older events were delivered meanwhile); the next one starts when it
  // claims nothing.
  if (exhausted && batch->rows.empty()) {
    EndPass();
    return ClaimRound::kIdle;
  }
  return ClaimRound::kMore;
}

bool Claimer::ClaimCandidates(ClaimedBatch* batch) {
  auto t = clock_->Now();
  Status s = claim_store_->ClaimIds(
      planner_->candidates(), config_.lease_ms,
      [this](const std::vector<OutboxRow>& locked) { return planner_->Choose(locked); }, batch,
      [this](const ClaimedBatch& claimed) {
        // In flight before its acknowledgement can come (OnDelivered). If
        // the commit fails, the stale settle takes the rows out again.
        planner_->OnClaimed(claimed.rows);
        publish_round_(claimed);
      });
  pass_stats_.claim += clock_->Now() - t;
  health_->NoteAndBeat(s, "claim", beat_);
  if (!s.ok()) return false;
  pass_stats_.claimed += static_cast<int64_t>(batch->rows.size());
  return true;
}

}  // namespace outbox
