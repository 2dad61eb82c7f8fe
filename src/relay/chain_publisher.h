#pragma once

#include <functional>
#include <vector>

#include "common/clock.h"
#include "config/config.h"
#include "kafka/publisher.h"
#include "outbox/row.h"
#include "relay/router.h"

namespace outbox {

// Publishes one claimed batch and holds the chain rules in one place
// (docs/DESIGN.md, "Chain rules"):
//  - every row is routed to a message; a row that cannot be routed fails
//    permanently (reason routing);
//  - with ordering per_aggregate the rows of one aggregate form a chain, in
//    id order: a chain's next message is sent only after the previous one
//    was acknowledged, and after a failure (or a routing failure) the rest of
//    the chain is not attempted, so no event overtakes an older one; with
//    ordering none every row is a chain of its own;
//  - the lease budget (PublishBudget): no chain message is started at or
//    after `start_by` (it is released, not attempted), and every message
//    carries `queued_until`, when the publisher takes it back if it is still
//    queued, unsent; so the batch settles while its lease is still this
//    relay's, even when the broker is slow or down.
// Thread-safe: Publish may be called from any thread; `*router` must outlive
// the ChainPublisher (the Relay owns both).
//
// Lifetime: a batch in flight lives in the SentFn callbacks it handed to the
// publisher, and may outlive the ChainPublisher (and the Relay): its messages
// complete later, or are purged when the producer is destroyed. The batch
// refers to the publisher weakly, so that the publisher holding the batch's
// callbacks and the batch holding the publisher form no reference cycle (a
// message never completed would leak both). A chain's next message is sent
// only while the publisher still exists; once it is gone (or is being
// destroyed and purges its queue) the rest of the chain is released as not
// attempted and `done` is still called once. A publisher destroyed with
// callbacks it never calls drops them, and with them its batches.
// A claim's publish budget, from its lease (docs/DESIGN.md, "The lease
// budget"): chain messages start before `start_by` = claim + lease/2 - 1 s;
// one still queued in the producer at `queued_until` = claim + lease/2 is
// taken back unsent; one on the wire fails by librdkafka's
// message.timeout.ms = request.timeout.ms = lease/2 (src/kafka/kafka_config.cc)
// after it started, so by claim + lease - 1 s.
struct PublishBudget {
  Clock::TimePoint start_by;
  Clock::TimePoint queued_until = Clock::TimePoint::max();
};
PublishBudget BudgetFor(Clock::TimePoint claimed_at, int64_t lease_ms);

class ChainPublisher {
 public:
  // One outcome per row, in the rows' order.
  using DoneFn = std::function<void(std::vector<PublishOutcome>)>;

  ChainPublisher(PublisherPtr publisher, const Router* router, Ordering ordering, ClockPtr clock);

  // Publishes `rows` (id order) within `budget`. `done` is called exactly
  // once, from any thread (possibly before Publish returns).
  void Publish(const std::vector<OutboxRow>& rows, PublishBudget budget, DoneFn done);
  // The same with no `queued_until`.
  void Publish(const std::vector<OutboxRow>& rows, Clock::TimePoint start_by, DoneFn done) {
    Publish(rows, PublishBudget{start_by}, std::move(done));
  }
  bool Healthy() const { return publisher_->Healthy(); }

 private:
  struct Batch;
  // Routes every row and groups the routed ones into chains (one per
  // aggregate with per_aggregate, one per row with none); returns how many
  // rows are in chains. The rest already have their outcome.
  size_t FormChains(const std::vector<OutboxRow>& rows, Batch* batch) const;
  static void SendNext(const std::shared_ptr<Batch>& batch, size_t chain);
  static void Finish(const std::shared_ptr<Batch>& batch, size_t row, PublishOutcome outcome);
  // Marks the rest of `chain` not attempted, for `why`; returns how many rows.
  static size_t ReleaseRest(Batch* batch, size_t chain, const char* why);
  // Counts `finished` rows done; the last one calls `done`. True if it did.
  static bool CountDone(const std::shared_ptr<Batch>& batch, size_t finished);

  const PublisherPtr publisher_;
  const Router* const router_;
  const Ordering ordering_;
  const ClockPtr clock_;
};

}  // namespace outbox
