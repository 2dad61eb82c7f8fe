#include "relay/claim_planner.h"

#include <algorithm>
#include <cstddef>

namespace outbox {

void ClaimPlanner::StartPass(int64_t min_id, const std::vector<DeadHead>& dead_heads) {
  in_pass_ = true;
  page_short_ = false;
  held_by_peer_ = false;
  cursor_ = min_id;
  buffered_.clear();
  buffered_pos_ = 0;
  dead_min_id_.clear();
  if (dead_policy_ == DeadPolicy::kBlock)
    for (const auto& d : dead_heads) dead_min_id_[d.aggregate] = d.min_dead_id;
  MutexLock lock(&mu_);
  blocked_.clear();
  deferred_.clear();
  deferred_rows_ = 0;
  last_pass_deferred_.clear();  // this pass reads them again
}

void ClaimPlanner::EndPass() {
  in_pass_ = false;
  page_short_ = false;
  buffered_.clear();
  buffered_pos_ = 0;
  MutexLock lock(&mu_);
  for (const auto& d : deferred_) last_pass_deferred_.insert(d.first);
  deferred_.clear();
  deferred_rows_ = 0;
}

void ClaimPlanner::AddCandidate(const AggregateKey& key, int64_t id) {
  auto [it, fresh] = chain_of_.try_emplace(key, round_chains_.size());
  if (fresh) round_chains_.emplace_back(key, std::vector<int64_t>{});
  round_chains_[it->second].second.push_back(id);
  candidates_.push_back(id);
}

void ClaimPlanner::BeginRound(int want) {
  chain_of_.clear();
  round_chains_.clear();
  candidates_.clear();
  MutexLock lock(&mu_);
  for (auto it = deferred_.begin(); it != deferred_.end() && !full(want);) {
    auto& rows = it->second;
    size_t take = 0;
    if (!blocked_.count(it->first)) {
      if (inflight_.count(it->first)) {
        ++it;  // its older event is still being delivered
        continue;
      }
      // Everything older of this aggregate is SENT or delivered by this
      // relay: the deferred rows are its next events, in id order.
      take = std::min(rows.size(), static_cast<size_t>(want) - candidates_.size());
      for (size_t i = 0; i < take; ++i) AddCandidate(it->first, rows[i]);
    } else {
      take = rows.size();  // blocked: the next pass looks again
    }
    deferred_rows_ -= take;
    rows.erase(rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(take));
    it = rows.empty() ? deferred_.erase(it) : std::next(it);
  }
}

void ClaimPlanner::Block(const AggregateKey& key) { blocked_.insert(key); }

void ClaimPlanner::Take(const WindowRow& w) {
  const AggregateKey& key = w.aggregate;
  if (blocked_.count(key)) return;
  if (auto it = dead_min_id_.find(key); it != dead_min_id_.end() && it->second < w.id) {
    Block(key);
    return;
  }
  // This relay's own row, still in flight (claimed before this pass's
  // snapshot): not a blocker; the aggregate's later rows are deferred.
  if (inflight_ids_.count(w.id)) return;
  auto deferred = deferred_.find(key);
  bool in_round = chain_of_.count(key) > 0;
  if (deferred != deferred_.end() || (!in_round && inflight_.count(key))) {
    // An older event of ours is being delivered (or waits deferred itself):
    // this row goes once that one is SENT.
    if (!w.due || deferred_rows_ >= max_deferred_) {
      Block(key);
      return;
    }
    deferred_[key].push_back(w.id);
    ++deferred_rows_;
    return;
  }
  if (!w.due) {
    // Backing off, or leased by a live relay: it and everything after it
    // in its aggregate wait. Earlier rows of the round's chain stay valid.
    held_by_peer_ = held_by_peer_ || w.sending;
    Block(key);
    return;
  }
  AddCandidate(key, w.id);
}

void ClaimPlanner::ConsumeBuffered(int want) {
  MutexLock lock(&mu_);
  while (buffered_pos_ < buffered_.size() && !full(want)) Take(buffered_[buffered_pos_++]);
  if (buffered_pos_ == buffered_.size()) {
    buffered_.clear();
    buffered_pos_ = 0;
  }
}

void ClaimPlanner::Consume(std::vector<WindowRow> page, int page_limit, int want) {
  if (!page.empty()) cursor_ = page.back().id + 1;
  page_short_ = static_cast<int>(page.size()) < page_limit;
  buffered_ = std::move(page);
  buffered_pos_ = 0;
  ConsumeBuffered(want);
}

size_t ClaimPlanner::held() const {
  MutexLock lock(&mu_);
  return inflight_ids_.size();
}

size_t ClaimPlanner::deferred_count() const {
  MutexLock lock(&mu_);
  return deferred_rows_;
}

std::vector<int64_t> ClaimPlanner::Choose(const std::vector<OutboxRow>& locked) {
  std::unordered_set<int64_t> got;
  got.reserve(locked.size());
  for (const auto& r : locked) got.insert(r.id);
  std::vector<int64_t> chosen;
  MutexLock lock(&mu_);
  for (const auto& [key, chain] : round_chains_) {
    for (int64_t id : chain) {
      if (!got.count(id)) {
        Block(key);  // someone else holds (or settled) an older event
        held_by_peer_ = true;
        break;
      }
      chosen.push_back(id);
    }
  }
  std::sort(chosen.begin(), chosen.end());
  return chosen;
}

void ClaimPlanner::OnClaimed(const std::vector<OutboxRow>& rows) {
  MutexLock lock(&mu_);
  for (const auto& r : rows) {
    ++inflight_[r.aggregate];
    inflight_ids_.insert(r.id);
  }
}

void ClaimPlanner::Uncount(const AggregateKey& key) {
  auto it = inflight_.find(key);
  if (it != inflight_.end() && --it->second <= 0) inflight_.erase(it);
}

bool ClaimPlanner::OnDelivered(const std::vector<SettledRow>& rows) {
  MutexLock lock(&mu_);
  bool ready = false;
  for (const auto& r : rows) {
    if (!inflight_ids_.count(r.id) || !delivered_ids_.insert(r.id).second) continue;
    Uncount(r.aggregate);
    const bool waits = deferred_.count(r.aggregate) || last_pass_deferred_.count(r.aggregate);
    ready = ready || (!inflight_.count(r.aggregate) && waits && !blocked_.count(r.aggregate));
  }
  return ready;
}

void ClaimPlanner::OnSettled(const std::vector<SettledRow>& rows) {
  MutexLock lock(&mu_);
  for (const auto& r : rows) {
    if (!delivered_ids_.erase(r.id)) Uncount(r.aggregate);
    inflight_ids_.erase(r.id);
    if (!r.done) blocked_.insert(r.aggregate);
  }
}

}  // namespace outbox
