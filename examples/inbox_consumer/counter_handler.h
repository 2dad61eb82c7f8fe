#pragma once

#include "outbox/inbox/handler.h"

namespace example {

// The example's business effect (sql/t_aggregate_effect.sql): a counter per
// aggregate, deliberately not idempotent, so that a missed dedupe shows as a
// wrong count. The consumer tests judge exactly-once by it.
class CounterHandler : public outbox::inbox::Handler {
 public:
  outbox::inbox::Status Apply(outbox::inbox::Transaction& tx,
                              const outbox::inbox::Event& event) override;
};

}  // namespace example
