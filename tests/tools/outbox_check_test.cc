#include "outbox_check.h"

#include <catch2/catch.hpp>

using namespace outbox::check;

namespace {

Row MakeRow(int64_t id, int64_t aggregate, const std::string& status = "SENT") {
  Row r;
  r.id = id;
  r.aggregate_type = "Order";
  r.aggregate_id = aggregate;
  r.event_type = "OrderPaid";
  r.event_key = "OrderPaid-" + std::to_string(aggregate) + "-" + std::to_string(id);
  r.payload = "{\"n\":" + std::to_string(id) + "}";
  r.status = status;
  r.created_at_unix = 1714564800;  // 2024-05-01T12:00:00Z
  return r;
}

// The message the relay builds for `row` (README "How it works"), at `offset` of `partition`.
Message MessageFor(const Row& row, int64_t offset, int32_t partition = 0) {
  Message m;
  m.topic = "outbox.event." + row.aggregate_type;
  m.partition = partition;
  m.offset = offset;
  m.key = std::to_string(row.aggregate_id);
  m.value = row.payload;
  m.headers = {{"outbox_id", std::to_string(row.id)},
               {"event_key", row.event_key},
               {"event_type", row.event_type},
               {"aggregate_type", row.aggregate_type},
               {"created_at", "2024-05-01T12:00:00Z"}};
  return m;
}

}  // namespace

TEST_CASE("a table whose every row is SENT and in Kafka once and in order is OK", "[check]") {
  std::vector<Row> rows = {MakeRow(1, 7), MakeRow(2, 8), MakeRow(3, 7)};
  std::vector<Message> msgs = {MessageFor(rows[0], 0), MessageFor(rows[1], 1),
                               MessageFor(rows[2], 2)};
  Report r = Analyze(rows, msgs, Options{});
  CHECK(r.ok());
  CHECK(r.rows_by_status["SENT"] == 3);
  CHECK(r.distinct_published == 3);
  CHECK(r.lost == 0);
  CHECK(r.duplicate_copies == 0);
  CHECK(ToJson(r)["verdict"] == "OK");
  CHECK(Summary(r).find("verdict: OK") != std::string::npos);
}

TEST_CASE("a SENT row with no message is lost and fails the verdict", "[check]") {
  std::vector<Row> rows = {MakeRow(1, 7), MakeRow(2, 8)};
  Report r = Analyze(rows, {MessageFor(rows[0], 0)}, Options{});
  CHECK(r.lost == 1);
  CHECK(r.samples["lost"] == std::vector<std::string>{"2"});
  CHECK_FALSE(r.ok());
  Options relaxed;
  relaxed.expect_all_sent = false;
  CHECK_FALSE(Analyze(rows, {MessageFor(rows[0], 0)}, relaxed).ok());
}

TEST_CASE(
    "messages deleted by retention below a partition's low watermark are named and fail the "
    "verdict",
    "[check]") {
  // librdkafka's mock cluster keeps a few MB per partition: a larger run
  // loses its oldest messages to retention, and "lost" alone would blame the
  // relay for them.
  std::vector<Row> rows = {MakeRow(1, 7), MakeRow(2, 8)};
  Options o;
  o.truncated_partitions["outbox.event.Order/0"] = 1;
  Report r = Analyze(rows, {MessageFor(rows[1], 1)}, o);
  CHECK(r.deleted_by_retention == 1);
  CHECK(ToJson(r)["deleted_by_retention"] == 1);
  CHECK_FALSE(r.ok());
  CHECK(Summary(r).find("deleted by the broker's retention") != std::string::npos);
  CHECK(Summary(r).find("outbox.event.Order/0 from offset 1") != std::string::npos);
  // Without truncation the same messages are a plain loss.
  CHECK(Analyze(rows, {MessageFor(rows[1], 1)}, Options{}).deleted_by_retention == 0);
}

TEST_CASE("unsent rows fail by default and are only reported with allow-unsent", "[check]") {
  std::vector<Row> rows = {MakeRow(1, 7), MakeRow(2, 8, "NEW"), MakeRow(3, 9, "DEAD"),
                           MakeRow(4, 10, "SENDING")};
  std::vector<Message> msgs = {MessageFor(rows[0], 0), MessageFor(rows[3], 1)};
  Report strict = Analyze(rows, msgs, Options{});
  CHECK_FALSE(strict.ok());
  CHECK(strict.never_published == 2);
  CHECK(strict.published_unsent == 1);  // SENDING but acked: the at-least-once window
  CHECK(strict.sending_rows == 1);
  Options relaxed;
  relaxed.expect_all_sent = false;
  CHECK(Analyze(rows, msgs, relaxed).ok());
  relaxed.forbid_sending = true;
  Report no_sending = Analyze(rows, msgs, relaxed);
  CHECK_FALSE(no_sending.ok());
  CHECK(no_sending.failures == std::vector<std::string>{"1 row(s) left in SENDING"});
}

TEST_CASE("extra copies are counted as duplicates and bounded by max_duplicates", "[check]") {
  std::vector<Row> rows = {MakeRow(1, 7), MakeRow(2, 7)};
  std::vector<Message> msgs = {MessageFor(rows[0], 0), MessageFor(rows[1], 1),
                               MessageFor(rows[0], 2), MessageFor(rows[1], 3),
                               MessageFor(rows[1], 4)};
  Options o;
  Report r = Analyze(rows, msgs, o);
  CHECK(r.duplicate_copies == 3);
  CHECK(r.duplicated_events == 2);
  CHECK(r.order_violations == 0);  // first occurrences are 1 then 2
  CHECK(r.ok());
  o.max_duplicates = 2;
  CHECK_FALSE(Analyze(rows, msgs, o).ok());
  o.max_duplicates = 3;
  CHECK(Analyze(rows, msgs, o).ok());
}

TEST_CASE("first occurrences out of id order within an aggregate are order violations", "[check]") {
  std::vector<Row> rows = {MakeRow(1, 7), MakeRow(2, 8), MakeRow(3, 7), MakeRow(4, 7)};
  // Aggregate 7: 3 is published before 1; other aggregates interleave freely.
  std::vector<Message> msgs = {MessageFor(rows[2], 0), MessageFor(rows[1], 1),
                               MessageFor(rows[0], 2), MessageFor(rows[3], 3)};
  Report r = Analyze(rows, msgs, Options{});
  CHECK(r.order_violations == 1);
  CHECK_FALSE(r.ok());
  Options none;
  none.check_order = false;
  CHECK(Analyze(rows, msgs, none).ok());
}

TEST_CASE("a duplicate re-sent after later events is not an order violation", "[check]") {
  std::vector<Row> rows = {MakeRow(1, 7), MakeRow(2, 7)};
  std::vector<Message> msgs = {MessageFor(rows[0], 0), MessageFor(rows[1], 1),
                               MessageFor(rows[0], 2)};
  Report r = Analyze(rows, msgs, Options{});
  CHECK(r.order_violations == 0);
  CHECK(r.duplicate_copies == 1);
}

TEST_CASE("an aggregate on two partitions of one topic is split", "[check]") {
  std::vector<Row> rows = {MakeRow(1, 7), MakeRow(2, 7)};
  std::vector<Message> msgs = {MessageFor(rows[0], 0, 0), MessageFor(rows[1], 0, 1)};
  Report r = Analyze(rows, msgs, Options{});
  CHECK(r.split_aggregates == 1);
  CHECK_FALSE(r.ok());
}

TEST_CASE("an event published while an older event of its aggregate never was is overtaken",
          "[check]") {
  std::vector<Row> rows = {MakeRow(1, 7, "DEAD"), MakeRow(2, 7), MakeRow(3, 8, "NEW"),
                           MakeRow(4, 8, "NEW")};
  std::vector<Message> msgs = {MessageFor(rows[1], 0)};
  Options o;
  o.expect_all_sent = false;
  Report block = Analyze(rows, msgs, o);
  CHECK(block.overtaken == 1);
  CHECK_FALSE(block.ok());
  o.dead_policy_skip = true;
  Report skip = Analyze(rows, msgs, o);
  CHECK(skip.overtaken == 0);
  CHECK(skip.ok());
}

TEST_CASE(
    "messages whose key or headers or topic or value or partition differ from the row are "
    "mismatched",
    "[check]") {
  Row row = MakeRow(1, 7);
  auto one = [&](Message m, const std::string& field, Options o = Options{}) {
    Report r = Analyze({row}, {m}, o);
    CHECK(r.mismatched_messages == 1);
    CHECK(r.mismatches_by_field[field] == 1);
    CHECK_FALSE(r.ok());
  };
  Message m = MessageFor(row, 0);
  m.key = "8";
  one(m, "key");
  m = MessageFor(row, 0);
  m.key.reset();
  one(m, "key");
  m = MessageFor(row, 0);
  m.topic = "outbox.event.Other";
  one(m, "topic");
  m = MessageFor(row, 0);
  m.value = "{}";
  one(m, "value");
  m = MessageFor(row, 0);
  m.headers[1].second = "wrong";
  one(m, "header:event_key");
  m = MessageFor(row, 0);
  m.headers.pop_back();
  one(m, "header:created_at");
  Options parts;
  parts.expect.partition_counts["outbox.event.Order"] = 4;
  m = MessageFor(row, 0, (JavaPartition("7", 4) + 1) % 4);
  one(m, "partition", parts);
  m = MessageFor(row, 0, JavaPartition("7", 4));
  CHECK(Analyze({row}, {m}, parts).ok());
}

TEST_CASE("the expected topic is the row column first and then the override and then the template",
          "[check]") {
  Row row = MakeRow(1, 7);
  Options o;
  o.expect.service = "billing";
  o.expect.topic_template = "{service}.{aggregate_type}.{event_type}";
  Message m = MessageFor(row, 0);
  m.topic = "billing.Order.OrderPaid";
  CHECK(Analyze({row}, {m}, o).ok());
  o.expect.topic_overrides["OrderPaid"] = "paid";
  CHECK_FALSE(Analyze({row}, {m}, o).ok());
  m.topic = "paid";
  CHECK(Analyze({row}, {m}, o).ok());
  row.topic = "custom";
  m.topic = "custom";
  CHECK(Analyze({row}, {m}, o).ok());
}

TEST_CASE("the row's headers column must appear among the message headers", "[check]") {
  Row row = MakeRow(1, 7);
  row.headers = R"({"trace":"abc"})";
  Message m = MessageFor(row, 0);
  CHECK(Analyze({row}, {m}, Options{}).mismatches_by_field["header:trace"] == 1);
  m.headers.emplace_back("trace", "abc");
  CHECK(Analyze({row}, {m}, Options{}).ok());
}

TEST_CASE("messages without an outbox_id or with an unknown one are unmatched", "[check]") {
  Row row = MakeRow(1, 7);
  Message stray = MessageFor(row, 1);
  stray.headers[0].second = "999";
  Message bare = MessageFor(row, 2);
  bare.headers.erase(bare.headers.begin());
  Report r = Analyze({row}, {MessageFor(row, 0), stray, bare}, Options{});
  CHECK(r.unmatched_messages == 2);
  CHECK_FALSE(r.ok());
}

TEST_CASE("expect_rows fails a table of another size", "[check]") {
  std::vector<Row> rows = {MakeRow(1, 7)};
  Options o;
  o.expect_rows = 2;
  Report r = Analyze(rows, {MessageFor(rows[0], 0)}, o);
  CHECK_FALSE(r.ok());
  o.expect_rows = 1;
  CHECK(Analyze(rows, {MessageFor(rows[0], 0)}, o).ok());
}

TEST_CASE("the murmur2 partition agrees with Kafka's Java client", "[check]") {
  // Kafka's UtilsTest.testMurmur2 values, through toPositive(h) % 1000:
  // "21" -> -973932308, "foobar" -> -790332482, "a-little-bit-long-string" ->
  // -985981536, "a-little-bit-longer-string" -> -1486304829.
  CHECK(JavaPartition("21", 1000) == (-973932308 & 0x7fffffff) % 1000);
  CHECK(JavaPartition("foobar", 1000) == (-790332482 & 0x7fffffff) % 1000);
  CHECK(JavaPartition("a-little-bit-long-string", 1000) == (-985981536 & 0x7fffffff) % 1000);
  CHECK(JavaPartition("a-little-bit-longer-string", 1000) == (-1486304829 & 0x7fffffff) % 1000);
  CHECK(Rfc3339Utc(1714564800) == "2024-05-01T12:00:00Z");
}
