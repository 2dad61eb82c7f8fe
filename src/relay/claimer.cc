#include "relay/claimer.h"

#include <algorithm>

#include "common/log.h"

namespace outbox {

namespace {
constexpr int kMaxPagesPerRound = 8;
// The head read with ordering none: one due row is the whole round (ClaimRow);
// two or more go to the batch claim, whose one commit serves them all.
constexpr int kUnorderedHead = 2;
// The head read with per_aggregate reads every unsent row or gives way to a
// pass: this relay's own rows in flight, and this many more. With more than
// kOrderedHeadMaxHeld rows of its own in flight the relay is busy: a pass
// reads the rows with fewer columns.
constexpr int kOrderedHeadSlack = 32;
constexpr size_t kOrderedHeadMaxHeld = 256;

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
  stopped_at_head_read_ = false;
  saw_new_rows_ = false;
  seen_before_round_ = max_seen_id_;
  return config_.ordering == Ordering::kPerAggregate ? ClaimOrdered(plan, batch)
                                                     : ClaimUnordered(plan, batch);
}

std::optional<ClaimRound> Claimer::ReadHead(const HeadQuery& q, HeadRead* head) {
  Status s = claim_store_->ReadHead(q, head);
  health_->NoteAndBeat(s, "poll", beat_);
  const bool due = std::any_of(head->window.begin(), head->window.end(),
                               [](const WindowRow& w) { return w.due; });
  stopped_at_head_read_ = !s.ok() || !due;
  if (!s.ok()) return ClaimRound::kFailed;
  for (const OutboxRow& r : head->rows) NoteSeen(r.id);
  if (!due) return ClaimRound::kIdle;
  return std::nullopt;
}

void Claimer::NoteSeen(int64_t id) {
  if (id > seen_before_round_) saw_new_rows_ = true;
  max_seen_id_ = std::max(max_seen_id_, id);
}

bool Claimer::ClaimOne(const OutboxRow& row, const std::string& lease_token, ClaimedBatch* batch) {
  bool claimed = false;
  Status s = claim_store_->ClaimRow(row.id, lease_token, &claimed);
  health_->NoteAndBeat(s, "claim", beat_);
  if (!s.ok()) return false;
  if (claimed) {
    batch->lease_token = lease_token;
    batch->rows.push_back(row);
    batch->reclaimed = row.reclaimed ? 1 : 0;
  }
  return true;
}

Status Claimer::Probe() {
  bool unused_due = false;
  Status s = claim_store_->HasDue(config_.ordering == Ordering::kPerAggregate, &unused_due);
  health_->NoteAndBeat(s, "poll", beat_);
  return s;
}

ClaimRound Claimer::ClaimUnordered(const RoundPlan& plan, ClaimedBatch* batch) {
  if (plan.head_read) {
    const HeadQuery q{false, false, kUnorderedHead, config_.lease_ms};
    HeadRead head;
    if (std::optional<ClaimRound> r = ReadHead(q, &head)) return *r;
    if (head.complete(q)) {
      // One due row: a conditional UPDATE claims it, and it is published
      // once that committed. Taken by another relay first: nothing to do.
      if (!ClaimOne(head.rows.front(), head.lease_token, batch)) return ClaimRound::kFailed;
      if (!batch->rows.empty()) publish_round_(*batch);
      return ClaimRound::kIdle;
    }
  }
  // After a head read (which sees expired leases) the batch claim takes
  // them too: the head read stands in for the reclaim of every second.
  Status s = claim_store_->ClaimDue(config_.batch_size, config_.lease_ms,
                                    plan.reclaim || plan.head_read, batch, publish_round_);
  health_->NoteAndBeat(s, "claim", beat_);
  if (!s.ok()) return ClaimRound::kFailed;
  for (const OutboxRow& r : batch->rows) NoteSeen(r.id);
  const bool full = static_cast<int>(batch->rows.size()) >= config_.batch_size;
  return full ? ClaimRound::kMore : ClaimRound::kIdle;
}

std::optional<ClaimRound> Claimer::ClaimOrderedHead(ClaimedBatch* batch) {
  const size_t held = planner_->held();
  if (held > kOrderedHeadMaxHeld) return std::nullopt;
  const HeadQuery q{true, config_.dead_policy == DeadPolicy::kBlock,
                    static_cast<int>(held) + kOrderedHeadSlack, config_.lease_ms};
  HeadRead head;
  if (std::optional<ClaimRound> r = ReadHead(q, &head)) {
    if (*r == ClaimRound::kIdle) planner_->NothingDue();
    return r;
  }
  if (!head.complete(q)) return std::nullopt;  // a backlog: a pass reads it
  // Every unsent row, from one statement's view: the planner decides as in a
  // pass of one page.
  planner_->StartPass(head.window.front().id, head.dead_heads);
  planner_->BeginRound(config_.batch_size);
  planner_->Consume(head.window, q.limit, config_.batch_size);
  const std::vector<int64_t> candidates = planner_->candidates();
  bool ok = true;
  if (candidates.size() == 1) {
    const auto row = std::find_if(head.rows.begin(), head.rows.end(),
                                  [&](const OutboxRow& r) { return r.id == candidates.front(); });
    ok = ClaimOne(*row, head.lease_token, batch);
    // Not claimed: another relay holds it, which blocks its aggregate.
    if (ok) planner_->Choose(batch->rows);
    if (!batch->rows.empty()) {
      planner_->OnClaimed(batch->rows);
      publish_round_(*batch);
    }
  } else if (!candidates.empty()) {
    ok = ClaimCandidates(batch);
  }
  planner_->EndPass();
  if (!ok) return ClaimRound::kFailed;
  const bool full = static_cast<int>(candidates.size()) >= config_.batch_size;
  return full ? ClaimRound::kMore : ClaimRound::kIdle;
}

void Claimer::StartOver() {
  if (planner_->in_pass()) EndPassAndSnapshot();
}

void Claimer::EndPassAndSnapshot() {
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

ClaimRound Claimer::StartPass() {
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
    for (const WindowRow& w : rows) NoteSeen(w.id);
    planner_->Consume(std::move(rows), page, want);
  }
  return true;
}

ClaimRound Claimer::ClaimOrdered(const RoundPlan& plan, ClaimedBatch* batch) {
  if (plan.end_pass && planner_->in_pass()) EndPassAndSnapshot();
  if (!planner_->in_pass()) {
    // The head read first: at everyday rates it is the whole round.
    if (plan.head_read) {
      if (std::optional<ClaimRound> r = ClaimOrderedHead(batch)) return *r;
    }
    ClaimRound r = StartPass();
    if (r != ClaimRound::kMore) return r;
  }
  ++pass_stats_.rounds;
  // Rows deferred behind this relay's own deliveries that are now free go
  // first, then the rest of the last page, then new pages.
  planner_->BeginRound(config_.batch_size);
  planner_->ConsumeBuffered(config_.batch_size);
  if (!ScanPages()) {
    EndPassAndSnapshot();
    return ClaimRound::kFailed;
  }
  const bool exhausted = planner_->pass_exhausted();
  if (!planner_->candidates().empty() && !ClaimCandidates(batch)) {
    EndPassAndSnapshot();
    return ClaimRound::kFailed;
  }
  // A pass read to its end stays open while it still claims (deferred rows
  // whose older events were delivered meanwhile); the next one starts when it
  // claims nothing.
  if (exhausted && batch->rows.empty()) {
    EndPassAndSnapshot();
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
