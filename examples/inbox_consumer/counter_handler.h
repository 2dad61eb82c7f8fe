#pragma once

#include "outbox/inbox/handler.h"

namespace inbox {

// The example's business effect (sql/t_aggregate_effect.sql): a counter per
// aggregate, deliberately not idempotent, so that a missed dedupe shows as a
// wrong count. The consumer tests judge exactly-once by it.
class CounterHandler : public Handler {
 public:
  Status Apply(Transaction& tx, const Event& event) override;
};

}  // namespace inbox
