// The handler contract of the inbox library (outbox/inbox/handler.h,
// docs/CONSUMERS.md "Library") against the real MariaDB: what a handler's
// Status does to the inbox transaction (its own statements and the inbox
// row commit together or roll back together), and, through a consumer in
// this process on the mock cluster, that a permanent failure is
// dead-lettered once while the other events go on. The verdict is SQL on
// t_inbox and t_aggregate_effect and the dead-letter topic's content.
#include <cppconn/prepared_statement.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <functional>
#include <thread>

#include "common/mutex.h"
#include "counter_handler.h"
#include "inbox/inbox_consumer.h"
#include "inbox/inbox_store.h"
#include "outbox/inbox/testing.h"
#include "support/consumer_harness.h"
#include "support/http_probe.h"
#include "support/inbox_rig.h"
#include "support/kafka_reader.h"
#include "support/log_capture.h"
#include "support/metrics_text.h"
#include "support/wait.h"

using namespace outbox::testing;
using namespace std::chrono_literals;

namespace {

outbox::inbox::Event OrderEvent(int64_t outbox_id, int64_t aggregate_id) {
  outbox::inbox::Event e;
  e.event_key = "OrderPaid-" + std::to_string(aggregate_id) + "-" + std::to_string(outbox_id);
  e.event_type = "OrderPaid";
  e.aggregate_type = "Order";
  e.aggregate_id = aggregate_id;
  e.outbox_id = outbox_id;
  e.source = {kOrderTopic, 0, outbox_id};
  return e;
}

// Counts the event (the counter's statement runs), then answers what the
// test scripts for the next calls; kOk once the script is used up.
class ScriptedHandler : public outbox::inbox::Handler {
 public:
  explicit ScriptedHandler(std::vector<outbox::inbox::Status> script)
      : script_(std::move(script)) {}
  outbox::inbox::Status Apply(outbox::inbox::Transaction& tx,
                              const outbox::inbox::Event& e) override {
    ++calls;
    outbox::inbox::Status counted = counter_.Apply(tx, e);
    if (!counted.ok() || next_ >= script_.size()) return counted;
    return script_[next_++];
  }
  int calls = 0;

 private:
  example::CounterHandler counter_;
  std::vector<outbox::inbox::Status> script_;
  size_t next_ = 0;
};

// Counts the event (the counter's statement runs), then answers what `then`
// makes of the event and the count's status.
class CountingHandler : public outbox::inbox::Handler {
 public:
  using Then = std::function<outbox::inbox::Status(
      outbox::inbox::Transaction&, const outbox::inbox::Event&, outbox::inbox::Status counted)>;
  explicit CountingHandler(Then then) : then_(std::move(then)) {}
  outbox::inbox::Status Apply(outbox::inbox::Transaction& tx,
                              const outbox::inbox::Event& e) override {
    return then_(tx, e, counter_.Apply(tx, e));
  }

 private:
  example::CounterHandler counter_;
  Then then_;
};

// Counts the event, then runs a statement the database refuses (a table
// that does not exist) the first `failures` times.
CountingHandler FailingStatementHandler(int failures) {
  return CountingHandler([failures](outbox::inbox::Transaction& tx, const outbox::inbox::Event&,
                                    outbox::inbox::Status counted) mutable {
    if (failures-- > 0) tx.Prepare("SELECT id FROM t_no_such_table").executeQuery();
    return counted;
  });
}

// Order 7's event (outbox_id 1) given to an inbox store of consumer
// "fulfillment" with `handler` on a fresh database `name`.
struct OneEventStore {
  OneEventStore(const std::string& name, outbox::inbox::VersionCheck check,
                outbox::inbox::Handler& handler)
      : db(name), store(InboxDb(db), "fulfillment", check, handler) {}
  // Applies the event; what went wrong in `error`.
  outbox::inbox::ApplyResult Apply() { return store.Apply(e, e.source, &error); }
  // The event's rows in t_inbox.
  int64_t InboxRows() {
    return db.QueryInt("SELECT COUNT(*) FROM t_inbox WHERE event_key = '" + e.event_key + "'");
  }
  ConsumerDatabase db;
  outbox::inbox::InboxStore store;
  const outbox::inbox::Event e = OrderEvent(1, 7);
  std::string error;
};

}  // namespace

TEST_CASE("a handler that fails retriably rolls back with its inbox row and then applies once",
          "[inbox-handler]") {
  ScriptedHandler handler({outbox::inbox::Status::Retriable("the stock service is down")});
  OneEventStore rig("inbox_handler_retriable", outbox::inbox::VersionCheck::kNewer, handler);
  CHECK(rig.Apply() == outbox::inbox::ApplyResult::kRetryLater);
  CHECK(rig.error == "handler: the stock service is down");
  CHECK(rig.InboxRows() == 0);
  CHECK(rig.db.Applied() == 0);
  CHECK(rig.Apply() == outbox::inbox::ApplyResult::kApplied);
  CHECK(rig.Apply() == outbox::inbox::ApplyResult::kDuplicate);
  CHECK(handler.calls == 2);
  CHECK(rig.InboxRows() == 1);
  CHECK(rig.db.Applied() == 1);
}

TEST_CASE("a handler's permanent and poison failures leave neither effect nor inbox row",
          "[inbox-handler]") {
  ScriptedHandler handler({outbox::inbox::Status::Permanent("no such product"),
                           outbox::inbox::Status::Poison("not yet")});
  OneEventStore rig("inbox_handler_permanent", outbox::inbox::VersionCheck::kNone, handler);
  CHECK(rig.Apply() == outbox::inbox::ApplyResult::kDeadLetter);
  CHECK(rig.error == "handler: no such product");
  CHECK(rig.Apply() == outbox::inbox::ApplyResult::kRejected);
  CHECK(rig.InboxRows() == 0);
  CHECK(rig.db.Applied() == 0);
}

TEST_CASE("a handler whose own statement fails rolls back the inbox row and applies once later",
          "[inbox-handler]") {
  CountingHandler handler = FailingStatementHandler(1);
  OneEventStore rig("inbox_handler_statement", outbox::inbox::VersionCheck::kNewer, handler);
  // No such table (1146, or 1142 for a user without grants on it): the
  // database's failure, not the event's.
  CHECK(rig.Apply() == outbox::inbox::ApplyResult::kUnavailable);
  CAPTURE(rig.error);
  CHECK(rig.error.find("t_no_such_table") != std::string::npos);
  CHECK(rig.InboxRows() == 0);
  CHECK(rig.db.Applied() == 0);
  CHECK(rig.Apply() == outbox::inbox::ApplyResult::kApplied);
  CHECK(rig.Apply() == outbox::inbox::ApplyResult::kDuplicate);
  CHECK(rig.InboxRows() == 1);
  CHECK(rig.db.Applied() == 1);
}

namespace {

// Fails one aggregate's events for good; counts the others.
CountingHandler RefusingHandler(int64_t refused) {
  return CountingHandler([refused](outbox::inbox::Transaction&, const outbox::inbox::Event& e,
                                   outbox::inbox::Status counted) {
    if (e.aggregate_id == refused) return outbox::inbox::Status::Permanent("aggregate closed");
    return counted;
  });
}

}  // namespace

TEST_CASE("a handler's permanent failure is dead-lettered once and the partition goes on",
          "[inbox-handler]") {
  ConsumerRig rig("inbox_handler_dead_letter", {{kOrderTopic, 1}, {kOrderTopic + ".dlq", 1}});
  outbox::inbox::ConsumerConfig config = InboxConfig(rig);
  config.max_attempts = 3;
  const std::vector<TestEvent> events = MakeEvents(3, 2);  // aggregates 1..3
  rig.producer.Send(kOrderTopic, events);
  CountingHandler handler = RefusingHandler(2);
  outbox::inbox::Consumer consumer(config, handler);
  bool settled = false;
  const int exit_code = RunUntil(
      consumer,
      [&] {
        return rig.db.Applied() == 4 &&
               ConsumeAll(rig.cluster.bootstrap(), {kOrderTopic + ".dlq"}).size() == 2;
      },
      &settled);
  CHECK(settled);
  CHECK(exit_code == 0);
  CHECK(rig.db.QueryInt("SELECT COALESCE(SUM(applied), 0) FROM t_aggregate_effect "
                        "WHERE aggregate_id = 2") == 0);
  CHECK(rig.db.QueryInt("SELECT COUNT(*) FROM t_inbox") == 4);
  const auto dead = ConsumeAll(rig.cluster.bootstrap(), {kOrderTopic + ".dlq"});
  REQUIRE(dead.size() == 2);
  for (const auto& m : dead) {
    CHECK(m.key == "2");
    CHECK(m.headers.at("dlq_reason") == "handler: aggregate closed");
    CHECK(m.headers.at("dlq_attempts") == "1");
  }
}

TEST_CASE("concurrency 2 runs two group members in one process and applies each event once",
          "[inbox-handler]") {
  ConsumerRig rig("inbox_handler_concurrency", {{kOrderTopic, 4}, {kOrderTopic + ".dlq", 1}});
  outbox::inbox::ConsumerConfig config = InboxConfig(rig);
  config.concurrency = 2;
  const std::vector<TestEvent> events = MakeEvents(20, 3);
  rig.producer.Send(kOrderTopic, events);
  example::CounterHandler handler;  // stateless: safe from both members' threads
  outbox::inbox::Consumer consumer(config, handler);
  bool settled = false;
  const int exit_code = RunUntil(
      consumer, [&] { return rig.db.Applied() == 60; }, &settled);
  CHECK(settled);
  CHECK(exit_code == 0);
  CHECK(rig.db.CheckExactlyOnce(events) == "");
}

TEST_CASE("the test kit runs a handler in the inbox transaction on the real database",
          "[inbox-handler]") {
  namespace kit = outbox::inbox::testing;
  ConsumerDatabase db("inbox_handler_test_kit");
  ScriptedHandler handler({outbox::inbox::Status::Permanent("no such product")});
  kit::InboxRunner runner(InboxDb(db), "fulfillment", handler, outbox::inbox::VersionCheck::kNewer);
  kit::TestEvent first("Order", 7, 5);
  first.Type("OrderPaid").Payload(R"({"amount": 12})").Header("tenant", "eu");
  const outbox::inbox::Event& e = first.event();
  CHECK(e.event_key == "OrderPaid-7-5");
  CHECK(e.key == "7");
  CHECK(e.payload == R"({"amount": 12})");
  CHECK(e.headers.back().first == "tenant");
  CHECK(e.headers.back().second == "eu");
  std::string error;
  CHECK(runner.Apply(first, &error) == kit::Outcome::kDeadLetter);
  CHECK(error == "handler: no such product");
  CHECK(db.Applied() == 0);
  CHECK(runner.Apply(first) == kit::Outcome::kApplied);
  CHECK(runner.Apply(first) == kit::Outcome::kDuplicate);
  kit::TestEvent older("Order", 7, 3);
  older.Type("OrderPaid").Key("order-7-paid-early");
  CHECK(older.event().event_key == "order-7-paid-early");
  CHECK(runner.Apply(older) == kit::Outcome::kStale);
  CHECK(std::string(kit::OutcomeName(kit::Outcome::kStale)) == "stale");
  CHECK(db.Applied() == 1);
  CHECK(db.QueryInt("SELECT COUNT(*) FROM t_inbox") == 2);
}

// Writes nothing: the version check must not need the handler's tables.
class SilentHandler : public outbox::inbox::Handler {
 public:
  outbox::inbox::Status Apply(outbox::inbox::Transaction&, const outbox::inbox::Event&) override {
    ++calls;
    return outbox::inbox::Status::Ok();
  }
  int calls = 0;
};

TEST_CASE(
    "the version check keeps its state in the library's table per consumer whatever the "
    "handler writes",
    "[inbox-handler]") {
  namespace kit = outbox::inbox::testing;
  ConsumerDatabase db("inbox_handler_version_state", /*example_effect=*/false);
  SilentHandler handler;
  kit::InboxRunner payments(InboxDb(db), "payments", handler, outbox::inbox::VersionCheck::kNewer);
  kit::InboxRunner audit(InboxDb(db), "audit", handler, outbox::inbox::VersionCheck::kNewer);
  kit::InboxRunner ledger(InboxDb(db), "ledger", handler, outbox::inbox::VersionCheck::kStrict);
  const auto version = [](int64_t outbox_id, int64_t v) {
    kit::TestEvent e("Order", 7, outbox_id);
    e.Version(v);
    return e;
  };
  kit::TestEvent v1 = version(11, 1), v2 = version(12, 2), v3 = version(13, 3);
  CHECK(payments.Apply(v3) == kit::Outcome::kApplied);
  CHECK(payments.Apply(v2) == kit::Outcome::kStale);
  CHECK(audit.Apply(v2) == kit::Outcome::kApplied);  // payments' state is not audit's
  CHECK(audit.Apply(v1) == kit::Outcome::kStale);
  CHECK(ledger.Apply(v2) == kit::Outcome::kParked);
  CHECK(ledger.Apply(v1) == kit::Outcome::kApplied);  // and version 2 after it
  CHECK(handler.calls == 4);
  const auto state = [&](const std::string& consumer) {
    return db.QueryInt(
        "SELECT last_version * 1000000 + last_outbox_id * 10 + stale "
        "FROM t_inbox_aggregate WHERE aggregate_type = 'Order' AND "
        "aggregate_id = 7 AND consumer = '" +
        consumer + "'");
  };
  CHECK(state("payments") == 3000131);
  CHECK(state("audit") == 2000121);
  CHECK(state("ledger") == 2000120);
  CHECK(db.Parked("version_gap") == 0);
}

TEST_CASE("a consumer with a host log callback logs through it and not to stderr",
          "[inbox-handler]") {
  ConsumerRig rig("inbox_handler_log_callback", {{kOrderTopic, 2}, {kOrderTopic + ".dlq", 1}});
  outbox::inbox::ConsumerConfig config = InboxConfig(rig);
  config.concurrency = 2;
  rig.producer.Send(kOrderTopic, MakeEvents(4, 2));
  outbox::Mutex mu;
  std::vector<std::pair<outbox::inbox::LogLevel, std::string>> lines;
  outbox::inbox::ConsumerOptions options;
  options.log = [&](outbox::inbox::LogLevel level, std::string_view line) {
    outbox::MutexLock lock(&mu);
    lines.emplace_back(level, std::string(line));
  };
  example::CounterHandler handler;
  outbox::inbox::Consumer consumer(config, handler, options);
  bool applied = false;
  int exit_code = -1;
  const std::string captured = CapturedLog("text", "test", [&] {
    exit_code = RunUntil(
        consumer, [&] { return rig.db.Applied() == 8; }, &applied);
  });
  CHECK(applied);
  CHECK(exit_code == 0);
  outbox::MutexLock lock(&mu);
  int started = 0, stopped = 0;
  for (const auto& [level, line] : lines) {
    if (line.rfind("consumer fulfillment started", 0) == 0 &&
        level == outbox::inbox::LogLevel::kInfo)
      ++started;
    if (line.rfind("stopped: ", 0) == 0) ++stopped;
  }
  CHECK(started == 2);  // one line per member, each on its own thread
  CHECK(stopped == 2);
  CHECK(captured.find("consumer fulfillment started") == std::string::npos);
}

namespace {

// What a service's own observer hears: the applied outcomes.
class AppliedCounter : public outbox::inbox::ConsumerObserver {
 public:
  void Outcome(const std::string& outcome, uint64_t n) override {
    if (outcome == "applied") applied += n;
  }
  void Stalled() override {}
  void FailedAttempt() override {}
  void HeldPartitions(int, size_t) override {}
  void Lag(const std::string&, int32_t, int64_t) override {}
  void ForgetPartition(const std::string&, int32_t) override {}
  void Parked(int64_t, int64_t, int64_t) override {}
  void Purged(uint64_t) override {}
  void DatabaseUp(bool) override {}
  std::atomic<uint64_t> applied{0};
};

}  // namespace

TEST_CASE(
    "a library consumer with http.listen serves its metrics and tells the service's observer "
    "too",
    "[inbox-handler]") {
  ConsumerRig rig("inbox_handler_metrics", {{kOrderTopic, 2}, {kOrderTopic + ".dlq", 1}});
  outbox::inbox::ConsumerConfig config = InboxConfig(rig);
  config.http_listen = "127.0.0.1:0";
  rig.producer.Send(kOrderTopic, MakeEvents(3, 2));
  AppliedCounter observer;
  outbox::Mutex mu;
  std::string log;
  outbox::inbox::ConsumerOptions options;
  options.observer = &observer;
  options.log = [&](outbox::inbox::LogLevel, std::string_view line) {
    outbox::MutexLock lock(&mu);
    log.append(line).append("\n");
  };
  example::CounterHandler handler;
  outbox::inbox::Consumer consumer(config, handler, options);
  const std::string applied =
      "outbox_consumer_messages_total{consumer=\"fulfillment\",outcome=\"applied\"}";
  int port = 0, healthz = 0;
  bool settled = false;
  const int exit_code = RunUntil(
      consumer,
      [&] {
        {
          outbox::MutexLock lock(&mu);
          port = ServingPort(log);  // the library's line, through the host's logger
        }
        if (port == 0 || MetricValue(HttpGet(port, "/metrics").body, applied) != 6) return false;
        healthz = HttpGet(port, "/healthz").status;
        return true;
      },
      &settled);
  CHECK(settled);
  CHECK(exit_code == 0);
  CHECK(healthz == 200);
  CHECK(observer.applied == 6);
  CHECK(rig.db.Applied() == 6);
}
