// Odd rows against real MariaDB and the mock cluster: for each, what happens
// to that row, and that the other rows keep flowing.

#include <catch2/catch.hpp>
#include <limits>
#include <set>

#include "support/http_probe.h"
#include "support/kafka_reader.h"
#include "support/relay_harness.h"
#include "support/test_broker.h"
#include "support/test_env.h"
#include "support/wait.h"

using namespace outbox;
using namespace outbox::testing;
using namespace std::chrono_literals;

namespace {

// last_error, topic and headers as optional columns; headers as TEXT so a
// test can store JSON that is not valid.
const char* kOptionalColumns = ", last_error varchar(255), topic varchar(300), headers text";

std::string RowStatus(TestDatabase& db, int64_t id) {
  return db.QueryInt("SELECT COUNT(*) FROM t_outbox WHERE id = " + std::to_string(id)) == 0
             ? "(deleted)"
             : [&] {
                 for (const char* s : {"NEW", "SENDING", "SENT", "DEAD"})
                   if (db.QueryInt("SELECT COUNT(*) FROM t_outbox WHERE id = " +
                                   std::to_string(id) + " AND BINARY status = '" + s + "'") == 1)
                     return std::string(s);
                 return std::string("(other)");
               }();
}

bool AllSent(TestDatabase& db, const std::vector<int64_t>& ids) {
  for (int64_t id : ids)
    if (RowStatus(db, id) != "SENT") return false;
  return true;
}

std::map<int64_t, ConsumedMessage> ById(const std::vector<ConsumedMessage>& msgs) {
  std::map<int64_t, ConsumedMessage> out;
  for (const auto& m : msgs) out.emplace(std::stoll(m.headers.at("outbox_id")), m);
  return out;
}

bool LastErrorIs(TestDatabase& db, int64_t id, const std::string& like) {
  return db.QueryInt("SELECT COUNT(*) FROM t_outbox WHERE id = " + std::to_string(id) +
                     " AND last_error LIKE " + SqlQuote(like)) == 1;
}

}  // namespace

TEST_CASE("a topic column with an invalid name makes only that row DEAD while the others flow",
          "[rows]") {
  TestBroker cluster(1, "outbox.event.Order", 2);
  cluster.CreateTopic("custom.topic", 1);
  TestDatabase db("rows_topic_column", kOptionalColumns);
  db.InsertEvents(10, 1);  // ids 1..10, aggregates 1..10
  InsertRow(db, {.id = 20, .aggregate_id = 100, .topic = "bad topic!"});
  InsertRow(db, {.id = 21, .aggregate_id = 101, .topic = std::string(250, 'a')});
  InsertRow(db, {.id = 22, .aggregate_id = 102, .topic = ""});  // empty: the template decides
  InsertRow(db, {.id = 23, .aggregate_id = 103, .topic = ".."});
  InsertRow(db, {.id = 24, .aggregate_id = 104, .topic = "custom.topic"});
  InsertRow(db, {.id = 25, .aggregate_id = 105, .topic = "line\nbreak"});
  RelayHarness h(TestService(db, cluster.bootstrap()));
  h.relay->Start();
  REQUIRE(WaitFor([&] { return AllSent(db, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 22, 24}); }, 60s));
  REQUIRE(WaitFor([&] { return db.CountByStatus()["DEAD"] == 4; }, 30s));
  for (int64_t id : {20, 21, 23, 25}) {
    INFO("row " << id);
    CHECK(RowStatus(db, id) == "DEAD");
    CHECK(LastErrorIs(db, id, "invalid topic for row " + std::to_string(id) + ": topic name %"));
  }
  CHECK(LastErrorIs(db, 25, "%\"line\\\\x0abreak\" has a character outside%"));
  CHECK(db.QueryInt("SELECT MAX(retry_count) FROM t_outbox WHERE status = 'DEAD'") == 1);
  auto by_id = ById(ConsumeAll(cluster.bootstrap(), {"outbox.event.Order", "custom.topic"}));
  CHECK(by_id.size() == 12);
  CHECK(by_id.at(22).topic == "outbox.event.Order");
  CHECK(by_id.at(24).topic == "custom.topic");
  CHECK(WaitFor(
      [&] { return h.Metric("outbox_publish_failures_total", "reason=\"routing\"") == 4; }, 10s));
  CHECK(h.Metric("outbox_events_dead_total") == 4);
}

TEST_CASE("a headers column that is not a JSON object of strings makes only that row DEAD",
          "[rows]") {
  TestBroker cluster(1, "outbox.event.Order", 2);
  TestDatabase db("rows_headers_column", kOptionalColumns);
  db.InsertEvents(5, 1);  // ids 1..5
  struct Bad {
    int64_t id;
    std::string headers;
    std::string error;
  };
  std::vector<Bad> bad = {
      {30, "[1,2]", "headers column of row 30 is not a JSON object of strings"},
      {31, R"({"n":1})", "headers column of row 31: value of \"n\" is not a string"},
      {32, R"("just a string")", "headers column of row 32 is not a JSON object of strings"},
      {33, "{not json", "headers column of row 33 is not a JSON object of strings"},
      {34, R"({"a":{"b":"c"}})", "headers column of row 34: value of \"a\" is not a string"},
      {35, R"({"event_key":"spoofed"})",
       "headers column of row 35: \"event_key\" is a header the relay sets itself"},
      {36, R"({"a":"b"} trailing)", "headers column of row 36 is not a JSON object of strings"},
  };
  for (const auto& b : bad) InsertRow(db, {.id = b.id, .aggregate_id = b.id, .headers = b.headers});
  InsertRow(db, {.id = 40, .aggregate_id = 40, .headers = "null"});
  InsertRow(db, {.id = 41, .aggregate_id = 41, .headers = ""});
  InsertRow(db, {.id = 42, .aggregate_id = 42, .headers = R"({"trace":"t-1","tenant":"acme"})"});
  RelayHarness h(TestService(db, cluster.bootstrap()));
  h.relay->Start();
  REQUIRE(WaitFor([&] { return AllSent(db, {1, 2, 3, 4, 5, 40, 41, 42}); }, 60s));
  REQUIRE(
      WaitFor([&] { return db.CountByStatus()["DEAD"] == static_cast<int64_t>(bad.size()); }, 30s));
  for (const auto& b : bad) {
    INFO("row " << b.id << " headers " << b.headers);
    CHECK(LastErrorIs(db, b.id, b.error));
  }
  auto by_id = ById(ConsumeAll(cluster.bootstrap(), {"outbox.event.Order"}));
  CHECK(by_id.size() == 8);
  CHECK(by_id.at(40).headers.size() == 5);
  CHECK(by_id.at(41).headers.size() == 5);
  CHECK(by_id.at(42).headers.at("trace") == "t-1");
  CHECK(by_id.at(42).headers.at("tenant") == "acme");
  CHECK(by_id.at(42).headers.at("event_key") == "k42");
}

TEST_CASE("a template rendering an invalid topic makes the row DEAD and blocks only its aggregate",
          "[rows]") {
  TestBroker cluster(1);
  for (Ordering ordering : kBothOrderings) {
    TestDatabase db(OrderingDbName("rows_template", ordering), kOptionalColumns);
    // Aggregate 1: an event_type with a space, then a good one.
    InsertRow(db, {.id = 1, .aggregate_id = 1, .event_type = "Order Paid"});
    InsertRow(db, {.id = 2, .aggregate_id = 1, .event_type = "OrderShipped"});
    // Aggregate 2: a good one, then one with a slash.
    InsertRow(db, {.id = 3, .aggregate_id = 2, .event_type = "OrderCreated"});
    InsertRow(db, {.id = 4, .aggregate_id = 2, .event_type = "Order/Cancelled"});
    // Aggregate 3: non-ASCII.
    InsertRow(db, {.id = 5, .aggregate_id = 3, .event_type = "Bestellung\xc3\xa4"});
    InsertRow(db, {.id = 6, .aggregate_id = 4, .event_type = "OrderCreated"});
    ServiceConfig s = TestService(db, cluster.bootstrap(), ordering);
    s.topic = "events.{event_type}";
    RelayHarness h(s);
    h.relay->Start();
    REQUIRE(WaitFor([&] { return AllSent(db, {3, 6}); }, 60s));
    REQUIRE(WaitFor([&] { return db.CountByStatus()["DEAD"] == 3; }, 30s));
    CHECK(LastErrorIs(db, 1, "invalid topic for row 1: topic name \"events.Order Paid\" %"));
    CHECK(LastErrorIs(db, 4, "invalid topic for row 4: topic name \"events.Order/Cancelled\" %"));
    CHECK(LastErrorIs(db, 5,
                      "invalid topic for row 5: topic name \"events.Bestellung\\\\xc3\\\\xa4\" %"));
    if (ordering == Ordering::kPerAggregate) {
      // dead_policy block: aggregate 1's later event waits for the operator.
      std::this_thread::sleep_for(500ms);
      CHECK(RowStatus(db, 2) == "NEW");
      // Only aggregate 1 has an event waiting behind its DEAD one; the DEAD
      // rows of aggregates 2 and 3 are their last (METRICS.md).
      CHECK(WaitFor([&] { return h.Metric("outbox_blocked_aggregates") == 1; }, 10s));
    } else {
      CHECK(WaitFor([&] { return RowStatus(db, 2) == "SENT"; }, 30s));
    }
  }
}

TEST_CASE("rows with an unknown status are left alone and counted while the others flow",
          "[rows]") {
  TestBroker cluster(1, "outbox.event.Order", 1);
  TestDatabase db("rows_unknown_status");
  db.InsertEvents(3, 2);  // ids 1..6, aggregates 1..3
  db.Exec("UPDATE t_outbox SET updated_at = '2020-01-01 00:00:00'");
  InsertRow(db, {.id = 10, .aggregate_id = 1, .status = "PAUSED"});
  InsertRow(db, {.id = 11, .aggregate_id = 2, .status = ""});
  InsertRow(db, {.id = 12, .aggregate_id = 9, .status = "SENT_BY_HAND"});
  // The column's collation decides: with the default (case-insensitive)
  // collation a lowercase 'new' is NEW, as it is for the services' queries.
  InsertRow(db, {.id = 13, .aggregate_id = 13, .status = "new"});
  db.Exec("UPDATE t_outbox SET updated_at = '2020-01-01 00:00:00' WHERE id >= 10");
  ServiceConfig s = TestService(db, cluster.bootstrap());
  RelayHarness h(s);
  h.relay->Start();
  REQUIRE(WaitFor([&] { return AllSent(db, {1, 2, 3, 4, 5, 6, 13}); }, 60s));
  CHECK(WaitFor([&] { return h.Metric("outbox_unknown_status_rows") == 3; }, 10s));
  CHECK(db.QueryInt("SELECT COUNT(*) FROM t_outbox WHERE id IN (10, 11, 12) AND retry_count = 0"
                    " AND updated_at = '2020-01-01 00:00:00'") == 3);
  CHECK(db.QueryInt("SELECT COUNT(*) FROM t_outbox WHERE id = 10 AND status = 'PAUSED'") == 1);
  CHECK(WaitFor([&] { return h.Metric("outbox_backlog_events") == 0; }, 10s));
}

TEST_CASE(
    "aggregate ids 0 and negative and the bigint limits are decimal keys on the Java partition",
    "[rows]") {
  TestBroker cluster(1, "outbox.event.Order", 7);
  TestDatabase db("rows_aggregate_ids");
  const std::vector<int64_t> aggregates = {
      0, -1, -42, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), 1};
  int64_t id = 1;
  for (int version = 0; version < 3; ++version)
    for (int64_t a : aggregates)
      InsertRow(db, {.id = id++, .aggregate_id = a, .event_type = "V" + std::to_string(version)});
  for (Ordering ordering : kBothOrderings) {
    db.Exec("UPDATE t_outbox SET status = 'NEW'");
    ServiceConfig s = TestService(db, cluster.bootstrap(), ordering);
    RelayHarness h(s);
    h.relay->Start();
    REQUIRE(WaitFor([&] { return db.CountByStatus()["SENT"] == id - 1; }, 60s));
  }
  auto msgs = ConsumeAll(cluster.bootstrap(), {"outbox.event.Order"});
  REQUIRE(msgs.size() == 2 * aggregates.size() * 3);
  std::map<std::string, std::vector<std::string>> versions;  // key -> event types in offset order
  std::sort(msgs.begin(), msgs.end(), [](const auto& a, const auto& b) {
    return std::tie(a.partition, a.offset) < std::tie(b.partition, b.offset);
  });
  for (const auto& m : msgs) {
    INFO("key " << m.key);
    int64_t row = std::stoll(m.headers.at("outbox_id"));
    int64_t aggregate = aggregates[(row - 1) % aggregates.size()];
    CHECK(m.key == std::to_string(aggregate));
    CHECK(m.partition == JavaPartition(m.key, 7));
    versions[m.key].push_back(m.headers.at("event_type"));
  }
  CHECK(versions.at("-9223372036854775808").size() == 6);
  CHECK(versions.at("9223372036854775807").size() == 6);
  // The first (per_aggregate) drain published each aggregate in id order.
  for (const auto& [key, v] : versions)
    CHECK(std::vector<std::string>(v.begin(), v.begin() + 3) ==
          std::vector<std::string>{"V0", "V1", "V2"});
}

TEST_CASE(
    "a very long event_type travels as a header and makes the row DEAD only in a too long topic",
    "[rows]") {
  TestBroker cluster(1);
  TestDatabase db("rows_long_event_type", kOptionalColumns);
  // The contract's columns are varchar(64)/varchar(32); a service may have widened them.
  db.Exec(
      "ALTER TABLE t_outbox MODIFY event_type varchar(300) NOT NULL,"
      " MODIFY aggregate_type varchar(300) NOT NULL");
  const std::string et247(247, 'E'), et248(248, 'E'), et255(255, 'E');
  InsertRow(db, {.id = 1, .aggregate_id = 1, .event_type = et247});  // e.<247> = 249: fits
  InsertRow(db, {.id = 2, .aggregate_id = 2, .event_type = et248});  // 250: too long
  InsertRow(db, {.id = 3, .aggregate_id = 3, .event_type = et255});
  InsertRow(db, {.id = 4, .aggregate_id = 4, .event_type = "OrderCreated"});
  // The topic column wins: a long event_type is only a header then.
  InsertRow(db, {.id = 5, .aggregate_id = 5, .event_type = et255, .topic = "e.custom"});
  InsertRow(db, {.id = 6,
                 .aggregate_type = std::string(280, 'A'),
                 .aggregate_id = 6,
                 .event_type = "OrderCreated",
                 .topic = "e.custom"});
  ServiceConfig s = TestService(db, cluster.bootstrap());
  s.topic = "e.{event_type}";
  RelayHarness h(s);
  h.relay->Start();
  REQUIRE(WaitFor([&] { return AllSent(db, {1, 4, 5, 6}); }, 60s));
  REQUIRE(WaitFor([&] { return db.CountByStatus()["DEAD"] == 2; }, 30s));
  CHECK(LastErrorIs(db, 2, "invalid topic for row 2: topic name is longer than 249 characters"));
  CHECK(LastErrorIs(db, 3, "invalid topic for row 3: topic name is longer than 249 characters"));
  auto by_id = ById(ConsumeAll(cluster.bootstrap(), {"e." + et247, "e.OrderCreated", "e.custom"}));
  REQUIRE(by_id.size() == 4);
  CHECK(by_id.at(1).topic == "e." + et247);
  CHECK(by_id.at(5).headers.at("event_type") == et255);
  CHECK(by_id.at(6).headers.at("aggregate_type") == std::string(280, 'A'));
}

TEST_CASE("a row deleted or changed by someone else while claimed is fenced and counted stale",
          "[rows]") {
  TestBroker cluster(1, "outbox.event.Order", 1);
  for (Ordering ordering : kBothOrderings) {
    TestDatabase db(OrderingDbName("rows_fenced", ordering), kOptionalColumns);
    db.InsertEvents(6, 1);  // ids 1..6, one per aggregate
    ServiceConfig s = TestService(db, cluster.bootstrap(), ordering);
    RelayHarness h(s);
    // Claim and publish on the test thread, then interfere before the settle.
    REQUIRE(h.steps().claim.ClaimOnce() != ClaimRound::kFailed);
    REQUIRE(db.CountByStatus()["SENDING"] == 6);
    db.Exec("DELETE FROM t_outbox WHERE id = 2");
    db.Exec("UPDATE t_outbox SET status = 'NEW', next_retry_at = NOW() WHERE id = 3");
    db.Exec("UPDATE t_outbox SET next_retry_at = NOW() + INTERVAL 1 HOUR WHERE id = 4");
    db.Exec("UPDATE t_outbox SET status = 'DEAD', last_error = 'by hand' WHERE id = 5");
    int settled = 0;
    for (int i = 0; i < 50 && settled == 0; ++i)
      settled = h.steps().settle.SettleOrGroup(200ms).count;
    REQUIRE(settled == 1);
    CHECK(RowStatus(db, 1) == "SENT");
    CHECK(RowStatus(db, 2) == "(deleted)");
    CHECK(RowStatus(db, 3) == "NEW");
    CHECK(RowStatus(db, 4) == "SENDING");
    CHECK(RowStatus(db, 5) == "DEAD");
    CHECK(LastErrorIs(db, 5, "by hand"));
    CHECK(RowStatus(db, 6) == "SENT");
    CHECK(h.Metric("outbox_stale_transitions_total") == 4);
    CHECK(h.Metric("outbox_events_published_total", "topic=\"outbox.event.Order\"") == 2);
    // The relay goes on: the row given back is delivered, new rows flow.
    InsertRow(db, {.id = 7, .aggregate_id = 7});
    h.relay->Start();
    CHECK(WaitFor([&] { return AllSent(db, {3, 7}); }, 30s));
    CHECK(RowStatus(db, 4) == "SENDING");  // another relay's lease, not expired
  }
}

TEST_CASE("a DEAD reason longer than a short last_error column is cut at a character boundary",
          "[rows]") {
  TestBroker cluster(1, "outbox.event.Order", 1);
  TestDatabase db("rows_short_last_error", ", last_error varchar(40), headers text");
  // "headers column of row 100: value of \"" is 37 characters: a cut at 40
  // bytes would split the second 'ä' (which a strict server refuses).
  InsertRow(db, {.id = 100, .aggregate_id = 100, .headers = "{\"\xc3\xa4\xc3\xa4\xc3\xa4\": 1}"});
  InsertRow(db, {.id = 11, .aggregate_id = 11});
  RelayHarness h(TestService(db, cluster.bootstrap()));
  h.relay->Start();
  REQUIRE(
      WaitFor([&] { return RowStatus(db, 100) == "DEAD" && RowStatus(db, 11) == "SENT"; }, 30s));
  CHECK(db.QueryInt("SELECT CHAR_LENGTH(last_error) FROM t_outbox WHERE id = 100") == 40);
  CHECK(LastErrorIs(db, 100, "headers column of row 100: value of \"\xc3\xa4\xc3\xa4\xc3\xa4"));
}

TEST_CASE("a retry_count at its column's limit makes the row DEAD without failing the batch",
          "[rows]") {
  TestBroker cluster(1, "outbox.event.Order", 1);
  // INT (README "The outbox table") and a narrower SMALLINT UNSIGNED a schema might use: "+ 1"
  // at the limit used to fail the whole settle (error 1264) forever, leaving
  // every row of the batch in SENDING.
  for (const auto& [type, limit] : std::vector<std::pair<std::string, int64_t>>{
           {"int", 2147483647}, {"smallint unsigned", 65535}}) {
    INFO("retry_count " << type);
    TestDatabase db("rows_retry_count_limit", kOptionalColumns);
    db.Exec("ALTER TABLE t_outbox MODIFY retry_count " + type + " NOT NULL DEFAULT 0");
    db.InsertEvents(5, 1);  // ids 1..5
    InsertRow(db, {.id = 20, .aggregate_id = 20, .topic = "bad topic!"});
    db.Exec("UPDATE t_outbox SET retry_count = " + std::to_string(limit) + " WHERE id IN (3, 20)");
    RelayHarness h(TestService(db, cluster.bootstrap()));
    h.relay->Start();
    REQUIRE(WaitFor(
        [&] {
          return AllSent(db, {1, 2, 3, 4, 5}) && RowStatus(db, 20) == "DEAD";
        },
        30s));
    CHECK(db.QueryInt("SELECT retry_count FROM t_outbox WHERE id = 20") == limit);
    CHECK(LastErrorIs(db, 20, "invalid topic for row 20: %"));
    CHECK(h.Metric("outbox_events_dead_total") == 1);
  }
}

TEST_CASE("non-ASCII payloads and headers travel byte for byte", "[rows]") {
  TestBroker cluster(1, "outbox.event.Order", 1);
  TestDatabase db("rows_utf8", kOptionalColumns);
  // Chinese, an emoji (4 bytes: not in utf8mb3) and a Latin-1 letter, written
  // as hex so that no client character set conversion is involved.
  const std::string text = "\xe4\xb8\xad\xe6\x96\x87 \xf0\x9f\x98\x80 \xc3\xa4";
  auto hex = [](const std::string& s) {
    static const char* kHex = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : s) out += std::string{kHex[c >> 4], kHex[c & 15]};
    return out;
  };
  const std::string payload = "{\"name\": \"" + text + "\"}";
  const std::string headers = "{\"note\": \"" + text + "\"}";
  db.Exec(
      "INSERT INTO t_outbox (id, aggregate_type, aggregate_id, event_type, event_key, payload,"
      " status, next_retry_at, created_at, updated_at, headers) VALUES (1, 'Order', 1,"
      " CONVERT(X'" +
      hex("Bestellt" + text) + "' USING utf8mb4), CONVERT(X'" + hex("key-" + text) +
      "' USING utf8mb4), CONVERT(X'" + hex(payload) +
      "' USING utf8mb4), 'NEW', NOW(), NOW(), NOW(), CONVERT(X'" + hex(headers) +
      "' USING utf8mb4))");
  RelayHarness h(TestService(db, cluster.bootstrap()));
  h.relay->Start();
  REQUIRE(WaitFor([&] { return RowStatus(db, 1) == "SENT"; }, 30s));
  auto msgs = ConsumeAll(cluster.bootstrap(), {"outbox.event.Order"});
  REQUIRE(msgs.size() == 1);
  CHECK(hex(msgs[0].value) == hex(payload));
  CHECK(hex(msgs[0].headers.at("event_type")) == hex("Bestellt" + text));
  CHECK(hex(msgs[0].headers.at("event_key")) == hex("key-" + text));
  CHECK(hex(msgs[0].headers.at("note")) == hex(text));
}
