#include "config/config.h"

namespace outbox {

const char* ToString(Ordering o) { return o == Ordering::kNone ? "none" : "per_aggregate"; }
const char* ToString(DeadPolicy p) { return p == DeadPolicy::kSkip ? "skip" : "block"; }

}  // namespace outbox
