#pragma once

// The Kafka a test talks to: a fresh cluster for each TestBroker, wherever it
// lives (docs/TESTING.md "Against external servers"):
//
//   (default)                    librdkafka's mock cluster, in this process
//   OUTBOX_TEST_KAFKA_CONTROL    a standalone `outbox-mock-broker
//     =HOST:PORT                 --control-port PORT`: each TestBroker asks it
//                                for a fresh cluster, faults go over the same
//                                connection
//   OUTBOX_TEST_KAFKA_BOOTSTRAP  a real Kafka (a throwaway one: each TestBroker
//     =HOST:PORT                 deletes its topics and consumer groups);
//                                topics are created with the Admin API, and
//                                fault injection is not available: the cases
//                                tagged [mock-faults] are skipped (main.cc)

#include <librdkafka/rdkafka.h>

#include <memory>
#include <string>

namespace outbox::testing {

class MockCluster;

class TestBroker {
 public:
  explicit TestBroker(int brokers = 1);
  // The same with one topic created (most tests need outbox.event.Order).
  TestBroker(int brokers, const std::string& topic, int partitions) : TestBroker(brokers) {
    CreateTopic(topic, partitions);
  }
  ~TestBroker();
  TestBroker(const TestBroker&) = delete;
  TestBroker& operator=(const TestBroker&) = delete;

  const std::string& bootstrap() const { return bootstrap_; }
  int brokers() const { return brokers_; }
  bool CreateTopic(const std::string& topic, int partitions);

  // Fault injection (the mock cluster's, in this process or over the control
  // connection). Throws std::logic_error against a real Kafka.
  void SetAllBrokersDown(bool down);
  void SetRtt(int rtt_ms);
  // The next `count` Produce requests fail with `err`.
  void PushProduceErrors(rd_kafka_resp_err_t err, int count);
  void ClearProduceErrors();
  // Metadata requests for `topic` answer `err` (TOPIC_AUTHORIZATION_FAILED,
  // UNKNOWN_TOPIC_OR_PART, ...).
  void SetTopicError(const std::string& topic, rd_kafka_resp_err_t err);
  // Makes broker `broker` (1-based) the coordinator of `group`.
  void SetCoordinator(const std::string& group, int broker);
  // Makes broker `broker` (1-based) the leader of topic/partition.
  void SetLeader(const std::string& topic, int partition, int broker);
  // One broker down (connections closed, new ones refused) or up again.
  void SetBrokerDown(int broker, bool down);

 private:
  class Control;
  class Admin;
  // Runs one fault command ("down", "rtt 50", ...) in whichever mock there is.
  std::string Command(const std::string& line);

  std::unique_ptr<MockCluster> mock_;
  std::unique_ptr<Control> control_;
  std::unique_ptr<Admin> admin_;
  std::string bootstrap_;
  int brokers_;
};

}  // namespace outbox::testing
