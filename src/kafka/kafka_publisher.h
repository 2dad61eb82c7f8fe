#pragma once

#include <librdkafka/rdkafka.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>

#include "kafka/kafka_problem.h"
#include "kafka/publisher.h"

namespace outbox {

// Publisher on librdkafka: one idempotent producer (acks=all) shared by the
// services that use the same cluster. A poll thread serves delivery reports
// (which run the SentFn); a probe thread checks the cluster while it looks
// down or idle.
// Thread-safe.
class KafkaPublisher : public Publisher {
 public:
  // Returns nullptr and sets *error when librdkafka rejects a property.
  static std::shared_ptr<KafkaPublisher> Create(const std::map<std::string, std::string>& props,
                                                std::string* error);
  ~KafkaPublisher() override;

  void Send(const Message& message, SentFn sent) override;
  bool Healthy() const override { return up_.load() && !fatal_.load(); }
  // True from a fatal librdkafka error (e.g. an idempotent producer whose
  // sequence broke) until the poll thread has replaced the producer: its
  // queued and in-flight messages fail (retryable, reason producer_fatal),
  // and a fresh producer with the same properties takes over.
  bool Fatal() const { return fatal_.load(); }
  int producers_replaced() const { return replaced_.load(); }

  // Waits up to `timeout_ms` for every queued message's delivery report.
  void Flush(int timeout_ms);
  // Fetches cluster metadata; true if a broker answered within timeout_ms.
  // A failure is recorded for Problem() unless a more specific cause
  // (authentication, TLS) is known already.
  bool Probe(int timeout_ms);
  // Why the cluster cannot be used: the last cause librdkafka reported
  // (SASL, TLS, a refused connection) since the last successful probe.
  // ok() when none was. Meaningful while !Healthy().
  KafkaProblem Problem() const;
  // Asks the cluster about `topic`: ok, or why it cannot be written
  // (authorization, unknown topic, no broker).
  KafkaProblem ProbeTopic(const std::string& topic, int timeout_ms);
  const std::string& bootstrap_servers() const { return bootstrap_servers_; }
  // Makes librdkafka raise a fatal error, as a broken idempotent producer
  // would (rd_kafka_test_fatal_error). For tests.
  void TriggerFatalErrorForTesting(const std::string& reason);

 private:
  struct MsgCtx;
  KafkaPublisher() = default;
  static rd_kafka_t* NewProducer(const std::map<std::string, std::string>& props,
                                 KafkaPublisher* self, std::string* error);
  void PollLoop();
  // Poll thread only: swaps in a fresh producer after a fatal error.
  void ReplaceProducer();
  void ProbeLoop();
  static void OnDeliveryReport(rd_kafka_t* rk, const rd_kafka_message_t* msg, void* opaque);
  static void OnError(rd_kafka_t* rk, int err, const char* reason, void* opaque);
  static void OnLog(const rd_kafka_t* rk, int level, const char* fac, const char* buf);
  // Records a cause from librdkafka's error callback or a failed probe, and
  // logs it while the cluster is down and the cause is new.
  void NoteProblem(KafkaProblem problem);

  std::map<std::string, std::string> props_;
  std::string bootstrap_servers_;  // for log lines
  // rk_ is replaced only by the poll thread, under an exclusive lock; other
  // threads use it under a shared lock.
  mutable std::shared_mutex rk_mu_;
  rd_kafka_t* rk_ = nullptr;
  std::thread poller_;
  // Metadata probes (up to 2 s against a dead cluster) run on their own
  // thread, so the poll thread keeps serving delivery reports meanwhile.
  std::thread prober_;
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  std::atomic<bool> stop_{false};
  // Down until the first probe answers: claiming for a broker that was never
  // reached would burn an attempt of every row it publishes into the void.
  std::atomic<bool> up_{false};
  std::atomic<bool> fatal_{false};
  std::atomic<int> replaced_{0};
  std::atomic<int64_t> last_ack_ms_{0};
  mutable std::mutex problem_mu_;
  KafkaProblem problem_;                         // guarded by problem_mu_
  KafkaCause logged_cause_ = KafkaCause::kNone;  // guarded by problem_mu_
};

// Maps a librdkafka error to a publish result and a metric reason.
PublishOutcome ClassifyKafkaError(rd_kafka_resp_err_t err, bool broker_up);

// librdkafka's version, e.g. "2.0.2" (for `outbox-relay version`).
std::string LibrdkafkaVersion();

}  // namespace outbox
