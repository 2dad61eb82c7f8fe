// The example consumer in operation: inbox retention (inbox_retention_days)
// against MariaDB, and its /metrics, /healthz and /readyz on http.listen.
#include <catch2/catch.hpp>

#include "support/consumer_harness.h"
#include "support/http_probe.h"
#include "support/metrics_text.h"
#include "support/process.h"
#include "support/test_broker.h"
#include "support/wait.h"

using namespace outbox::testing;
using namespace std::chrono_literals;

namespace {

// `n` inbox rows of `consumer` processed `days` ago, keys "{prefix}-1"...
void OldInboxRows(ConsumerDatabase& db, const std::string& consumer, const std::string& prefix,
                  int n, int days, int64_t first_id) {
  db.Exec("INSERT INTO t_inbox (id, event_key, event_type, consumer, processed_at) SELECT seq + " +
          std::to_string(first_id) + ", CONCAT('" + prefix + "-', seq), 'OrderPaid', '" + consumer +
          "', NOW() - INTERVAL " + std::to_string(days) + " DAY FROM seq_1_to_" +
          std::to_string(n));
}

// A strict consumer's parked later version, parked `age_s` seconds ago.
void ParkedGap(ConsumerDatabase& db, const std::string& event_key, int age_s) {
  db.Exec(
      "INSERT INTO t_inbox_parked (consumer, reason, detail, source_topic, source_partition, "
      "source_offset, event_key, event_type, aggregate_type, aggregate_id, aggregate_version, "
      "outbox_id, parked_at) VALUES ('fulfillment', 'version_gap', 'waits for version 2', '" +
      kOrderTopic + "', 0, 99, '" + event_key +
      "', 'OrderPaid', 'Order', 77, 3, 103, NOW() - INTERVAL " + std::to_string(age_s) +
      " SECOND)");
}

int64_t Count(ConsumerDatabase& db, const std::string& where) {
  return db.QueryInt("SELECT COUNT(*) FROM t_inbox WHERE " + where);
}

}  // namespace

TEST_CASE(
    "retention deletes this consumer's processed inbox rows older than inbox_retention_days in "
    "batches and keeps the rows of parked events",
    "[consumer][retention]") {
  TestBroker cluster;
  cluster.CreateTopic(kOrderTopic, 1);
  TempDir dir;
  ConsumerDatabase db("inbox_retention");
  OldInboxRows(db, "fulfillment", "old", 2500, 30, 0);
  OldInboxRows(db, "fulfillment", "young", 10, 3, 10000);
  OldInboxRows(db, "billing", "other", 10, 30, 20000);  // another consumer's rows
  OldInboxRows(db, "fulfillment", "gap", 1, 30, 30000);
  ParkedGap(db, "gap-1", 5);
  ConsumerSpec spec;
  spec.extra_yaml = "inbox_retention_days: 14";
  ConsumerProcess c(dir.path(), "c", cluster.bootstrap(), db.name(), spec);
  REQUIRE(c.Start());
  INFO(c.Log());
  REQUIRE(WaitFor([&] { return Count(db, "event_key LIKE 'old-%'") == 0; }, 60s));
  CHECK(c.Count("retention: deleted 1000 inbox row(s) older than 14 day(s)") == 2);
  CHECK(c.Count("retention: deleted 500 inbox row(s)") == 1);
  CHECK(c.Stop() == 0);
  CHECK(Count(db, "event_key LIKE 'young-%'") == 10);
  CHECK(Count(db, "consumer = 'billing'") == 10);
  CHECK(Count(db, "event_key = 'gap-1'") == 1);  // its event waits in t_inbox_parked
}

TEST_CASE(
    "the consumer's /metrics counts outcomes and parked rows and the oldest gap and lag while "
    "inbox_retention_days 0 deletes nothing",
    "[consumer][metrics]") {
  TestBroker cluster;
  cluster.CreateTopic(kOrderTopic, 2);
  cluster.CreateTopic(kOrderTopic + ".dlq", 1);
  TempDir dir;
  ConsumerDatabase db("inbox_metrics");
  OldInboxRows(db, "fulfillment", "old", 5, 400, 0);
  ParkedGap(db, "gap-1", 600);
  TestProducer producer(cluster.bootstrap());
  const auto events = MakeEvents(5, 1);
  producer.Send(kOrderTopic, events);
  producer.Send(kOrderTopic, ToMessage(events[0]));  // a duplicate
  RawMessage poison = ToMessage(events[1]);
  poison.headers["outbox_id"] = "x";
  producer.Send(kOrderTopic, poison);
  ConsumerSpec spec;
  spec.extra_yaml = "inbox_retention_days: 0\nhttp: {listen: \"127.0.0.1:0\"}";
  ConsumerProcess c(dir.path(), "c", cluster.bootstrap(), db.name(), spec);
  REQUIRE(c.Start());
  INFO(c.Log());
  int port = 0;
  REQUIRE(WaitFor([&] { return (port = ServingPort(c.Log())) > 0; }, 30s));
  const std::string consumer = "consumer=\"fulfillment\"";
  // Everything below is settled once the dead letter is acknowledged and a
  // housekeeping round (every 10 s) has seen the gap and the positions.
  REQUIRE(WaitFor(
      [&] {
        const std::string t = HttpGet(port, "/metrics").body;
        return MetricValue(t, "outbox_consumer_messages_total{" + consumer +
                                  ",outcome=\"dead_lettered\"}") == 1 &&
               MetricValue(t, "outbox_consumer_oldest_gap_age_seconds{" + consumer + "}") >= 600 &&
               t.find("outbox_consumer_lag{" + consumer + ",partition=") != std::string::npos;
      },
      60s));
  const std::string text = HttpGet(port, "/metrics").body;
  INFO(text);
  CHECK(MetricValue(text,
                    "outbox_consumer_messages_total{" + consumer + ",outcome=\"duplicate\"}") == 1);
  CHECK(MetricValue(text, "outbox_consumer_messages_total{" + consumer + ",outcome=\"applied\"}") ==
        5);
  CHECK(MetricValue(text, "outbox_consumer_parked_rows{" + consumer + ",reason=\"version_gap\"}") ==
        1);
  CHECK(MetricValue(text, "outbox_consumer_database_up{" + consumer + "}") == 1);
  CHECK(MetricValue(text, "outbox_consumer_failed_attempts_total{" + consumer + "}") == 1);
  CHECK(MetricSum(text, "outbox_consumer_lag", consumer) == 0);
  CHECK(text.find("outbox_consumer_lag{" + consumer + ",partition=") != std::string::npos);
  CHECK(HttpGet(port, "/healthz").status == 200);
  CHECK(HttpGet(port, "/readyz").status == 200);
  CHECK(Count(db, "event_key LIKE 'old-%'") == 5);  // retention off
  CHECK(c.Stop() == 0);
}
