#pragma once

#include <librdkafka/rdkafka.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "inbox/blockers.h"
#include "inbox/consumer_config.h"
#include "inbox/consumer_test_seams.h"
#include "inbox/dead_letter.h"
#include "inbox/event.h"
#include "inbox/inbox_store.h"
#include "inbox/partition_gate.h"
#include "inbox/value_reader.h"
#include "outbox/inbox/consumer.h"

namespace outbox::inbox {

struct MessageDeleter {
  void operator()(rd_kafka_message_t* m) const { rd_kafka_message_destroy(m); }
};
using MessagePtr = std::unique_ptr<rd_kafka_message_t, MessageDeleter>;

inline TopicPartition PartitionOf(const rd_kafka_message_t* m) {
  return {rd_kafka_topic_name(m->rkt), m->partition};
}
inline std::string PartitionName(const TopicPartition& tp) {
  return tp.first + "/" + std::to_string(tp.second);
}

// What the consumer did since it started; logged every minute and at exit.
struct ConsumerStats {
  uint64_t messages = 0;           // handled to the end (any outcome below)
  uint64_t applied = 0;            // new events whose effect was committed
  uint64_t duplicates = 0;         // events the inbox had seen: skipped
  uint64_t stale = 0;              // new events older than the last applied: recorded, not applied
  uint64_t parked = 0;             // strict: later versions parked until the gap fills
  uint64_t unparked = 0;           // strict: parked versions applied when their gap filled
  uint64_t dead_lettered = 0;      // sent to the dead-letter topic
  uint64_t undeliverable = 0;      // dead letters the broker refused for good: parked
  uint64_t dead_letters_read = 0;  // read from a dead-letter topic (topic_regex) and skipped
  uint64_t failed_attempts = 0;    // attempts at a message that could not be processed
  uint64_t stalls = 0;             // database or broker failures that paused a partition
  uint64_t kafka_errors = 0;       // errors librdkafka reported (broker down, ...)
  uint64_t lost_transactions = 0;  // handler returned Ok on a transaction rolled back under it
};

// The implementation of outbox::inbox::Consumer (outbox/inbox/consumer.h), with the
// test seams (consumer_test_seams.h) the public class leaves out.
// One consumer-group member: polls, and per message runs the inbox
// transaction (InboxStore), then stores the offset; dead-letters what it
// cannot process (and parks what the dead-letter topic refuses); pauses the
// affected partition on database or broker failures and between attempts,
// never sleeping in the poll loop (PartitionGate). Single-threaded:
// everything, the rebalance callback included, runs on the thread in Run().
// *config and *handler must outlive the consumer.
class InboxConsumer {
 public:
  // `member`: which of the process's config.concurrency members this is
  // (0..N-1), for the observer.
  InboxConsumer(const ConsumerConfig& config, Handler& handler, const ConsumerOptions& options = {},
                TestSeams seams = {}, int member = 0);
  ~InboxConsumer();
  InboxConsumer(const InboxConsumer&) = delete;
  InboxConsumer& operator=(const InboxConsumer&) = delete;

  // Runs until `stop` becomes true (SIGTERM), then finishes the current
  // message, commits the stored offsets and leaves the group. Returns the
  // process exit code: 0 after a clean stop, 1 when Kafka cannot be set up
  // or librdkafka reports a fatal error.
  int Run(const std::atomic<bool>& stop);

  const ConsumerStats& stats() const { return stats_; }
  // Benchmark: when the first message arrived and the last was handled.
  outbox::Clock::TimePoint first_message_at() const { return first_at_; }
  outbox::Clock::TimePoint last_handled_at() const { return last_at_; }

 private:
  using TimePoint = outbox::Clock::TimePoint;

  bool Start(std::string* error);
  // The consumer's configuration for librdkafka; null (and *error) on a bad
  // property.
  rd_kafka_conf_t* NewConf(std::string* error);
  void LogStarted() const;
  // Dead letters answered, stored offsets committed, the group left.
  void Shutdown();
  // A revoked partition: its unanswered dead letters, its pause and the
  // observer's state go.
  void ForgetPartition(const rd_kafka_topic_partition_t& part);
  void Handle(MessagePtr m);
  // A message whose headers or key do not parse: dead-lettered at once.
  void Unparsable(MessagePtr m, const std::string& reason, const std::string& trace_id);
  // Reads ev's value (ValueReader); false when it cannot be now (its
  // partition waits) or ever (dead-lettered), and *m is taken care of.
  bool ReadValue(MessagePtr* m, Event* ev);
  // True (counted, warned about once) for a message of a dead-letter topic.
  bool SkipDeadLetterTopic(const std::string& topic);
  void Count(ApplyResult r, int drained, const Event& ev, const rd_kafka_message_t* m);
  // A value the database refused (kRejected): retried, then dead-lettered.
  void Rejected(MessagePtr m, const std::string& reason, const std::string& trace_id);
  // Hands `m` to the dead-letter producer; its partition waits (paused)
  // for the broker's answer, which SettleDeadLetters acts on.
  void DeadLetter(MessagePtr m, const std::string& reason, int attempts,
                  const std::string& trace_id);
  void SettleDeadLetters(const std::vector<DeadLetterProducer::Delivery>& answers);
  // At shutdown: waits a little for the answers still due.
  void DrainDeadLetters();
  void ParkUndeliverable(rd_kafka_message_t* m, const std::string& why);
  void Done(rd_kafka_message_t* m);
  void Stall(rd_kafka_message_t* m, const std::string& what);
  void Retry(rd_kafka_message_t* m, const std::string& reason);
  // Pauses the partition and seeks it back to `offset`; false when the seek
  // failed (the call's error or the partition's own, elems[0].err).
  bool PauseAndSeek(const TopicPartition& tp, int64_t offset);
  void MaybeResume();
  void Housekeep();
  // Whether the database can take events; warns once per cause (Blockers).
  bool CheckDatabase();
  // t_inbox_parked's summary and retention (after CheckDatabase).
  void HousekeepTables();
  void ReportLag();
  // A broker that answers again (a message or an assignment came).
  void BrokerAnswers();
  // Before rd_kafka_consumer_close: gives the partitions back (see the .cc).
  void LeaveGroup();
  static void OnError(rd_kafka_t* rk, int err, const char* reason, void* opaque);
  void OnKafkaError(rd_kafka_resp_err_t err, const std::string& what);
  void LogStats(const char* when);
  static void OnRebalance(rd_kafka_t* rk, rd_kafka_resp_err_t err,
                          rd_kafka_topic_partition_list_t* parts, void* opaque);
  void Rebalance(rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* parts);

  const ConsumerConfig& config_;
  const int member_;
  const ConsumerOptions options_;
  const TestSeams seams_;
  const outbox::ClockPtr clock_;  // paces the loop: backoffs, housekeeping, stats
  InboxStore store_;
  DeadLetterProducer dlq_;
  std::unique_ptr<ValueReader> values_;  // made by Start
  rd_kafka_t* rk_ = nullptr;
  // Dead letters sent and not yet answered, by ticket: the message (kept
  // for its offset, or to park it if the broker refuses it) and why.
  struct PendingDeadLetter {
    MessagePtr message;
    std::string reason;
    int attempts = 0;
    bool revoked = false;  // its partition went to another member meanwhile
    std::string trace_id;  // the message's, for the lines about its answer
  };
  std::map<uint64_t, PendingDeadLetter> dead_letters_;
  uint64_t next_ticket_ = 1;
  std::set<std::string> skipped_topics_;  // dead-letter topics already warned about
  int exit_code_ = -1;                    // >= 0: stop with this code

  // Partitions that wait (a stall, a retry's backoff) and from which offset.
  PartitionGate gate_;
  int failing_seeks_ = 0;
  TimePoint next_housekeeping_at_{};
  TimePoint gap_warned_at_{};
  Blockers blockers_;  // what keeps this member from consuming now

  ConsumerStats stats_;
  ConsumerStats logged_;  // stats_ as of the last stats line
  TimePoint next_stats_at_{};
  TimePoint first_at_{}, last_at_{};
  rd_kafka_resp_err_t last_kafka_error_ = RD_KAFKA_RESP_ERR_NO_ERROR;
  TimePoint last_kafka_error_at_{};
};

}  // namespace outbox::inbox
