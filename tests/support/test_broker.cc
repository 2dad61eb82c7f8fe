#include "support/test_broker.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <vector>

#include "mock_cluster.h"
#include "support/test_env.h"

namespace outbox::testing {

namespace {

// "HOST:PORT" split; throws on anything else.
std::pair<std::string, int> HostPort(const std::string& s, const char* var) {
  const size_t colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0)
    throw std::runtime_error(std::string(var) + " must be HOST:PORT, not '" + s + "'");
  return {s.substr(0, colon), std::stoi(s.substr(colon + 1))};
}

}  // namespace

// One line-protocol connection to `outbox-mock-broker --control-port`.
class TestBroker::Control {
 public:
  explicit Control(const std::string& address) {
    auto [host, port] = HostPort(address, "OUTBOX_TEST_KAFKA_CONTROL");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    if (inet_pton(AF_INET, host == "localhost" ? "127.0.0.1" : host.c_str(), &addr.sin_addr) != 1)
      throw std::runtime_error("OUTBOX_TEST_KAFKA_CONTROL: not an IPv4 address: " + host);
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    if (fd_ < 0 || connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0)
      throw std::runtime_error("cannot reach outbox-mock-broker's control port at " + address);
  }
  ~Control() {
    if (fd_ >= 0) close(fd_);
  }

  // Sends one command and returns its one-line reply.
  std::string Send(const std::string& line) {
    const std::string out = line + "\n";
    if (write(fd_, out.data(), out.size()) != static_cast<ssize_t>(out.size()))
      throw std::runtime_error("outbox-mock-broker's control connection failed");
    std::string reply;
    char c;
    while (read(fd_, &c, 1) == 1 && c != '\n') reply += c;
    return reply;
  }

 private:
  int fd_ = -1;
};

// A real Kafka through the Admin API.
class TestBroker::Admin {
 public:
  explicit Admin(const std::string& bootstrap) {
    char err[512];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    if (rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap.c_str(), err, sizeof(err)) !=
        RD_KAFKA_CONF_OK)
      throw std::runtime_error(err);
    rk_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
    if (!rk_) throw std::runtime_error(std::string("admin client: ") + err);
    queue_ = rd_kafka_queue_new(rk_);
  }
  ~Admin() {
    rd_kafka_queue_destroy(queue_);
    rd_kafka_destroy(rk_);
  }

  // Deletes every topic but Kafka's own (`__consumer_offsets`, ...) and every
  // consumer group, then waits until the metadata shows no topic left.
  void Reset() {
    DeleteGroups();
    std::vector<std::string> topics = Topics();
    if (!topics.empty()) {
      std::vector<rd_kafka_DeleteTopic_t*> del;
      del.reserve(topics.size());
      for (const auto& t : topics) del.push_back(rd_kafka_DeleteTopic_new(t.c_str()));
      rd_kafka_DeleteTopics(rk_, del.data(), del.size(), nullptr, queue_);
      rd_kafka_DeleteTopic_destroy_array(del.data(), del.size());
      Await(RD_KAFKA_EVENT_DELETETOPICS_RESULT);
    }
    for (int i = 0; i < 300 && !Topics().empty(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }

  bool CreateTopic(const std::string& topic, int partitions) {
    char err[512];
    rd_kafka_resp_err_t result = RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS;
    // A topic of the same name deleted by Reset() a moment ago may still be
    // on its way out.
    for (int i = 0; i < 20 && result == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS; ++i) {
      if (i) std::this_thread::sleep_for(std::chrono::milliseconds(500));
      rd_kafka_NewTopic_t* t =
          rd_kafka_NewTopic_new(topic.c_str(), partitions, -1, err, sizeof(err));
      if (!t) return false;
      rd_kafka_CreateTopics(rk_, &t, 1, nullptr, queue_);
      rd_kafka_NewTopic_destroy(t);
      rd_kafka_event_t* ev = Await(RD_KAFKA_EVENT_CREATETOPICS_RESULT);
      size_t n = 0;
      const rd_kafka_topic_result_t** results =
          rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &n);
      result = n == 1 ? rd_kafka_topic_result_error(results[0]) : RD_KAFKA_RESP_ERR__FAIL;
      rd_kafka_event_destroy(ev);
    }
    const bool ok = result == RD_KAFKA_RESP_ERR_NO_ERROR;
    // Leaders are elected a moment after the topic exists.
    for (int i = 0; ok && i < 300 && LeaderCount(topic) < partitions; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return ok;
  }

  int BrokerCount() {
    const rd_kafka_metadata_t* md = Metadata();
    const int n = md->broker_cnt;
    rd_kafka_metadata_destroy(md);
    return n;
  }

 private:
  const rd_kafka_metadata_t* Metadata() {
    const rd_kafka_metadata_t* md = nullptr;
    rd_kafka_resp_err_t err = rd_kafka_metadata(rk_, 1, nullptr, &md, 10000);
    if (err) throw std::runtime_error(std::string("Kafka metadata: ") + rd_kafka_err2str(err));
    return md;
  }

  std::vector<std::string> Topics() {
    const rd_kafka_metadata_t* md = Metadata();
    std::vector<std::string> out;
    for (int i = 0; i < md->topic_cnt; ++i)
      if (!std::string_view(md->topics[i].topic).starts_with("__"))
        out.emplace_back(md->topics[i].topic);
    rd_kafka_metadata_destroy(md);
    return out;
  }

  int LeaderCount(const std::string& topic) {
    const rd_kafka_metadata_t* md = Metadata();
    int leaders = 0;
    for (int i = 0; i < md->topic_cnt; ++i) {
      if (topic != md->topics[i].topic) continue;
      for (int p = 0; p < md->topics[i].partition_cnt; ++p)
        if (md->topics[i].partitions[p].leader >= 0) ++leaders;
    }
    rd_kafka_metadata_destroy(md);
    return leaders;
  }

  void DeleteGroups() {
    rd_kafka_ListConsumerGroups(rk_, nullptr, queue_);
    rd_kafka_event_t* ev = Await(RD_KAFKA_EVENT_LISTCONSUMERGROUPS_RESULT);
    size_t n = 0;
    const rd_kafka_ConsumerGroupListing_t** groups =
        rd_kafka_ListConsumerGroups_result_valid(rd_kafka_event_ListConsumerGroups_result(ev), &n);
    std::vector<rd_kafka_DeleteGroup_t*> del;
    for (size_t i = 0; i < n; ++i)
      del.push_back(rd_kafka_DeleteGroup_new(rd_kafka_ConsumerGroupListing_group_id(groups[i])));
    rd_kafka_event_destroy(ev);
    if (del.empty()) return;
    rd_kafka_DeleteGroups(rk_, del.data(), del.size(), nullptr, queue_);
    rd_kafka_DeleteGroup_destroy_array(del.data(), del.size());
    rd_kafka_event_destroy(Await(RD_KAFKA_EVENT_DELETEGROUPS_RESULT));
  }

  // The next result of `type` (30 s at most); throws on a request error.
  rd_kafka_event_t* Await(rd_kafka_event_type_t type) {
    for (int i = 0; i < 30; ++i) {
      rd_kafka_event_t* ev = rd_kafka_queue_poll(queue_, 1000);
      if (!ev) continue;
      if (rd_kafka_event_type(ev) != type) {
        rd_kafka_event_destroy(ev);
        continue;
      }
      if (rd_kafka_event_error(ev)) {
        std::string what = rd_kafka_event_error_string(ev);
        rd_kafka_event_destroy(ev);
        throw std::runtime_error("Kafka admin request: " + what);
      }
      return ev;
    }
    throw std::runtime_error("Kafka admin request: no answer in 30 s");
  }

  rd_kafka_t* rk_ = nullptr;
  rd_kafka_queue_t* queue_ = nullptr;
};

TestBroker::TestBroker(int brokers) : brokers_(brokers) {
  const std::string control = Env("OUTBOX_TEST_KAFKA_CONTROL", "");
  const std::string bootstrap = Env("OUTBOX_TEST_KAFKA_BOOTSTRAP", "");
  if (!control.empty()) {
    control_ = std::make_unique<Control>(control);
    // A cluster of this connection's own, destroyed when it closes.
    const std::string reply = control_->Send("cluster " + std::to_string(brokers));
    if (!reply.starts_with("ok bootstrap "))
      throw std::runtime_error("outbox-mock-broker: cluster: " + reply);
    bootstrap_ = reply.substr(13);
  } else if (!bootstrap.empty()) {
    admin_ = std::make_unique<Admin>(bootstrap);
    admin_->Reset();
    bootstrap_ = bootstrap;
    brokers_ = admin_->BrokerCount();
  } else {
    mock_ = std::make_unique<MockCluster>(brokers);
    bootstrap_ = mock_->bootstrap();
  }
}

TestBroker::~TestBroker() = default;

std::string TestBroker::Command(const std::string& line) {
  if (mock_) return mock_->Command(line);
  if (control_) return control_->Send(line);
  throw std::logic_error("'" + line + "' needs the mock broker: tag the test [mock-faults]");
}

bool TestBroker::CreateTopic(const std::string& topic, int partitions) {
  if (admin_) return admin_->CreateTopic(topic, partitions);
  return Command("topic " + topic + " " + std::to_string(partitions)).starts_with("ok");
}

namespace {
void RequireOk(const std::string& reply) {
  if (!reply.starts_with("ok")) throw std::runtime_error("mock broker: " + reply);
}
}  // namespace

void TestBroker::SetAllBrokersDown(bool down) { RequireOk(Command(down ? "down" : "up")); }

void TestBroker::SetRtt(int rtt_ms) { RequireOk(Command("rtt " + std::to_string(rtt_ms))); }

void TestBroker::PushProduceErrors(rd_kafka_resp_err_t err, int count) {
  RequireOk(Command("produce-errors " + std::to_string(count) + " " + rd_kafka_err2name(err)));
}

void TestBroker::ClearProduceErrors() { RequireOk(Command("clear-errors")); }

void TestBroker::SetCoordinator(const std::string& group, int broker) {
  RequireOk(Command("coordinator " + group + " " + std::to_string(broker)));
}

void TestBroker::SetLeader(const std::string& topic, int partition, int broker) {
  RequireOk(
      Command("leader " + topic + " " + std::to_string(partition) + " " + std::to_string(broker)));
}

void TestBroker::SetBrokerDown(int broker, bool down) {
  RequireOk(Command("broker " + std::to_string(broker) + (down ? " down" : " up")));
}

void TestBroker::SetTopicError(const std::string& topic, rd_kafka_resp_err_t err) {
  RequireOk(Command("topic-error " + topic + " " + rd_kafka_err2name(err)));
}

}  // namespace outbox::testing
