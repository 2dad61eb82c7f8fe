#include "mock_cluster.h"

#include <sstream>
#include <stdexcept>
#include <vector>

namespace outbox::testing {

MockCluster::MockCluster(int brokers) : brokers_(brokers) {
  char errstr[256];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "log_level", "0", errstr, sizeof(errstr));
  rk_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
  if (!rk_) throw std::runtime_error(std::string("mock cluster: ") + errstr);
  cluster_ = rd_kafka_mock_cluster_new(rk_, brokers);
  if (!cluster_) throw std::runtime_error("mock cluster: cannot create");
  bootstrap_ = rd_kafka_mock_cluster_bootstraps(cluster_);
}

MockCluster::~MockCluster() {
  if (cluster_) rd_kafka_mock_cluster_destroy(cluster_);
  if (rk_) rd_kafka_destroy(rk_);
}

bool MockCluster::CreateTopic(const std::string& topic, int partitions) {
  return rd_kafka_mock_topic_create(cluster_, topic.c_str(), partitions, 1) ==
         RD_KAFKA_RESP_ERR_NO_ERROR;
}

void MockCluster::SetAllBrokersDown(bool down) {
  for (int id = 1; id <= brokers_; ++id) {
    if (down)
      rd_kafka_mock_broker_set_down(cluster_, id);
    else
      rd_kafka_mock_broker_set_up(cluster_, id);
  }
}

void MockCluster::SetRtt(int rtt_ms) {
  for (int id = 1; id <= brokers_; ++id) rd_kafka_mock_broker_set_rtt(cluster_, id, rtt_ms);
}

void MockCluster::PushProduceErrors(rd_kafka_resp_err_t err, int count) {
  std::vector<rd_kafka_resp_err_t> errs(static_cast<size_t>(count), err);
  rd_kafka_mock_push_request_errors_array(cluster_, 0 /* Produce */, errs.size(), errs.data());
}

void MockCluster::ClearProduceErrors() { rd_kafka_mock_clear_request_errors(cluster_, 0); }

bool MockCluster::MoveLeader(const std::string& topic, int partition, int broker) {
  return rd_kafka_mock_partition_set_leader(cluster_, topic.c_str(), partition, broker) ==
         RD_KAFKA_RESP_ERR_NO_ERROR;
}

std::string MockCluster::Command(const std::string& line) {
  std::istringstream in(line);
  std::string cmd;
  in >> cmd;
  if (cmd == "down") {
    SetAllBrokersDown(true);
    return "ok all brokers down";
  }
  if (cmd == "up") {
    SetAllBrokersDown(false);
    return "ok all brokers up";
  }
  if (cmd == "rtt") {
    int ms = -1;
    in >> ms;
    if (ms < 0) return "error usage: rtt MS";
    SetRtt(ms);
    return "ok rtt " + std::to_string(ms) + " ms";
  }
  if (cmd == "produce-errors") {
    int count = 0;
    std::string name = "NOT_LEADER_FOR_PARTITION";
    in >> count >> name;
    if (count <= 0) return "error usage: produce-errors COUNT [ERRNAME]";
    rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION;
    const rd_kafka_err_desc* descs;
    size_t n;
    rd_kafka_get_err_descs(&descs, &n);
    bool found = false;
    for (size_t i = 0; i < n; ++i) {
      if (descs[i].name && name == descs[i].name) {
        err = descs[i].code;
        found = true;
      }
    }
    if (!found) return "error unknown error name " + name;
    PushProduceErrors(err, count);
    return "ok next " + std::to_string(count) + " produce request(s) fail with " + name;
  }
  if (cmd == "topic-error") {
    // Metadata for TOPIC answers ERRNAME (e.g. TOPIC_AUTHORIZATION_FAILED,
    // UNKNOWN_TOPIC_OR_PART), as a broker's ACLs or a missing topic would.
    std::string topic, name;
    in >> topic >> name;
    if (topic.empty() || name.empty()) return "error usage: topic-error TOPIC ERRNAME";
    const rd_kafka_err_desc* descs;
    size_t n;
    rd_kafka_get_err_descs(&descs, &n);
    for (size_t i = 0; i < n; ++i) {
      if (descs[i].name && name == descs[i].name) {
        rd_kafka_mock_topic_set_error(cluster_, topic.c_str(), descs[i].code);
        return "ok topic " + topic + " answers " + name;
      }
    }
    return "error unknown error name " + name;
  }
  if (cmd == "clear-errors") {
    ClearProduceErrors();
    return "ok cleared";
  }
  if (cmd == "coordinator" || cmd == "broker") return BrokerCommand(cmd, in);
  if (cmd == "topic") {
    std::string name;
    int partitions = 0;
    in >> name >> partitions;
    if (name.empty() || partitions <= 0) return "error usage: topic NAME PARTITIONS";
    return CreateTopic(name, partitions) ? "ok topic " + name : "error cannot create " + name;
  }
  if (cmd == "leader") {
    std::string topic;
    int partition = -1, broker = 0;
    in >> topic >> partition >> broker;
    if (topic.empty() || partition < 0 || broker < 1 || broker > brokers_)
      return "error usage: leader TOPIC PARTITION BROKER (1.." + std::to_string(brokers_) + ")";
    return MoveLeader(topic, partition, broker)
               ? "ok leader of " + topic + "/" + std::to_string(partition) + " is broker " +
                     std::to_string(broker)
               : "error cannot move the leader of " + topic + "/" + std::to_string(partition);
  }
  return "error unknown command (down | up | rtt MS | produce-errors COUNT [ERRNAME] | "
         "clear-errors | topic NAME PARTITIONS | leader TOPIC PARTITION BROKER | "
         "topic-error TOPIC ERRNAME | coordinator GROUP BROKER | broker BROKER down|up)";
}

std::string MockCluster::BrokerCommand(const std::string& cmd, std::istringstream& in) {
  const std::string range = "(1.." + std::to_string(brokers_) + ")";
  if (cmd == "coordinator") {
    std::string group;
    int broker = 0;
    in >> group >> broker;
    if (group.empty() || broker < 1 || broker > brokers_)
      return "error usage: coordinator GROUP BROKER " + range;
    if (rd_kafka_mock_coordinator_set(cluster_, "group", group.c_str(), broker) != 0)
      return "error cannot make broker " + std::to_string(broker) + " the coordinator";
    return "ok the coordinator of group " + group + " is broker " + std::to_string(broker);
  }
  int broker = 0;
  std::string state;
  in >> broker >> state;
  if (broker < 1 || broker > brokers_ || (state != "down" && state != "up"))
    return "error usage: broker BROKER down|up " + range;
  const rd_kafka_resp_err_t err = state == "down" ? rd_kafka_mock_broker_set_down(cluster_, broker)
                                                  : rd_kafka_mock_broker_set_up(cluster_, broker);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) return std::string("error ") + rd_kafka_err2str(err);
  return "ok broker " + std::to_string(broker) + " " + state;
}

}  // namespace outbox::testing
