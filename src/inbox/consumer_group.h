#pragma once

#include <atomic>
#include <memory>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "inbox/consumer_metrics.h"
#include "inbox/consumer_test_seams.h"
#include "inbox/inbox_consumer.h"
#include "inbox/observer_tee.h"
#include "outbox/inbox/consumer.h"

namespace outbox::inbox {

// config.concurrency members of one consumer group in this process
// (outbox/inbox/consumer.h): the implementation of outbox::inbox::Consumer, and
// what main.cc runs. Each member is an InboxConsumer on a thread of its
// own; member 0 runs on the thread that calls Run. With config.http_listen
// the group serves the consumer's metrics, /healthz and /readyz there
// (ConsumerMetrics), beside the service's own options.observer. *config and
// *handler must outlive the group.
class ConsumerGroup {
 public:
  ConsumerGroup(const ConsumerConfig& config, Handler& handler, const ConsumerOptions& options = {},
                const TestSeams& seams = {});

  // Serves http.listen (1 when its port cannot be bound), then runs every
  // member until `stop` becomes true or one of them stops by itself (a
  // fatal error), then stops the others; the highest exit code.
  int Run(const std::atomic<bool>& stop);

  // Member 0, for the benchmark's figures.
  const InboxConsumer& first() const { return *members_.front(); }

 private:
  bool ServeMetrics();
  int RunMembers(const std::atomic<bool>& stop);

  const ConsumerConfig& config_;
  const LogCallback log_;
  const LogLevel log_level_;
  const outbox::ClockPtr clock_;
  std::unique_ptr<ConsumerMetrics> metrics_;  // with http.listen
  std::unique_ptr<ObserverTee> observers_;    // metrics_ and options.observer
  std::vector<std::unique_ptr<InboxConsumer>> members_;
  outbox::Mutex mu_;
  outbox::CondVar done_{&mu_};  // signalled when a member's Run returns
  size_t returned_ GUARDED_BY(mu_) = 0;
};

}  // namespace outbox::inbox
