#pragma once

#include <outbox/inbox/handler.h>

namespace payments {

// The service's handler: each OrderPaid event becomes one row of
// t_payment (payments.sql), committed with the event's inbox row, so a
// second delivery of the event changes nothing. Other event types are
// recorded in the inbox and skipped. Keeps no state: safe with
// concurrency > 1.
class RecordPayment : public outbox::inbox::Handler {
 public:
  outbox::inbox::Status Apply(outbox::inbox::Transaction& tx,
                              const outbox::inbox::Event& event) override;
};

}  // namespace payments
