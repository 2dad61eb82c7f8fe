#pragma once

#include "outbox/row.h"

namespace outbox::testing {

// The row the router tests route: event 7, an OrderPaid of aggregate
// Order/42, with every column the contract headers come from set.
inline OutboxRow RouterRow() {
  OutboxRow r;
  r.id = 7;
  r.aggregate = {"Order", 42};
  r.event_type = "OrderPaid";
  r.event_key = "OrderPaid-42-2";
  r.payload = R"({"a":1})";
  r.created_at_unix = 1700000000;
  return r;
}

}  // namespace outbox::testing
