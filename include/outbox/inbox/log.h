#pragma once

#include <functional>
#include <string_view>

namespace outbox::inbox {

enum class LogLevel { kDebug, kInfo, kWarn, kError };

// The host's logger (ConsumerOptions::log): every line the consumer logs,
// at ConsumerOptions::log_level or above, with its level. `message` is what happened,
// then its fields as ` key=value` pairs, e.g.
//   stalled: pausing the partition topic=outbox.event.Order partition=2 offset=41 ...
// Called on the consumer's threads (with concurrency N, each member's),
// librdkafka's own lines included; must be thread-safe then.
using LogCallback = std::function<void(LogLevel level, std::string_view message)>;

}  // namespace outbox::inbox
