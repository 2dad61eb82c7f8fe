#pragma once

// Settle operations the store tests build: header-only, for any test binary
// that links the outbox store.

#include <vector>

#include "outbox/row.h"

namespace outbox::testing {

// Every row of `batch` SENT: what the relay settles once the broker
// acknowledged the whole batch.
inline std::vector<SettleOp> AllSent(const ClaimedBatch& batch) {
  std::vector<SettleOp> ops;
  for (const auto& row : batch.rows) ops.push_back({row.id, SettleKind::kSent, 0, ""});
  return ops;
}

}  // namespace outbox::testing
