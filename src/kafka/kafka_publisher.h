#pragma once

#include <librdkafka/rdkafka.h>

#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/mutex.h"
#include "kafka/kafka_problem.h"
#include "kafka/publisher.h"

namespace outbox {

// Publisher on librdkafka: one idempotent producer (acks=all) shared by the
// services that use the same cluster. A poll thread serves delivery reports
// (which run the SentFn); a probe thread checks the cluster while it looks
// down or idle.
//
// No message leaves after its claim's budget: the poll thread takes back
// (rd_kafka_purge, queue only) the messages still queued in the producer,
// not yet on the wire, once a message's `queued_until` passed or while no
// broker is reachable; their SentFn runs with kNotAttempted, reason purged.
// librdkafka's own message.timeout.ms cannot be relied on for that: while a
// broker is not up, its thread scans for timed-out messages only when its
// state changes, i.e. at each reconnect attempt, whose backoff grows to
// reconnect.backoff.max.ms (docs/RELIABILITY.md, "A broker outage").
// Requests on the wire are left to finish; a failure of one reports
// `maybe_written`.
// Thread-safe.
class KafkaPublisher : public Publisher {
 public:
  // Returns nullptr and sets *error when librdkafka rejects a property.
  // `clock` paces the probe thread and dates the last acknowledgement.
  static std::shared_ptr<KafkaPublisher> Create(const std::map<std::string, std::string>& props,
                                                std::string* error,
                                                ClockPtr clock = DefaultClock());
  ~KafkaPublisher() override;

  void Send(const Message& message, SentFn sent) override;
  bool Healthy() const override { return up_.load() && !fatal_.load(); }
  // True from a fatal librdkafka error (e.g. an idempotent producer whose
  // sequence broke) until the poll thread has replaced the producer: its
  // queued and in-flight messages fail (retryable, reason producer_fatal),
  // and a fresh producer with the same properties takes over.
  bool Fatal() const { return fatal_.load(); }
  // How many producers the poll thread swapped in after a fatal error (each
  // also logs a warning). For tests.
  int ProducersReplacedForTesting() const { return replaced_.load(); }

  // Waits up to `timeout_ms` for every queued message's delivery report.
  void Flush(int timeout_ms) EXCLUDES(rk_mu_);
  // Fetches cluster metadata; true if a broker answered within timeout_ms.
  // A failure is recorded for Problem() unless a more specific cause
  // (authentication, TLS) is known already.
  bool Probe(int timeout_ms) EXCLUDES(rk_mu_, problem_mu_);
  // Why the cluster cannot be used: the last cause librdkafka reported
  // (SASL, TLS, a refused connection) since the last successful probe.
  // ok() when none was. Meaningful while !Healthy().
  KafkaProblem Problem() const EXCLUDES(problem_mu_);
  // Asks the cluster about `topic`: ok, or why it cannot be written
  // (authorization, unknown topic, no broker).
  KafkaProblem ProbeTopic(const std::string& topic, int timeout_ms) EXCLUDES(rk_mu_);
  const std::string& bootstrap_servers() const { return bootstrap_servers_; }
  // Makes librdkafka raise a fatal error, as a broken idempotent producer
  // would (rd_kafka_test_fatal_error). For tests.
  void TriggerFatalErrorForTesting(const std::string& reason) EXCLUDES(rk_mu_);

 private:
  struct MsgCtx;
  explicit KafkaPublisher(ClockPtr clock) : clock_(std::move(clock)) {}
  static rd_kafka_t* NewProducer(const std::map<std::string, std::string>& props,
                                 KafkaPublisher* self, std::string* error);
  void PollLoop();
  // Poll thread only: purges the producer's queue when a queued message's
  // budget ended or no broker is reachable (see the class comment).
  void PurgeIfDue() EXCLUDES(deadlines_mu_);
  // Why the queue should be purged now: "budget_ended", "broker_down", or
  // nullptr.
  const char* PurgeCause() EXCLUDES(deadlines_mu_);
  // Drops `ctx`'s deadline from deadlines_ (its delivery report came, or
  // the producer refused it).
  void ForgetDeadline(MsgCtx* ctx) EXCLUDES(deadlines_mu_);
  // Poll thread only: swaps in a fresh producer after a fatal error.
  void ReplaceProducer() EXCLUDES(rk_mu_);
  // The poll thread's producer. It is the only thread that replaces rk_, so
  // it reads it without the lock (and must not hold it while it polls: the
  // delivery reports it serves send the next message of a chain).
  rd_kafka_t* poller_rk() const NO_THREAD_SAFETY_ANALYSIS { return rk_; }
  void ProbeLoop() EXCLUDES(stop_mu_);
  // Waits `ms` on the clock or until the destructor stops the threads.
  void WaitForStop(int ms) EXCLUDES(stop_mu_);
  int64_t NowMs() const;
  static void OnDeliveryReport(rd_kafka_t* rk, const rd_kafka_message_t* msg, void* opaque);
  static void OnError(rd_kafka_t* rk, int err, const char* reason, void* opaque);
  static void OnLog(const rd_kafka_t* rk, int level, const char* fac, const char* buf);
  // Records a cause from librdkafka's error callback or a failed probe, and
  // logs it while the cluster is down and the cause is new.
  void NoteProblem(KafkaProblem problem) EXCLUDES(problem_mu_);

  const ClockPtr clock_;
  std::map<std::string, std::string> props_;
  std::string bootstrap_servers_;  // for log lines
  // rk_ is replaced only by the poll thread, as the writer; other threads
  // use it as readers.
  mutable SharedMutex rk_mu_;
  rd_kafka_t* rk_ GUARDED_BY(rk_mu_) = nullptr;
  std::thread poller_;
  // Metadata probes (up to 2 s against a dead cluster) run on their own
  // thread, so the poll thread keeps serving delivery reports meanwhile.
  std::thread prober_;
  Mutex stop_mu_;
  CondVar stop_cv_{&stop_mu_};  // the destructor wakes the probe thread
  std::atomic<bool> stop_{false};
  // Down until the first probe answers: claiming for a broker that was never
  // reached would burn an attempt of every row it publishes into the void.
  std::atomic<bool> up_{false};
  // Whether up_ was learnt (a probe or librdkafka's "all brokers down"):
  // before, a false up_ means "not known yet", no reason to take the
  // producer's queue back.
  std::atomic<bool> learnt_{false};
  std::atomic<bool> fatal_{false};
  std::atomic<int> replaced_{0};
  std::atomic<int64_t> last_ack_ms_{0};
  mutable Mutex problem_mu_;
  KafkaProblem problem_ GUARDED_BY(problem_mu_);
  KafkaCause logged_cause_ GUARDED_BY(problem_mu_) = KafkaCause::kNone;
  // The `queued_until` of every message in the producer that has one.
  // A message whose deadline is at or before purged_through_ was either
  // purged or on the wire at that purge: it is no reason for another.
  Mutex deadlines_mu_;
  std::multiset<Clock::TimePoint> deadlines_ GUARDED_BY(deadlines_mu_);
  Clock::TimePoint purged_through_ GUARDED_BY(deadlines_mu_){};
  // Poll thread only: when the last purge's log line was written.
  Clock::TimePoint last_purge_log_{};
};

// Maps a librdkafka error to a publish result and a metric reason.
PublishOutcome ClassifyKafkaError(rd_kafka_resp_err_t err, bool broker_up);

// Why the producer's queue is to be taken back now (KafkaPublisher's class
// comment): "broker_down" while no broker is reachable, "budget_ended" when
// a message's `queued_until` in `deadlines` passed after `purged_through`
// (the last purge: a message whose deadline is at or before it was purged
// or on the wire then), else nullptr.
const char* DuePurge(bool broker_up, const std::multiset<Clock::TimePoint>& deadlines,
                     Clock::TimePoint purged_through, Clock::TimePoint now);

// A delivery report's outcome: ClassifyKafkaError, and what its message
// status adds. A message purged from the queue that never was on the wire
// is not attempted (reason purged), unless the producer is being replaced
// after a fatal error (retryable, producer_fatal); a failure
// whose request was on the wire (RD_KAFKA_MSG_STATUS_POSSIBLY_PERSISTED) is
// `maybe_written`.
PublishOutcome ClassifyDelivery(rd_kafka_resp_err_t err, rd_kafka_msg_status_t status,
                                bool broker_up, bool producer_fatal);

// librdkafka's version, e.g. "2.0.2" (for `outbox-relay version`).
std::string LibrdkafkaVersion();

}  // namespace outbox
