#include "fakes/fake_store.h"

#include <algorithm>
#include <set>
#include <tuple>

namespace outbox::testing {

namespace {
const Status kDown = Status::Unavailable("injected: can't connect to server (fake database down)");
}  // namespace

int64_t FakeTable::Insert(const std::string& aggregate_type, int64_t aggregate_id,
                          const std::string& event_type, const std::string& payload) {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t id = next_id_++;
  FakeRow r;
  r.row.id = id;
  r.row.aggregate = {aggregate_type, aggregate_id};
  r.row.event_type = event_type;
  r.row.event_key = "key-" + std::to_string(id);
  r.row.payload = payload;
  r.row.created_at_unix = static_cast<int64_t>(clock_->UnixNow());
  r.next_retry_at_ms = clock_->UnixMs();
  rows_[id] = r;
  return id;
}

FakeRow FakeTable::Get(int64_t id) const {
  std::lock_guard<std::mutex> lock(mu_);
  return rows_.at(id);
}

void FakeTable::Put(int64_t id, const FakeRow& row) {
  std::lock_guard<std::mutex> lock(mu_);
  rows_[id] = row;
}

int FakeTable::CountStatus(const std::string& status) const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(std::count_if(
      rows_.begin(), rows_.end(), [&](const auto& kv) { return kv.second.status == status; }));
}

Status FakeTable::DownStatus() { return kDown; }

bool FakeTable::down() const {
  std::lock_guard<std::mutex> lock(mu_);
  return down_;
}

std::shared_ptr<FakeTable> FakeTable::Snapshot() const {
  auto copy = std::make_shared<FakeTable>(clock_);
  std::lock_guard<std::mutex> lock(mu_);
  copy->rows_ = rows_;
  copy->next_id_ = next_id_;
  return copy;
}

void FakeTable::set_down(bool down) {
  std::lock_guard<std::mutex> lock(mu_);
  down_ = down;
}

Status FakeTable::Connect() {
  std::lock_guard<std::mutex> lock(mu_);
  return down_ ? kDown : Status::Ok();
}

bool FakeTable::Claimable(const FakeRow& r, int64_t now) const {
  return (r.status == "NEW" || r.status == "SENDING") && r.next_retry_at_ms <= now;
}

// REQUIRES: mu_ held. The row as a claim statement returns it: `reclaimed`
// and the age on the (fake) database clock, at whole seconds of created_at
// as a DATETIME column has them.
OutboxRow FakeTable::AsClaimed(const FakeRow& r) const {
  OutboxRow out = r.row;
  out.reclaimed = r.status == "SENDING";
  out.age_at_claim_us = clock_->UnixMs() * 1000 - r.row.created_at_unix * 1000000;
  return out;
}

// REQUIRES: mu_ held. Marks `ids` SENDING under one lease, calls
// `before_commit` (under mu_, as the rows' locks are held), then "commits":
// with an injected commit failure the rows go back as they were.
Status FakeTable::Claim(const std::vector<int64_t>& ids, int64_t lease_ms, ClaimedBatch* out,
                        const ClaimedFn& before_commit) {
  *out = ClaimedBatch{};
  if (ids.empty()) return Status::Ok();  // as MysqlStore: no rows, no token
  const int64_t token = clock_->UnixMs() + lease_ms;
  out->lease_token = std::to_string(token);
  std::vector<FakeRow> before;
  for (int64_t id : ids) {
    FakeRow& r = rows_.at(id);
    before.push_back(r);
    OutboxRow claimed = AsClaimed(r);
    out->reclaimed += claimed.reclaimed;
    r.status = "SENDING";
    r.next_retry_at_ms = token;
    out->rows.push_back(claimed);
  }
  if (before_commit) before_commit(*out);
  if (claim_commit_failures_ > 0) {
    --claim_commit_failures_;
    for (size_t i = 0; i < ids.size(); ++i) rows_[ids[i]] = before[i];
    *out = ClaimedBatch{};
    return Status::Unavailable("injected: lost connection to server during COMMIT");
  }
  return Status::Ok();
}

void FakeTable::FailClaimCommits(int n) {
  std::lock_guard<std::mutex> lock(mu_);
  claim_commit_failures_ = n;
}

Status FakeTable::HasDue(bool include_expired, bool* due) {
  std::lock_guard<std::mutex> lock(mu_);
  if (down_) return kDown;
  const int64_t now = clock_->UnixMs();
  *due = std::any_of(rows_.begin(), rows_.end(), [&](const auto& kv) {
    return Claimable(kv.second, now) && (kv.second.status == "NEW" || include_expired);
  });
  return Status::Ok();
}

Status FakeTable::ClaimDue(int limit, int64_t lease_ms, bool include_expired, ClaimedBatch* out,
                           const ClaimedFn& before_commit) {
  std::lock_guard<std::mutex> lock(mu_);
  if (down_) return kDown;
  const int64_t now = clock_->UnixMs();
  // As MysqlStore: expired leases first, then due NEW rows, each in
  // (next_retry_at, id) order.
  std::vector<std::tuple<bool, int64_t, int64_t>> due;  // (is NEW, next_retry_at, id)
  for (const auto& [id, r] : rows_)
    if (Claimable(r, now) && (r.status == "NEW" || include_expired))
      due.emplace_back(r.status == "NEW", r.next_retry_at_ms, id);
  std::sort(due.begin(), due.end());
  std::vector<int64_t> ids;
  for (const auto& d : due) {
    if (static_cast<int>(ids.size()) >= limit) break;
    ids.push_back(std::get<2>(d));
  }
  return Claim(ids, lease_ms, out, before_commit);
}

Status FakeTable::MinPendingId(std::optional<int64_t>* id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (down_) return kDown;
  id->reset();
  for (const auto& [rid, r] : rows_) {
    if (r.status == "NEW" || r.status == "SENDING") {
      *id = rid;
      break;
    }
  }
  return Status::Ok();
}

// REQUIRES: mu_ held.
void FakeTable::DeadHeadsLocked(std::vector<DeadHead>* out) const {
  std::map<AggregateKey, int64_t> heads;
  for (const auto& [id, r] : rows_)
    if (r.status == "DEAD") heads.try_emplace(r.row.aggregate, id);
  out->clear();
  for (const auto& [agg, id] : heads) out->push_back({agg, id});
}

Status FakeTable::DeadHeads(std::vector<DeadHead>* out) {
  std::lock_guard<std::mutex> lock(mu_);
  if (down_) return kDown;
  DeadHeadsLocked(out);
  return Status::Ok();
}

Status FakeTable::ReadHead(const HeadQuery& q, HeadRead* out) {
  std::lock_guard<std::mutex> lock(mu_);
  if (down_) return kDown;
  *out = HeadRead{};
  const int64_t now = clock_->UnixMs();
  out->lease_token = std::to_string(now + q.lease_ms);  // as Claim's token
  for (const auto& [id, r] : rows_) {
    if (static_cast<int>(out->rows.size()) >= q.limit) break;
    const bool due = Claimable(r, now);
    if ((r.status != "NEW" && r.status != "SENDING") || (!q.ordered && !due)) continue;
    out->rows.push_back(AsClaimed(r));
    out->window.push_back({id, r.row.aggregate, r.status == "SENDING", due});
  }
  if (q.ordered && q.dead_heads && !out->rows.empty()) DeadHeadsLocked(&out->dead_heads);
  return Status::Ok();
}

Status FakeTable::ClaimRow(int64_t id, const std::string& lease_token, bool* claimed) {
  std::lock_guard<std::mutex> lock(mu_);
  if (down_) return kDown;
  *claimed = false;
  auto it = rows_.find(id);
  if (it == rows_.end() || !Claimable(it->second, clock_->UnixMs())) return Status::Ok();
  if (claim_commit_failures_ > 0) {  // the statement's commit is lost: nothing changed
    --claim_commit_failures_;
    return Status::Unavailable("injected: lost connection to server during COMMIT");
  }
  it->second.status = "SENDING";
  it->second.next_retry_at_ms = std::stoll(lease_token);
  *claimed = true;
  return Status::Ok();
}

Status FakeTable::ScanWindow(int64_t from_id, int limit, std::vector<WindowRow>* out) {
  std::lock_guard<std::mutex> lock(mu_);
  if (down_) return kDown;
  const int64_t now = clock_->UnixMs();
  out->clear();
  for (auto it = rows_.lower_bound(from_id);
       it != rows_.end() && static_cast<int>(out->size()) < limit; ++it) {
    const FakeRow& r = it->second;
    if (r.status != "NEW" && r.status != "SENDING") continue;
    out->push_back({it->first, r.row.aggregate, r.status == "SENDING", r.next_retry_at_ms <= now});
  }
  return Status::Ok();
}

Status FakeTable::ClaimIds(const std::vector<int64_t>& ids, int64_t lease_ms,
                           const OutboxStore::ChooseFn& choose, ClaimedBatch* out,
                           const ClaimedFn& before_commit) {
  std::lock_guard<std::mutex> lock(mu_);
  if (down_) return kDown;
  const int64_t now = clock_->UnixMs();
  std::set<int64_t> sorted(ids.begin(), ids.end());
  std::vector<OutboxRow> locked;
  for (int64_t id : sorted) {
    auto it = rows_.find(id);
    if (it != rows_.end() && Claimable(it->second, now)) locked.push_back(AsClaimed(it->second));
  }
  // As MysqlStore: only rows that were locked, in id order.
  std::vector<int64_t> chosen = choose(locked);
  std::sort(chosen.begin(), chosen.end());
  std::vector<int64_t> claim;
  for (const auto& r : locked)
    if (std::binary_search(chosen.begin(), chosen.end(), r.id)) claim.push_back(r.id);
  return Claim(claim, lease_ms, out, before_commit);
}

Status FakeTable::Settle(const std::string& lease_token, const std::vector<SettleOp>& ops,
                         SettleResult* result) {
  std::lock_guard<std::mutex> lock(mu_);
  if (down_) return kDown;
  const int64_t now = clock_->UnixMs();
  *result = {};
  for (const SettleOp& op : ops) {
    auto it = rows_.find(op.id);
    const bool ours =
        it != rows_.end() && std::to_string(it->second.next_retry_at_ms) == lease_token;
    if (!ours || it->second.status != "SENDING") {
      ++result->stale;
      // As MysqlStore: a kSent op whose row is already SENT under this very
      // lease (a settle retried after its reply was lost) is not named: the
      // row was sent by this claim.
      const bool sent_by_us = ours && it->second.status == "SENT" && op.kind == SettleKind::kSent;
      if (op.kind != SettleKind::kRelease && !sent_by_us) result->stale_ids.push_back(op.id);
      continue;
    }
    FakeRow& r = it->second;
    switch (op.kind) {
      case SettleKind::kSent:
        r.status = "SENT";
        break;
      case SettleKind::kRelease:
        r.status = "NEW";
        r.next_retry_at_ms = now;
        break;
      case SettleKind::kRetry:
        r.status = "NEW";
        ++r.row.retry_count;
        r.next_retry_at_ms = now + op.backoff_ms;
        r.last_error = op.error;
        break;
      case SettleKind::kDead:
        r.status = "DEAD";
        ++r.row.retry_count;
        r.last_error = op.error;
        break;
    }
    ++result->applied;
  }
  result->commits = result->applied > 0 ? 1 : 0;  // the fake's settle is one transaction
  return Status::Ok();
}

Status FakeTable::ReadStats(TableStats* out) {
  std::lock_guard<std::mutex> lock(mu_);
  if (down_) return kDown;
  *out = {};
  std::optional<int64_t> oldest, next_due_ms;
  const int64_t now = clock_->UnixMs();
  for (const auto& [id, r] : rows_) {
    if (r.status == "NEW" || r.status == "SENDING") {
      ++out->backlog;
      oldest = std::min(oldest.value_or(r.row.created_at_unix), r.row.created_at_unix);
      if (r.next_retry_at_ms > now)
        next_due_ms = std::min(next_due_ms.value_or(r.next_retry_at_ms), r.next_retry_at_ms);
    } else if (r.status == "DEAD") {
      ++out->dead;
    } else if (r.status != "SENT") {
      ++out->unknown_status;
    }
  }
  if (oldest) out->oldest_unsent_age_s = clock_->UnixNow() - static_cast<double>(*oldest);
  if (next_due_ms) out->next_due_in_s = static_cast<double>(*next_due_ms - now) / 1000.0;
  return Status::Ok();
}

void FakeTable::set_blocked_count_cost(std::chrono::milliseconds cost) {
  std::lock_guard<std::mutex> lock(mu_);
  blocked_count_cost_ = cost;
}

int FakeTable::blocked_counts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return blocked_counts_;
}

Status FakeTable::CountBlockedAggregates(int64_t* out) {
  std::lock_guard<std::mutex> lock(mu_);
  if (down_) return kDown;
  ++blocked_counts_;
  clock_->Advance(blocked_count_cost_);
  std::set<AggregateKey> dead_aggregates, blocked;
  for (const auto& [id, r] : rows_) {  // in id order
    if (r.status == "DEAD")
      dead_aggregates.insert(r.row.aggregate);
    else if ((r.status == "NEW" || r.status == "SENDING") && dead_aggregates.count(r.row.aggregate))
      blocked.insert(r.row.aggregate);
  }
  *out = static_cast<int64_t>(blocked.size());
  return Status::Ok();
}

Status FakeTable::DeleteSentBatch(int days, int limit, int64_t* cursor, int64_t* deleted,
                                  bool* done) {
  std::lock_guard<std::mutex> lock(mu_);
  if (down_) return kDown;
  const double cutoff = clock_->UnixNow() - days * 86400.0;
  *deleted = 0;
  auto it = rows_.upper_bound(*cursor);
  for (int seen = 0; it != rows_.end() && seen < limit; ++seen) {
    *cursor = it->first;
    bool old_sent =
        it->second.status == "SENT" && static_cast<double>(it->second.row.created_at_unix) < cutoff;
    if (old_sent) {
      it = rows_.erase(it);
      ++*deleted;
    } else {
      ++it;
    }
  }
  *done = it == rows_.end();
  return Status::Ok();
}

}  // namespace outbox::testing
