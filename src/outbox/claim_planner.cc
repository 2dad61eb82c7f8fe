#include "outbox/claim_planner.h"

#include <algorithm>

namespace outbox {

void ClaimPlanner::StartPass(int64_t min_id, const std::vector<DeadHead>& dead_heads) {
  in_pass_ = true;
  exhausted_ = false;
  cursor_ = min_id;
  dead_min_id_.clear();
  if (dead_policy_ == DeadPolicy::kBlock) {
    for (const auto& d : dead_heads) dead_min_id_[d.aggregate] = d.min_dead_id;
  }
  std::lock_guard<std::mutex> lock(mu_);
  blocked_.clear();
}

void ClaimPlanner::EndPass() {
  in_pass_ = false;
  exhausted_ = false;
}

void ClaimPlanner::BeginRound() {
  round_chains_.clear();
  candidates_.clear();
}

void ClaimPlanner::Block(const AggregateKey& key) { blocked_.insert(key); }

void ClaimPlanner::Consume(const std::vector<WindowRow>& page, int page_limit, int want) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const WindowRow& w : page) {
    if (static_cast<int>(candidates_.size()) >= want) {
      cursor_ = w.id;  // resume here next round
      return;
    }
    const AggregateKey& key = w.aggregate;
    if (blocked_.count(key)) continue;
    if (auto it = dead_min_id_.find(key); it != dead_min_id_.end() && it->second < w.id) {
      Block(key);
      continue;
    }
    bool in_round = round_chains_.count(key) > 0;
    if (!in_round && inflight_.count(key)) {
      Block(key);  // an older event of ours is still being delivered
      continue;
    }
    if (!w.due) {
      // Backing off, or leased by a live relay: it and everything after it
      // in its aggregate wait. Earlier rows of the round's chain stay valid.
      Block(key);
      continue;
    }
    round_chains_[key].push_back(w.id);
    candidates_.push_back(w.id);
  }
  if (!page.empty()) cursor_ = page.back().id + 1;
  if (static_cast<int>(page.size()) < page_limit) exhausted_ = true;
}

std::vector<int64_t> ClaimPlanner::Choose(const std::vector<OutboxRow>& locked) {
  std::set<int64_t> got;
  for (const auto& r : locked) got.insert(r.id);
  std::vector<int64_t> chosen;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [key, chain] : round_chains_) {
    for (int64_t id : chain) {
      if (!got.count(id)) {
        Block(key);  // someone else holds (or settled) an older event
        break;
      }
      chosen.push_back(id);
    }
  }
  std::sort(chosen.begin(), chosen.end());
  return chosen;
}

void ClaimPlanner::OnClaimed(const std::vector<OutboxRow>& rows) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& r : rows) ++inflight_[r.aggregate];
}

void ClaimPlanner::OnSettled(const std::vector<AggregateKey>& done,
                             const std::vector<AggregateKey>& not_done) {
  std::lock_guard<std::mutex> lock(mu_);
  auto release = [&](const AggregateKey& k) {
    auto it = inflight_.find(k);
    if (it != inflight_.end() && --it->second <= 0) inflight_.erase(it);
  };
  for (const auto& k : done) release(k);
  for (const auto& k : not_done) {
    release(k);
    blocked_.insert(k);
  }
}

}  // namespace outbox
