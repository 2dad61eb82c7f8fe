// Trace context through the relay's loops (fake table, broker and clock): an
// invalid traceparent never delays or kills its event, and is counted and
// logged once, when the event is SENT; log lines about an event carry its
// trace_id. Against MariaDB and the broker: tests/integration/trace_context_test.cc.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <sstream>

#include "relay/relay_rig.h"
#include "support/log_capture.h"

namespace outbox {
namespace {

using namespace std::chrono_literals;
using testing::FakeRow;

const std::string kTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

ServiceConfig TraceConfig() {
  ServiceConfig c;
  c.name = "orders";
  c.ordering = Ordering::kPerAggregate;
  c.retry.max_attempts = 3;
  c.retry.initial_backoff_ms = 1000;
  c.retry.max_backoff_ms = 1000;
  return c;
}

struct Rig : testing::RelayRig {
  Rig() : RelayRig(TraceConfig()) {}

  int64_t Insert(int64_t aggregate_id, const std::string& traceparent,
                 const std::string& tracestate = "") {
    const int64_t id = table->Insert("Order", aggregate_id, "OrderPaid");
    FakeRow r = table->Get(id);
    r.row.traceparent = traceparent;
    r.row.tracestate = tracestate;
    table->Put(id, r);
    return id;
  }
};

bool HasHeader(const Message& m, const std::string& name) {
  for (const auto& [k, v] : m.headers)
    if (k == name) return true;
  return false;
}

// The JSON log lines whose msg starts with `msg`.
std::vector<nlohmann::json> LinesOf(const std::string& log, const std::string& msg) {
  std::vector<nlohmann::json> out;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.value("msg", "").rfind(msg, 0) == 0) out.push_back(j);
  }
  return out;
}

}  // namespace

TEST_CASE("an invalid traceparent is counted and logged once when its event is sent without it",
          "[relay][trace]") {
  Rig rig;
  const int64_t bad = rig.Insert(1, "00-not-a-trace", "congo=t61rcWkgMzE");
  const int64_t good = rig.Insert(1, kTraceparent);
  // The first attempt fails: the row is retried, not counted yet.
  rig.faults->FailNext(1, PublishResult::kRetryable, FailureReason::kTimeout);
  const std::string log = testing::CapturedLog("json", "relay-1", [&] {
    rig.Step();
    CHECK(rig.table->Get(bad).status == "NEW");
    CHECK(rig.metrics.Value(ServiceStats::Counter::kTraceInvalid) == 0);
    rig.clock->Advance(2s);
    rig.Step();
    rig.Step();  // the aggregate's second event, after the first one's ack
  });
  CHECK(rig.table->Get(bad).status == "SENT");
  CHECK(rig.table->Get(good).status == "SENT");
  CHECK(rig.metrics.Value(ServiceStats::Counter::kTraceInvalid) == 1);
  const auto acked = rig.broker->acked();
  REQUIRE(acked.size() == 2);  // in order, the invalid one first
  CHECK_FALSE(HasHeader(acked[0], "traceparent"));
  CHECK_FALSE(HasHeader(acked[0], "tracestate"));
  CHECK(HasHeader(acked[1], "traceparent"));
  const auto lines = LinesOf(log, "traceparent is not valid W3C trace context");
  REQUIRE(lines.size() == 1);
  CHECK(lines[0]["level"] == "warn");
  CHECK(lines[0]["outbox_id"] == std::to_string(bad));
  CHECK(lines[0]["service"] == "orders");
  CHECK(lines[0]["traceparent"] == "00-not-a-trace");
  CHECK(lines[0]["error"] == "shorter than 55 characters");
  CHECK_FALSE(lines[0].contains("trace_id"));
}

TEST_CASE("a DEAD row's log line carries the trace id of its traceparent", "[relay][trace]") {
  Rig rig;
  const int64_t traced = rig.Insert(1, kTraceparent);
  const int64_t untraced = rig.Insert(2, "");
  rig.faults->FailNext(2, PublishResult::kPermanent, FailureReason::kMessageTooLarge);
  const std::string log = testing::CapturedLog("json", "relay-1", [&] { rig.Step(); });
  CHECK(rig.table->Get(traced).status == "DEAD");
  CHECK(rig.table->Get(untraced).status == "DEAD");
  const auto lines = LinesOf(log, "row is DEAD");
  REQUIRE(lines.size() == 2);
  for (const auto& line : lines) {
    if (line["outbox_id"] == std::to_string(traced))
      CHECK(line["trace_id"] == "4bf92f3577b34da6a3ce929d0e0e4736");
    else
      CHECK_FALSE(line.contains("trace_id"));
  }
  CHECK(rig.metrics.Value(ServiceStats::Counter::kTraceInvalid) == 0);
}

}  // namespace outbox
