#pragma once

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <sstream>
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
  int brokers() const { return brokers_; }
  bool CreateTopic(const std::string& topic, int partitions);

  // Executes one text command (the broker tool's stdin protocol, and the
  // tests' faults through TestBroker, tests/support/test_broker.h):
  //   down | up | rtt MS | produce-errors COUNT [ERRNAME] | clear-errors |
  //   topic NAME PARTITIONS | leader TOPIC PARTITION BROKER |
  //   topic-error TOPIC ERRNAME | coordinator GROUP BROKER | broker BROKER down|up
  // `topic-error` makes metadata answer ERRNAME for TOPIC (e.g.
  // UNKNOWN_TOPIC_OR_PART: a topic that does not exist and is not created).
  // `leader` makes BROKER (1-based) the leader of TOPIC/PARTITION, as a
  // leader election would: requests to the old leader get
  // NOT_LEADER_FOR_PARTITION until the client refreshes its metadata.
  // `coordinator` makes BROKER the group coordinator of GROUP; `broker`
  // takes one broker down (its connections closed, new ones refused) or up,
  // e.g. the coordinator alone.
  // Returns "ok ..." or "error ...".
  std::string Command(const std::string& line);

 private:
  // coordinator and broker.
  std::string BrokerCommand(const std::string& cmd, std::istringstream& in);
  // The commands' effects.
  void SetAllBrokersDown(bool down);
  void SetRtt(int rtt_ms);
  void PushProduceErrors(rd_kafka_resp_err_t err, int count);
  void ClearProduceErrors();
  bool MoveLeader(const std::string& topic, int partition, int broker);

  rd_kafka_t* rk_ = nullptr;
  rd_kafka_mock_cluster_t* cluster_ = nullptr;
  std::string bootstrap_;
  int brokers_;
};

}  // namespace outbox::testing
