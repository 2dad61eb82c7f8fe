// Why the relay cannot use Kafka, in librdkafka's or the broker's words:
// each cause the mock cluster or a wrong local setting can produce, read
// where an operator looks (`check --connect`, /readyz, the log line's
// `cause` and `error`), through the real binary.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <sstream>

#include "kafka/kafka_config.h"
#include "kafka/kafka_publisher.h"
#include "support/http_probe.h"
#include "support/process.h"
#include "support/test_broker.h"
#include "support/wait.h"

using namespace outbox;
using namespace outbox::testing;
using namespace std::chrono_literals;

namespace {

// A config whose database is unreachable (port 1) and whose Kafka block is
// `kafka`, one service publishing to `topic`.
std::string RelayConfig(const std::string& kafka, const std::string& topic = "outbox.event.x") {
  return "instance_id: causes\nhttp: {listen: 127.0.0.1:0}\nlog: {level: info, format: json}\n"
         "kafka: " +
         kafka + "\nservices:\n  - name: order\n    topic: " + topic +
         "\n    mysql: {host: 127.0.0.1, port: 1, user: u, database: d, connect_timeout_ms: "
         "1000}\n";
}

std::string KafkaBlock(const std::string& bootstrap, const std::string& properties = "{}") {
  return "{bootstrap_servers: \"" + bootstrap + "\", properties: " + properties + "}";
}

const std::string kSasl =
    "{security.protocol: SASL_PLAINTEXT, sasl.mechanism: SCRAM-SHA-256, sasl.username: relay, "
    "sasl.password: kafka-secret}";
const std::string kTlsToPlaintext = "{security.protocol: SSL}";

// `check --connect`'s line about the cluster.
std::string CheckKafkaLine(const std::string& config_text) {
  TempDir dir;
  const std::string file = dir.Write("c.yaml", config_text);
  ProcessResult r = RunProcess({OUTBOX_BINARY, "check", "--connect", "-c", file}, ChildEnv(), 60s);
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("kafka ", 0) == 0) return line;
  return "";
}

// The JSON log lines of `err` whose msg is `msg`.
std::vector<nlohmann::json> Lines(const std::string& err, const std::string& msg) {
  std::vector<nlohmann::json> out;
  std::istringstream in(err);
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.value("msg", "") == msg) out.push_back(j);
  }
  return out;
}

}  // namespace

TEST_CASE("check --connect names a SASL mechanism the broker does not support", "[kafka-causes]") {
  TestBroker broker;
  const std::string line = CheckKafkaLine(RelayConfig(KafkaBlock(broker.bootstrap(), kSasl)));
  CHECK(line.rfind("kafka " + broker.bootstrap() + ": authentication: ", 0) == 0);
  CHECK(line.find("SASL Handshake not supported by broker") != std::string::npos);
  CHECK(line.find("sasl.mechanism") != std::string::npos);  // the hint
  CHECK(line.find("kafka-secret") == std::string::npos);
}

TEST_CASE("check --connect names a TLS handshake with a plaintext listener", "[kafka-causes]") {
  TestBroker broker;
  const std::string line =
      CheckKafkaLine(RelayConfig(KafkaBlock(broker.bootstrap(), kTlsToPlaintext)));
  CHECK(line.rfind("kafka " + broker.bootstrap() + ": tls: ", 0) == 0);
  CHECK(line.find("SSL_HANDSHAKE") != std::string::npos);
  CHECK(line.find("ssl.ca.location") != std::string::npos);  // the hint
}

TEST_CASE("check --connect names an ssl.ca.location that cannot be read", "[kafka-causes]") {
  TestBroker broker;
  const std::string line = CheckKafkaLine(RelayConfig(KafkaBlock(
      broker.bootstrap(), "{security.protocol: SSL, ssl.ca.location: /nonexistent/ca.pem}")));
  CHECK(line.find("ssl.ca.location failed") != std::string::npos);
  CHECK(line.find("No such file or directory") != std::string::npos);
  CHECK(line.find("/nonexistent/ca.pem") != std::string::npos);
}

TEST_CASE("check --connect names a refused connection when no broker listens", "[kafka-causes]") {
  const std::string line = CheckKafkaLine(RelayConfig(KafkaBlock("127.0.0.1:1")));
  CHECK(line.rfind("kafka 127.0.0.1:1: broker_down: ", 0) == 0);
  CHECK(line.find("Connection refused") != std::string::npos);
}

TEST_CASE("check --connect names a topic the principal may not write and one that does not exist",
          "[kafka-causes][mock-faults]") {
  TestBroker broker;
  broker.SetTopicError("orders.denied", RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
  broker.SetTopicError("orders.missing", RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART);
  const std::string denied =
      CheckKafkaLine(RelayConfig(KafkaBlock(broker.bootstrap()), "orders.denied"));
  CHECK(denied == "kafka " + broker.bootstrap() +
                      ": authorization: topic orders.denied: Broker: Topic authorization failed "
                      "(the relay's principal needs WRITE and DESCRIBE on the topic, and "
                      "IDEMPOTENT_WRITE on the cluster for Kafka before 3.0)");
  const std::string missing =
      CheckKafkaLine(RelayConfig(KafkaBlock(broker.bootstrap()), "orders.missing"));
  CHECK(missing.rfind("kafka " + broker.bootstrap() + ": unknown_topic: topic orders.missing: ",
                      0) == 0);
}

TEST_CASE("a running relay shows a SASL or TLS failure in readyz and on its log line",
          "[kafka-causes][process]") {
  TestBroker broker;
  struct Case {
    std::string properties, cause, words;
  };
  for (const Case& c : {Case{kSasl, "authentication", "SASL Handshake not supported by broker"},
                        Case{kTlsToPlaintext, "tls", "SSL_HANDSHAKE"}}) {
    INFO(c.cause);
    TempDir dir;
    const std::string file =
        dir.Write("c.yaml", RelayConfig(KafkaBlock(broker.bootstrap(), c.properties)));
    ChildProcess relay({OUTBOX_BINARY, "run", "-c", file}, ChildEnv());
    int port = 0;
    REQUIRE(WaitFor([&] { return (port = ServingPort(relay.err())) > 0; }, 30s));
    HttpReply ready;
    const std::string expected = "kafka " + broker.bootstrap() + ": unreachable: " + c.cause + ": ";
    CHECK(WaitFor(
        [&] {
          ready = HttpGet(port, "/readyz");
          return ready.body.find(expected) != std::string::npos;
        },
        30s, 200ms));
    INFO(ready.body);
    CHECK(ready.status == 503);
    CHECK(ready.body.find(c.words) != std::string::npos);

    // The log line that says the cluster cannot be used carries the cause
    // and librdkafka's words; librdkafka's own lines name their facility
    // and broker in fields.
    std::vector<nlohmann::json> lines;
    CHECK(WaitFor(
        [&] {
          lines = Lines(relay.err(), "kafka: cannot use the cluster");
          return !lines.empty();
        },
        10s));
    INFO(relay.err());
    REQUIRE_FALSE(lines.empty());
    CHECK(lines[0].value("cause", "") == c.cause);
    CHECK(lines[0].value("reason", "") == "broker_down");
    CHECK(lines[0].value("bootstrap_servers", "") == broker.bootstrap());
    CHECK(lines[0].value("error", "").find(c.words) != std::string::npos);
    bool librdkafka_line = false;
    for (const auto& j : Lines(relay.err(), "librdkafka"))
      if (j.value("error", "").find(c.words) != std::string::npos)
        librdkafka_line = j.value("facility", "") == "FAIL" &&
                          j.value("broker", "").find(broker.bootstrap()) != std::string::npos;
    CHECK(librdkafka_line);
    CHECK(relay.err().find("kafka-secret") == std::string::npos);
  }
}
