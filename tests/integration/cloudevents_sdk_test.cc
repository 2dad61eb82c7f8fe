// The relay's CloudEvents messages as an implementation of CloudEvents that
// is not this project's reads them: the CloudEvents SDK for JavaScript (npm
// package cloudevents, its Kafka binding), run by tests/cloudevents/decode.js
// on the messages read back from the broker. ctest installs the SDK first
// (tests/cloudevents/install-sdk.sh, the fixture in tests/CMakeLists.txt).

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/time_format.h"
#include "support/kafka_reader.h"
#include "support/process.h"
#include "support/relay_harness.h"
#include "support/test_broker.h"
#include "support/test_env.h"
#include "support/wait.h"

using namespace outbox;
using namespace outbox::testing;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

const char* kColumns = ", traceparent varchar(128), tracestate varchar(512)";
const std::string kTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const std::string kTracestate = "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7";

// Relays `rows` of `db` with `s`'s envelope; the messages of `topic`.
std::vector<ConsumedMessage> RelayAndRead(TestBroker& cluster, TestDatabase& db, ServiceConfig s,
                                          const std::vector<RowSpec>& rows,
                                          const std::string& topic) {
  cluster.CreateTopic(topic, 2);
  for (const auto& r : rows) InsertRow(db, r);
  s.topic = topic;
  RelayHarness h(s);
  h.relay->Start();
  REQUIRE(WaitFor([&] { return Unsent(db) == 0; }, 60s));
  auto messages = ConsumeAll(cluster.bootstrap(), {topic});
  REQUIRE(messages.size() == rows.size());
  return messages;
}

// What decode.js makes of `messages`: one JSON object each, in order.
std::vector<json> Decode(const std::vector<ConsumedMessage>& messages) {
  TempDir dir;
  std::string lines;
  for (const auto& m : messages)
    lines += json{{"key", m.key}, {"value", m.value}, {"headers", m.headers}}.dump() + "\n";
  const std::string file = dir.Write("messages.jsonl", lines);
  const ProcessResult r = RunProcess(
      {"/usr/bin/env", "node", std::string(OUTBOX_SOURCE_DIR) + "/tests/cloudevents/decode.js",
       OUTBOX_CLOUDEVENTS_SDK_DIR, file},
      ChildEnv(), 60s);
  INFO("node: " << r.err << "\n(tests/cloudevents/install-sdk.sh installs the SDK)");
  REQUIRE(r.exit_code == 0);
  std::vector<json> out;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));
  REQUIRE(out.size() == messages.size());
  return out;
}

}  // namespace

TEST_CASE(
    "the CloudEvents SDK for JavaScript decodes the relay's messages into valid events with the "
    "rows' attributes",
    "[cloudevents-sdk]") {
  TestBroker cluster(1);
  TestDatabase db("cloudevents_sdk", kColumns);
  const std::vector<RowSpec> rows = {
      {.id = 1, .aggregate_type = "Order Line", .aggregate_id = 7, .payload = R"({"total":10})"},
      {.id = 2,
       .aggregate_id = 8,
       .event_type = "OrderPaid",
       .payload = R"({"items":[1,2],"note":"été"})",
       .traceparent = kTraceparent,
       .tracestate = kTracestate},
      {.id = 3, .aggregate_id = 9, .traceparent = "not a traceparent", .tracestate = kTracestate},
  };
  ServiceConfig s = TestService(db, cluster.bootstrap());
  s.envelope = Envelope::kCloudEvents;
  s.cloudevents.source = "https://shop.example/{service}/{aggregate_type}";
  s.cloudevents.type = "com.example.{aggregate_type}.{event_type}";
  const auto messages = RelayAndRead(cluster, db, s, rows, "ce.events");
  const auto decoded = Decode(messages);
  for (size_t i = 0; i < messages.size(); ++i) {
    const ConsumedMessage& m = messages[i];
    const json& d = decoded[i];
    const int64_t id = std::stoll(m.headers.at("outbox_id"));
    const RowSpec& row = rows.at(static_cast<size_t>(id - 1));
    INFO("row " << id << ": " << d.dump());
    REQUIRE(d["is_event"] == true);
    REQUIRE(d.contains("event"));
    const json& e = d["event"];
    CHECK(e["specversion"] == "1.0");
    CHECK(e["id"] == "k" + std::to_string(id));
    CHECK(e["source"] == "https://shop.example/cloudevents_sdk/" +
                             std::string(id == 1 ? "Order%20Line" : "Order"));
    CHECK(e["type"] == "com.example." + row.aggregate_type + "." + row.event_type);
    CHECK(e["subject"] == std::to_string(row.aggregate_id));
    // The SDK writes time with milliseconds; the relay's is created_at, whole seconds.
    const std::string created_at = m.headers.at("created_at");
    CHECK(e["time"] == created_at.substr(0, created_at.size() - 1) + ".000Z");
    CHECK(e["datacontenttype"] == "application/json");
    CHECK(e["data"] == json::parse(row.payload));
    CHECK(e["partitionkey"] == std::to_string(row.aggregate_id));
    if (id == 2) {
      CHECK(e["traceparent"] == kTraceparent);
      CHECK(e["tracestate"] == kTracestate);
    } else {
      CHECK_FALSE(e.contains("traceparent"));
      CHECK_FALSE(e.contains("tracestate"));
    }
  }
}

TEST_CASE("the CloudEvents SDK for JavaScript does not take a plain message for a CloudEvent",
          "[cloudevents-sdk]") {
  TestBroker cluster(1);
  TestDatabase db("cloudevents_sdk_plain", kColumns);
  ServiceConfig s = TestService(db, cluster.bootstrap());
  const auto messages =
      RelayAndRead(cluster, db, s, {{.id = 1, .traceparent = kTraceparent}}, "plain.events");
  const auto decoded = Decode(messages);
  CHECK(decoded[0]["is_event"] == false);
  CHECK(decoded[0]["error"] == "No CloudEvent detected");
}
