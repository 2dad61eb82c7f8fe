#include "relay/chain_publisher.h"

#include <atomic>
#include <optional>
#include <unordered_map>

namespace outbox {

namespace {
constexpr const char* kAfterFailure = "not sent: an earlier event of its aggregate failed";
constexpr const char* kOutOfBudget =
    "not sent: the batch ran out of its lease budget (slow broker)";
constexpr const char* kNoPublisher = "not sent: the producer was shut down";
}  // namespace

// One batch in flight. A chain has at most one message in flight, so its
// entries of `next_pos` and `outcomes` are touched by one party at a time:
// the thread that sends the chain's message, then the one that reports it
// (the producer's queue orders the two). `remaining` counts the rows whose
// outcome is still open; whoever brings it to 0 calls `done`. `publisher`
// is weak: the publisher holds the batch's callbacks (see the header's
// "Lifetime").
struct ChainPublisher::Batch {
  std::weak_ptr<Publisher> publisher;
  ClockPtr clock;
  Clock::TimePoint start_by;
  std::vector<std::optional<Message>> messages;  // per row; none if it was not routed
  std::vector<std::vector<size_t>> chains;       // row indexes, each in id order
  std::vector<size_t> chain_of;                  // row index -> chain index
  std::vector<size_t> next_pos;                  // chain index -> position of its next row
  std::vector<PublishOutcome> outcomes;          // per row
  std::atomic<size_t> remaining{0};
  DoneFn done;
};

PublishBudget BudgetFor(Clock::TimePoint claimed_at, int64_t lease_ms) {
  const auto half = std::chrono::milliseconds(lease_ms / 2);
  return {claimed_at + half - std::chrono::seconds(1), claimed_at + half};
}

ChainPublisher::ChainPublisher(PublisherPtr publisher, const Router* router, Ordering ordering,
                               ClockPtr clock)
    : publisher_(std::move(publisher)),
      router_(router),
      ordering_(ordering),
      clock_(std::move(clock)) {}

void ChainPublisher::Publish(const std::vector<OutboxRow>& rows, PublishBudget budget,
                             DoneFn done) {
  auto batch = std::make_shared<Batch>();
  batch->publisher = publisher_;
  batch->clock = clock_;
  batch->start_by = budget.start_by;
  batch->messages.resize(rows.size());
  batch->outcomes.resize(rows.size());
  batch->chain_of.assign(rows.size(), 0);
  batch->done = std::move(done);
  const size_t in_chains = FormChains(rows, batch.get());
  for (auto& m : batch->messages)
    if (m) m->queued_until = budget.queued_until;
  batch->next_pos.assign(batch->chains.size(), 0);
  batch->remaining = in_chains;
  if (in_chains == 0) {
    batch->done(std::move(batch->outcomes));
    return;
  }
  // The batch cannot finish before every chain's first message is sent:
  // `remaining` counts them all.
  for (size_t c = 0; c < batch->chains.size(); ++c) SendNext(batch, c);
}

size_t ChainPublisher::FormChains(const std::vector<OutboxRow>& rows, Batch* batch) const {
  const bool ordered = ordering_ == Ordering::kPerAggregate;
  std::unordered_map<AggregateKey, size_t, AggregateKeyHash> chain_of_aggregate;
  // Aggregates one row of which could not be routed: their later rows wait.
  std::unordered_map<AggregateKey, bool, AggregateKeyHash> broken;
  size_t in_chains = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const OutboxRow& row = rows[i];
    if (ordered && broken.count(row.aggregate)) {
      batch->outcomes[i] = {PublishResult::kNotAttempted, FailureReason::kNone, kAfterFailure};
      continue;
    }
    std::string error;
    batch->messages[i] = router_->Route(row, &error);
    if (!batch->messages[i]) {
      batch->outcomes[i] = {PublishResult::kPermanent, FailureReason::kRouting, error};
      if (ordered) broken[row.aggregate] = true;
      continue;
    }
    size_t chain = batch->chains.size();
    if (ordered) {
      auto [it, fresh] = chain_of_aggregate.try_emplace(row.aggregate, chain);
      if (fresh) batch->chains.emplace_back();
      chain = it->second;
    } else {
      batch->chains.emplace_back();
    }
    batch->chains[chain].push_back(i);
    batch->chain_of[i] = chain;
    ++in_chains;
  }
  return in_chains;
}

void ChainPublisher::SendNext(const std::shared_ptr<Batch>& batch, size_t chain) {
  const PublisherPtr publisher = batch->publisher.lock();
  if (!publisher) {
    CountDone(batch, ReleaseRest(batch.get(), chain, kNoPublisher));
    return;
  }
  const size_t row = batch->chains[chain][batch->next_pos[chain]++];
  publisher->Send(*batch->messages[row],
                  [batch, row](PublishOutcome outcome) { Finish(batch, row, std::move(outcome)); });
}

void ChainPublisher::Finish(const std::shared_ptr<Batch>& batch, size_t row,
                            PublishOutcome outcome) {
  const size_t chain = batch->chain_of[row];
  bool ok = outcome.result == PublishResult::kAcked;
  batch->outcomes[row] = std::move(outcome);
  size_t finished = 1;
  const bool more = batch->next_pos[chain] < batch->chains[chain].size();
  const char* cut = !ok                                      ? kAfterFailure
                    : batch->clock->Now() >= batch->start_by ? kOutOfBudget
                                                             : nullptr;
  // The rest of the chain must not overtake a failed message, and must not
  // outlive the lease: it is released unattempted and claimed again.
  if (more && cut != nullptr) finished += ReleaseRest(batch.get(), chain, cut);
  if (CountDone(batch, finished)) return;
  if (more && cut == nullptr) SendNext(batch, chain);
}

size_t ChainPublisher::ReleaseRest(Batch* batch, size_t chain, const char* why) {
  const auto& seq = batch->chains[chain];
  size_t released = 0;
  while (batch->next_pos[chain] < seq.size()) {
    batch->outcomes[seq[batch->next_pos[chain]++]] = {PublishResult::kNotAttempted,
                                                      FailureReason::kNone, why};
    ++released;
  }
  return released;
}

bool ChainPublisher::CountDone(const std::shared_ptr<Batch>& batch, size_t finished) {
  if (batch->remaining.fetch_sub(finished) != finished) return false;
  batch->done(std::move(batch->outcomes));
  return true;
}

}  // namespace outbox
