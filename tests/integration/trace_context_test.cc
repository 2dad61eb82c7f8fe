// Trace context and the CloudEvents envelope against MariaDB and the broker:
// rows with and without trace context, in both envelopes, read back from
// Kafka with their exact headers; an invalid traceparent counted with its
// event still delivered in order; and the relay's CloudEvents messages
// decoded by an implementation that is not this project's: the CloudEvents
// SDK for JavaScript (npm package cloudevents, tests/cloudevents/).

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

namespace {

using HeaderMap = std::map<std::string, std::string>;

const char* kColumns =
    ", last_error varchar(255), headers text, aggregate_version bigint, traceparent varchar(128), "
    "tracestate varchar(512)";
const std::string kTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const std::string kFuture = "cc-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-future";
const std::string kTracestate = "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7";

std::string RowStatus(TestDatabase& db, int64_t id) {
  return db.QueryString("SELECT status FROM t_outbox WHERE id = " + std::to_string(id));
}

bool AllSent(TestDatabase& db, int64_t rows) {
  return db.QueryInt("SELECT COUNT(*) FROM t_outbox WHERE status = 'SENT'") == rows;
}

// The rows both envelope tests write: with and without trace context.
std::vector<RowSpec> TraceRows() {
  return {
      {.id = 1, .aggregate_id = 10, .event_type = "OrderCreated"},
      {.id = 2,
       .aggregate_id = 10,
       .event_type = "OrderPaid",
       .traceparent = kTraceparent,
       .tracestate = kTracestate,
       .aggregate_version = 2},
      {.id = 3, .aggregate_id = 11, .event_type = "OrderPaid", .traceparent = kFuture},
      {.id = 4,
       .aggregate_id = 12,
       .event_type = "OrderPaid",
       .headers = R"({"tenant":"acme"})",
       .traceparent = kTraceparent,
       .tracestate = ""},
  };
}

// What the relay must send for `r` (created_at as the database returned it).
HeaderMap Expected(const RowSpec& r, const std::string& created_at, const std::string& service,
                   bool cloudevents) {
  HeaderMap h = {{"outbox_id", std::to_string(r.id)},
                 {"event_key", "k" + std::to_string(r.id)},
                 {"event_type", r.event_type},
                 {"aggregate_type", r.aggregate_type},
                 {"created_at", created_at}};
  if (r.aggregate_version) h["aggregate_version"] = std::to_string(*r.aggregate_version);
  if (r.id == 4) h["tenant"] = "acme";
  for (const std::string& p :
       cloudevents ? std::vector<std::string>{"", "ce_"} : std::vector<std::string>{""}) {
    if (r.traceparent) h[p + "traceparent"] = *r.traceparent;
    if (r.tracestate && !r.tracestate->empty()) h[p + "tracestate"] = *r.tracestate;
  }
  if (!cloudevents) return h;
  h["ce_specversion"] = "1.0";
  h["ce_id"] = "k" + std::to_string(r.id);
  h["ce_source"] = "/outbox/" + service + "/" + r.aggregate_type;
  h["ce_type"] = r.event_type;
  h["ce_subject"] = std::to_string(r.aggregate_id);
  h["ce_time"] = created_at;
  h["content-type"] = "application/json";
  return h;
}

std::string CreatedAt(TestDatabase& db, int64_t id) {
  return FormatRfc3339Utc(db.QueryInt(
      "SELECT UNIX_TIMESTAMP(created_at) FROM t_outbox WHERE id = " + std::to_string(id)));
}

std::map<int64_t, ConsumedMessage> ById(const std::vector<ConsumedMessage>& msgs) {
  std::map<int64_t, ConsumedMessage> out;
  for (const auto& m : msgs) out.emplace(std::stoll(m.headers.at("outbox_id")), m);
  return out;
}

// Relays `rows` with `envelope` to `topic` and returns what landed there, by
// outbox_id.
std::map<int64_t, ConsumedMessage> RelayRows(TestBroker& cluster, TestDatabase& db,
                                             const std::vector<RowSpec>& rows, Envelope envelope,
                                             const std::string& topic) {
  cluster.CreateTopic(topic, 2);
  for (const auto& r : rows) InsertRow(db, r);
  ServiceConfig s = TestService(db, cluster.bootstrap());
  s.topic = topic;
  s.envelope = envelope;
  RelayHarness h(s);
  h.relay->Start();
  REQUIRE(WaitFor([&] { return AllSent(db, static_cast<int64_t>(rows.size())); }, 60s));
  CHECK(h.Metric("outbox_trace_context_invalid_total") == 0);
  return ById(ConsumeAll(cluster.bootstrap(), {topic}));
}

}  // namespace

TEST_CASE(
    "rows with and without trace context are read back with their exact headers in both envelopes",
    "[rows][trace][cloudevents]") {
  TestBroker cluster(1);
  for (Envelope envelope : {Envelope::kPlain, Envelope::kCloudEvents}) {
    INFO("envelope " << ToString(envelope));
    TestDatabase db(std::string("trace_headers_") + ToString(envelope), kColumns);
    const auto rows = TraceRows();
    auto by_id = RelayRows(cluster, db, rows, envelope, std::string("trace.") + ToString(envelope));
    REQUIRE(by_id.size() == rows.size());
    for (const auto& r : rows) {
      INFO("row " << r.id);
      const ConsumedMessage& m = by_id.at(r.id);
      CHECK(m.key == std::to_string(r.aggregate_id));
      CHECK(m.value == "{}");
      CHECK(m.headers ==
            Expected(r, CreatedAt(db, r.id), db.name(), envelope == Envelope::kCloudEvents));
    }
  }
}

TEST_CASE("an invalid traceparent is counted and its event arrives in order without trace headers",
          "[rows][trace]") {
  TestBroker cluster(1, "outbox.event.Order", 3);
  TestDatabase db("trace_invalid", kColumns);
  const std::string upper = "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01";
  const std::string zeros = "00-00000000000000000000000000000000-00f067aa0ba902b7-01";
  // Aggregate 1: valid, invalid, valid, invalid; aggregate 2 beside it.
  InsertRow(db, {.id = 1, .aggregate_id = 1, .traceparent = kTraceparent});
  InsertRow(db, {.id = 2, .aggregate_id = 1, .traceparent = upper, .tracestate = kTracestate});
  InsertRow(db, {.id = 3, .aggregate_id = 2, .traceparent = "garbage"});
  InsertRow(db, {.id = 4, .aggregate_id = 1, .traceparent = kTraceparent});
  InsertRow(db, {.id = 5, .aggregate_id = 1, .traceparent = zeros});
  ServiceConfig s = TestService(db, cluster.bootstrap());
  s.envelope = Envelope::kCloudEvents;
  RelayHarness h(s);
  h.relay->Start();
  REQUIRE(WaitFor([&] { return AllSent(db, 5); }, 60s));
  CHECK(WaitFor([&] { return h.Metric("outbox_trace_context_invalid_total") == 3; }, 10s));
  CHECK(h.Metric("outbox_events_dead_total") == 0);
  CHECK(h.Metric("outbox_publish_failures_total", "reason=\"routing\"") == 0);
  const auto messages = ConsumeAll(cluster.bootstrap(), {"outbox.event.Order"});
  REQUIRE(messages.size() == 5);
  std::vector<int64_t> aggregate1;  // in offset order: one partition per aggregate
  for (const auto& m : messages) {
    const int64_t id = std::stoll(m.headers.at("outbox_id"));
    INFO("row " << id);
    if (m.key == "1") aggregate1.push_back(id);
    const bool valid = id == 1 || id == 4;
    CHECK(m.headers.count("traceparent") == (valid ? 1u : 0u));
    CHECK(m.headers.count("ce_traceparent") == (valid ? 1u : 0u));
    CHECK(m.headers.count("tracestate") == 0);
    CHECK(m.headers.at("ce_id") == "k" + std::to_string(id));
  }
  CHECK(aggregate1 == std::vector<int64_t>{1, 2, 4, 5});
}

TEST_CASE("a headers column naming a CloudEvents or trace header makes only that row DEAD",
          "[rows][trace][cloudevents]") {
  TestBroker cluster(1, "outbox.event.Order", 2);
  TestDatabase db("trace_collide", kColumns);
  InsertRow(db, {.id = 1, .aggregate_id = 1, .headers = R"({"ce_id":"spoofed"})"});
  InsertRow(db, {.id = 2,
                 .aggregate_id = 2,
                 .headers = R"({"Traceparent":"x"})",
                 .traceparent = kTraceparent});
  InsertRow(db, {.id = 3, .aggregate_id = 3, .headers = R"({"ce_tenant":"acme"})"});
  ServiceConfig s = TestService(db, cluster.bootstrap());
  s.envelope = Envelope::kCloudEvents;
  RelayHarness h(s);
  h.relay->Start();
  REQUIRE(WaitFor(
      [&] {
        return RowStatus(db, 3) == "SENT" && RowStatus(db, 1) == "DEAD" &&
               RowStatus(db, 2) == "DEAD";
      },
      60s));
  CHECK(db.QueryString("SELECT last_error FROM t_outbox WHERE id = 1") ==
        "headers column of row 1: \"ce_id\" is a header the relay sets itself");
  CHECK(db.QueryString("SELECT last_error FROM t_outbox WHERE id = 2") ==
        "headers column of row 2: \"Traceparent\" is a header the relay sets itself");
  CHECK(h.Metric("outbox_publish_failures_total", "reason=\"routing\"") == 2);
  const auto by_id = ById(ConsumeAll(cluster.bootstrap(), {"outbox.event.Order"}));
  REQUIRE(by_id.size() == 1);
  CHECK(by_id.at(3).headers.at("ce_tenant") == "acme");
}

TEST_CASE("check --connect lists the trace context columns and warns about a narrow traceparent",
          "[ops][trace]") {
  TestBroker cluster(1);
  TestDatabase db("trace_check", ", traceparent varchar(32), tracestate varchar(512)");
  TempDir dir;
  const std::string config =
      dir.Write("relay.yaml", RelayConfigYaml(db, "t", cluster.bootstrap(), ""));
  const ProcessResult r = RunProcess({OUTBOX_BINARY, "check", "--connect", "--config", config},
                                     ChildEnv(RelayChildEnv()), 60s);
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("optional columns: traceparent, tracestate,") != std::string::npos);
  CHECK(r.out.find("warning: service t: column traceparent of trace_check.t_outbox holds at most "
                   "32 characters, a W3C traceparent has 55: make it varchar(55) or wider") !=
        std::string::npos);
}

TEST_CASE("dead list and the dead replay audit line carry the trace id of a DEAD row",
          "[ops][trace]") {
  TestBroker cluster(1);
  TestDatabase db("trace_dead", kColumns);
  InsertRow(db, {.id = 1, .status = "DEAD", .traceparent = kTraceparent});
  InsertRow(db, {.id = 2, .status = "DEAD", .traceparent = "00-bad"});
  TempDir dir;
  const std::string config =
      dir.Write("relay.yaml", RelayConfigYaml(db, "t", cluster.bootstrap(), ""));
  auto cli = [&](const std::vector<std::string>& args) {
    std::vector<std::string> argv = {OUTBOX_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), {"--config", config});
    return RunProcess(argv, ChildEnv(RelayChildEnv()), 60s);
  };
  const ProcessResult list = cli({"dead", "list", "--service", "t", "--json"});
  INFO(list.out << list.err);
  REQUIRE(list.exit_code == 0);
  const auto j = nlohmann::json::parse(list.out);
  REQUIRE(j.size() == 2);
  CHECK(j[0].at("trace_id") == "4bf92f3577b34da6a3ce929d0e0e4736");
  CHECK(j[1].at("trace_id").is_null());  // not valid: no trace id
  const ProcessResult replay = cli({"dead", "replay", "--service", "t", "--all"});
  INFO(replay.out << replay.err);
  REQUIRE(replay.exit_code == 0);
  CHECK(replay.err.find("audit: dead replay service=t outbox_id=1") != std::string::npos);
  CHECK(replay.err.find("trace_id=4bf92f3577b34da6a3ce929d0e0e4736") != std::string::npos);
  CHECK(replay.err.find("outbox_id=2 aggregate_type=Order aggregate_id=1 event_type=OrderCreated "
                        "user=") != std::string::npos);
}
