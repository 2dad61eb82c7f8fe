#pragma once

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <string>

namespace outbox::testing {

// librdkafka's mock cluster: real Kafka protocol on loopback, with fault
// injection. For tests and the quickstart only; users run real Kafka.
class MockCluster {
 public:
  explicit MockCluster(int brokers = 1);
  ~MockCluster();
  MockCluster(const MockCluster&) = delete;
  MockCluster& operator=(const MockCluster&) = delete;

  const std::string& bootstrap() const { return bootstrap_; }
  rd_kafka_mock_cluster_t* raw() { return cluster_; }

  bool CreateTopic(const std::string& topic, int partitions);
  void SetAllBrokersDown(bool down);
  void SetRtt(int rtt_ms);
  // The next `count` Produce requests fail with `err`.
  void PushProduceErrors(rd_kafka_resp_err_t err, int count);
  void ClearProduceErrors();
  // Makes broker `broker` (1-based) the leader of topic/partition, as a
  // leader election would: requests to the old leader get
  // NOT_LEADER_FOR_PARTITION until the client refreshes its metadata.
  bool MoveLeader(const std::string& topic, int partition, int broker);
  int brokers() const { return brokers_; }

  // Executes one text command (the broker tool's stdin protocol):
  //   down | up | rtt MS | produce-errors COUNT [ERRNAME] | clear-errors |
  //   topic NAME PARTITIONS | leader TOPIC PARTITION BROKER
  // Returns "ok ..." or "error ...".
  std::string Command(const std::string& line);

 private:
  rd_kafka_t* rk_ = nullptr;
  rd_kafka_mock_cluster_t* cluster_ = nullptr;
  std::string bootstrap_;
  int brokers_;
};

}  // namespace outbox::testing
