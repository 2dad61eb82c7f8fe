#pragma once

// The inbox consumer as a library (docs/CONSUMERS.md, "Library"): a
// consumer-group member that applies each event of the relay once through
// a service's Handler, in one transaction with the event's inbox row.
//
//   #include <outbox/inbox/consumer.h>
//
//   class ShipOrder : public outbox::inbox::Handler {
//     outbox::inbox::Status Apply(outbox::inbox::Transaction& tx, const outbox::inbox::Event& e)
//     override { ... }
//   };
//   ShipOrder handler;
//   outbox::inbox::Consumer consumer(config, handler);
//   return consumer.Run(stop);  // until `stop` becomes true

#include <atomic>
#include <memory>

#include "outbox/inbox/config.h"
#include "outbox/inbox/event.h"
#include "outbox/inbox/export.h"
#include "outbox/inbox/handler.h"
#include "outbox/inbox/log.h"
#include "outbox/inbox/observer.h"
#include "outbox/inbox/schema.h"
#include "outbox/inbox/status.h"
#include "outbox/inbox/transaction.h"

namespace outbox::inbox {

class ConsumerGroup;

struct ConsumerOptions {
  // Told the outcome of each message and the consumer's gauges, on the
  // consumer's thread; may be null. Must outlive the Consumer.
  ConsumerObserver* observer = nullptr;
  // The host's logger: when set, every line the consumer logs goes here,
  // from log_level up, instead of to spdlog's default logger. Empty:
  // spdlog's default logger, with the level, format and sinks the host
  // gave it (spdlog::set_default_logger); the library never changes it.
  LogCallback log;
  LogLevel log_level = LogLevel::kInfo;
};

// One consumer-group member: polls, and per message runs the inbox
// transaction (inbox row, version check, handler), commits, then stores the
// offset; dead-letters what cannot be processed and parks what the
// dead-letter topic refuses; pauses a partition on database or broker
// failures and between attempts, never sleeping in the poll loop.
// With config.concurrency 1 (the default) single-threaded: the handler,
// the rebalances and the observer all run on the thread that calls Run.
// With N > 1, N members run on threads of their own, each its own group
// member, and Handler::Apply and the observer are called from all of them
// at once: both must then be thread-safe. *config and *handler must
// outlive the Consumer.
class OUTBOX_INBOX_EXPORT Consumer {
 public:
  // Throws std::invalid_argument "inbox consumer config: key.path: what
  // is wrong" when Validate(config) finds a problem (outbox/inbox/config.h).
  Consumer(const ConsumerConfig& config, Handler& handler, const ConsumerOptions& options = {});
  ~Consumer();
  Consumer(const Consumer&) = delete;
  Consumer& operator=(const Consumer&) = delete;

  // Runs until `stop` becomes true (a SIGTERM handler sets it), then
  // finishes the current message, commits the stored offsets and leaves the
  // group. 0 after a clean stop, 1 when Kafka cannot be set up or librdkafka
  // reports a fatal error. With several members, one that stops (a fatal
  // error) stops the others; the highest exit code is returned.
  int Run(const std::atomic<bool>& stop);

 private:
  std::unique_ptr<ConsumerGroup> impl_;
};

}  // namespace outbox::inbox
