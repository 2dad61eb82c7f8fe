#include "outbox/claim_planner.h"

#include <algorithm>

namespace outbox {

void ClaimPlanner::StartPass(int64_t min_id) {
  in_pass_ = true;
  exhausted_ = false;
  cursor_ = min_id;
  std::lock_guard<std::mutex> lock(mu_);
  blocked_.clear();
}

void ClaimPlanner::UpdateDeadHeads(const std::vector<DeadHead>& dead_heads) {
  if (dead_policy_ != DeadPolicy::kBlock) return;
  std::map<AggregateKey, int64_t> fresh;
  for (const auto& d : dead_heads) fresh[d.aggregate] = d.min_dead_id;
  // No candidate may lie behind a DEAD row, nor behind a row replayed since
  // the last update (NEW again, possibly behind the cursor).
  std::map<AggregateKey, int64_t> barrier = fresh;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [key, id] : dead_min_id_) {
    if (fresh.count(key)) continue;
    Block(key);
    barrier[key] = id;
  }
  dead_min_id_ = std::move(fresh);
  bool dropped = false;
  for (auto it = round_chains_.begin(); it != round_chains_.end();) {
    auto b = barrier.find(it->first);
    auto& chain = it->second;
    size_t keep = chain.size();
    if (b != barrier.end())
      keep = std::lower_bound(chain.begin(), chain.end(), b->second) - chain.begin();
    if (keep < chain.size()) {
      Block(it->first);
      chain.resize(keep);
      dropped = true;
    }
    it = chain.empty() ? round_chains_.erase(it) : std::next(it);
  }
  if (!dropped) return;
  candidates_.clear();
  for (const auto& [key, chain] : round_chains_)
    candidates_.insert(candidates_.end(), chain.begin(), chain.end());
  std::sort(candidates_.begin(), candidates_.end());
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
