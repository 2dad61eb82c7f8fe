#pragma once

#include "outbox/inbox/event.h"
#include "outbox/inbox/export.h"
#include "outbox/inbox/status.h"
#include "outbox/inbox/transaction.h"

namespace outbox::inbox {

// The one thing a service writes: the business effect of one event
// (docs/CONSUMERS.md, "Library"). The library calls Apply inside the inbox
// transaction, only for an event new to the inbox that the version check
// lets through, and commits (or rolls back, per the Status) after it
// returns. Deduplication, ordering, retries, dead letters, replay,
// retention, metrics and rebalances are the library's.
//
// Called on a consumer-group member's thread, one event at a time per
// member: with ConsumerConfig::concurrency 1 (the default) on the thread
// that calls Consumer::Run, with N > 1 from N threads at once, so Apply
// must then be thread-safe (a handler that keeps no state of its own is).
// An event may be applied again after a rollback (a retry, a crash before
// COMMIT), never after its transaction committed. Effects outside the database do not
// roll back: send the event's event_key along as the remote side's
// idempotency key (docs/CONSUMERS.md, "Side effects outside the database:
// the event's key goes along").
class OUTBOX_INBOX_EXPORT Handler {
 public:
  virtual ~Handler() = default;
  virtual Status Apply(Transaction& tx, const Event& event) = 0;
};

}  // namespace outbox::inbox
