#include "schema/schema_publisher.h"

#include <catch2/catch.hpp>
#include <mutex>
#include <optional>

#include "fakes/fake_clock.h"
#include "fakes/fake_publisher.h"
#include "fakes/fake_registry.h"
#include "schema/wire_format.h"
#include "support/wait.h"

using namespace outbox;
using namespace std::chrono_literals;
using outbox::testing::FakeClock;
using outbox::testing::FakePublisher;
using outbox::testing::FakeSchemaRegistry;
using outbox::testing::WaitFor;

namespace {

constexpr const char* kOrder = R"({"type": "record", "name": "OrderPaid", "namespace": "com.acme",
  "fields": [{"name": "id", "type": "long"}, {"name": "status", "type": "string"}]})";

Message OrderMessage(const std::string& payload, const std::string& event_type = "OrderPaid") {
  Message m;
  m.topic = "outbox.event.Order";
  m.key = "42";
  m.value = payload;
  m.headers = {{"outbox_id", "7"}, {"event_type", event_type}, {"aggregate_type", "Order"}};
  return m;
}

// An outcome set on the publisher's thread and read on the test's.
class Outcome {
 public:
  Publisher::SentFn Fn() {
    return [this](PublishOutcome o) {
      std::lock_guard<std::mutex> lock(mu_);
      outcome_ = o;
    };
  }
  bool Has() {
    std::lock_guard<std::mutex> lock(mu_);
    return outcome_.has_value();
  }
  PublishOutcome Get() {
    std::lock_guard<std::mutex> lock(mu_);
    REQUIRE(outcome_);
    return *outcome_;
  }

 private:
  std::mutex mu_;
  std::optional<PublishOutcome> outcome_;
};

// Counts what the publisher reports.
struct Reports : SchemaPublisherObserver {
  std::vector<std::string> failures;
  std::vector<std::string> changes;
  void OnConversionFailure(const std::string& reason, const std::string&) override {
    failures.push_back(reason);
  }
  void OnRegistryChange(const std::string& why) override { changes.push_back(why); }
};

struct Bed {
  explicit Bed(ValueConfig value = AvroValue(), std::map<std::string, ValueConfig> values = {}) {
    cache = std::make_shared<SchemaCache>(registry, clock, SchemaCache::Options());
    SchemaPublisher::Options o;
    o.inner = inner;
    o.encoder = std::make_shared<ValueEncoder>("shop", value, values, cache);
    o.clock = clock;
    o.observer = reports;
    publisher = std::make_unique<SchemaPublisher>(o);
  }
  static ValueConfig AvroValue() {
    ValueConfig v;
    v.format = ValueFormat::kAvro;
    return v;
  }
  // Sends `m` and returns its outcome once it has one (a first request to
  // the registry is made on the publisher's own thread).
  PublishOutcome SendNow(const Message& m) {
    Outcome out;
    publisher->Send(m, out.Fn());
    REQUIRE(WaitFor([&] { return out.Has(); }, 5s, 1ms));
    return out.Get();
  }

  std::shared_ptr<FakeSchemaRegistry> registry = std::make_shared<FakeSchemaRegistry>();
  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>();
  std::shared_ptr<FakePublisher> inner = std::make_shared<FakePublisher>();
  std::shared_ptr<SchemaCache> cache;
  std::shared_ptr<Reports> reports = std::make_shared<Reports>();
  std::unique_ptr<SchemaPublisher> publisher;
};

}  // namespace

TEST_CASE("an avro value is the wire header of the subject's latest schema then the Avro body",
          "[schema]") {
  Bed bed;
  const int id = bed.registry->Register("outbox.event.Order-value", kOrder);
  CHECK(bed.SendNow(OrderMessage(R"({"id": 1, "status": "PAID"})")).result ==
        PublishResult::kAcked);
  REQUIRE(bed.inner->acked().size() == 1);
  int32_t sent_id = 0;
  std::string_view body;
  REQUIRE(ParseWireHeader(bed.inner->acked()[0].value, &sent_id, &body));
  CHECK(sent_id == id);
  CHECK(body == std::string("\x02\x08PAID", 6));  // zigzag 1, then "PAID" with its length 4
}

TEST_CASE("subjects follow the strategy configured per service and per event type", "[schema]") {
  ValueConfig record = Bed::AvroValue();
  record.strategy = SubjectStrategy::kTopicRecordName;
  record.record = "com.acme.{event_type}";
  ValueConfig templated = Bed::AvroValue();
  templated.strategy = SubjectStrategy::kTemplate;
  templated.subject = "{service}.{aggregate_type}-{topic}";
  ValueConfig bytes;
  ValueEncoder encoder("shop", record, {{"OrderShipped", templated}, {"Ping", bytes}}, nullptr);
  CHECK(encoder.Subject("t", "Order", "OrderPaid") == "t-com.acme.OrderPaid");
  CHECK(encoder.Subject("t", "Order", "OrderShipped") == "shop.Order-t");
  CHECK(encoder.Subject("t", "Order", "Ping").empty());
}

TEST_CASE("a json_schema value is the wire header then the JSON payload as it is", "[schema]") {
  ValueConfig v;
  v.format = ValueFormat::kJsonSchema;
  Bed bed(v);
  const int id =
      bed.registry->Register("outbox.event.Order-value", R"({"type": "object"})", "JSON");
  CHECK(bed.SendNow(OrderMessage(R"({"id": 1})")).result == PublishResult::kAcked);
  CHECK(bed.inner->acked().at(0).value == WithWireHeader(id, R"({"id": 1})"));
  const PublishOutcome bad = bed.SendNow(OrderMessage("{not json"));
  CHECK(bad.result == PublishResult::kPermanent);
  CHECK(bad.reason == FailureReason::kSchema);
  CHECK(bed.reports->failures == std::vector<std::string>{"invalid_json"});
}

TEST_CASE("a payload that does not fit or an unknown subject fails the row for good naming why",
          "[schema]") {
  Bed bed;
  bed.registry->Register("outbox.event.Order-value", kOrder);
  const PublishOutcome misfit = bed.SendNow(OrderMessage(R"({"id": "one", "status": "PAID"})"));
  CHECK(misfit.result == PublishResult::kPermanent);
  CHECK(misfit.reason == FailureReason::kSchema);
  CHECK(misfit.error == "field id: expected a whole number, got a string (schema id 1)");
  Message elsewhere = OrderMessage(R"({"id": 1, "status": "PAID"})");
  elsewhere.topic = "outbox.event.Invoice";
  const PublishOutcome unknown = bed.SendNow(elsewhere);
  CHECK(unknown.result == PublishResult::kPermanent);
  CHECK(unknown.error == "subject outbox.event.Invoice-value not found");
  CHECK(bed.reports->failures == std::vector<std::string>{"wrong_type", "unknown_subject"});
  CHECK(bed.inner->sends() == 0);
}

TEST_CASE("a payload that fits only a version registered since the last read is sent with it",
          "[schema]") {
  Bed bed;
  bed.registry->Register("outbox.event.Order-value", kOrder);
  CHECK(bed.SendNow(OrderMessage(R"({"id": 1, "status": "PAID"})")).result ==
        PublishResult::kAcked);
  // Version 2 makes status optional: a payload without it fits only that.
  const int v2 = bed.registry->Register("outbox.event.Order-value", R"({"type": "record",
    "name": "OrderPaid", "namespace": "com.acme", "fields": [{"name": "id", "type": "long"},
    {"name": "status", "type": ["null", "string"], "default": null}]})");
  bed.clock->Advance(1s);  // the refresh's own pace
  CHECK(bed.SendNow(OrderMessage(R"({"id": 2})")).result == PublishResult::kAcked);
  int32_t id = 0;
  std::string_view body;
  REQUIRE(ParseWireHeader(bed.inner->acked().at(1).value, &id, &body));
  CHECK(id == v2);
}

TEST_CASE("while the registry is down a message waits and is sent once it answers", "[schema]") {
  Bed bed;
  bed.registry->Register("outbox.event.Order-value", kOrder);
  bed.registry->set_failure(Status::Unavailable("schema registry: connect: Connection refused"));
  Outcome out;
  Message m = OrderMessage(R"({"id": 1, "status": "PAID"})");
  m.queued_until = bed.clock->Now() + 15s;
  bed.publisher->Send(m, out.Fn());
  REQUIRE(WaitFor(
      [&] { return !bed.publisher->RegistryProblem().empty() && bed.publisher->Waiting() == 1; },
      5s, 1ms));
  CHECK_FALSE(out.Has());
  CHECK(bed.publisher->RegistryProblem() == "schema registry: connect: Connection refused");
  bed.registry->set_failure(Status::Ok());
  // Past the cache's failure backoff (5 s) and the next retry after it.
  for (int i = 0; i < 10 && !out.Has(); ++i) {
    bed.clock->Advance(1s);
    (void)WaitFor([&] { return out.Has(); }, 200ms, 1ms);
  }
  CHECK(out.Get().result == PublishResult::kAcked);
  CHECK(bed.publisher->RegistryProblem().empty());
  CHECK(bed.reports->changes ==
        std::vector<std::string>{"schema registry: connect: Connection refused", ""});
}

TEST_CASE(
    "the registry stays reported down through a retry pass in which one message is answered and "
    "another waits again",
    "[schema]") {
  Bed bed;
  bed.registry->Register("outbox.event.Order-value", kOrder);
  const Status down = Status::Unavailable("schema registry: connect: Connection refused");
  bed.registry->set_failure(down);
  Outcome order, invoice;
  Message first = OrderMessage(R"({"id": 1, "status": "PAID"})");
  first.queued_until = bed.clock->Now() + 30s;
  bed.publisher->Send(first, order.Fn());
  REQUIRE(WaitFor([&] { return bed.publisher->Waiting() == 1; }, 5s, 1ms));
  Message second = OrderMessage(R"({"id": 2, "status": "PAID"})");
  second.topic = "outbox.event.Invoice";
  second.queued_until = bed.clock->Now() + 30s;
  bed.publisher->Send(second, invoice.Fn());
  REQUIRE(WaitFor([&] { return bed.publisher->Waiting() == 2 && bed.registry->requests() == 2; },
                  5s, 1ms));
  // In the next pass the registry answers the first request (the order's
  // subject) and not the second (the invoice's).
  int answered = 0;
  bed.registry->set_before_answer(
      [&] { bed.registry->set_failure(answered++ == 0 ? Status::Ok() : down); });
  for (int i = 0; i < 10 && !order.Has(); ++i) {
    bed.clock->Advance(1s);
    (void)WaitFor([&] { return order.Has(); }, 200ms, 1ms);
  }
  CHECK(order.Get().result == PublishResult::kAcked);
  REQUIRE(WaitFor([&] { return bed.publisher->Waiting() == 1; }, 5s, 1ms));
  CHECK_FALSE(invoice.Has());
  CHECK(bed.publisher->RegistryProblem() == down.message());
  // One change: down. Not down, up, down again in the same pass.
  CHECK(bed.reports->changes == std::vector<std::string>{down.message()});
  bed.registry->set_before_answer(nullptr);
}

TEST_CASE("a message still waiting for the registry at its budget is released unattempted",
          "[schema]") {
  Bed bed;
  bed.registry->set_failure(Status::Unavailable("schema registry: answer timed out"));
  Outcome out;
  Message m = OrderMessage(R"({"id": 1, "status": "PAID"})");
  m.queued_until = bed.clock->Now() + 3s;
  bed.publisher->Send(m, out.Fn());
  for (int i = 0; i < 6 && !out.Has(); ++i) {
    bed.clock->Advance(1s);
    (void)WaitFor([&] { return out.Has(); }, 200ms, 1ms);
  }
  const PublishOutcome o = out.Get();
  CHECK(o.result == PublishResult::kNotAttempted);
  CHECK(o.reason == FailureReason::kSchemaRegistry);
  CHECK(o.error == "not sent: schema registry: answer timed out");
  CHECK(bed.inner->sends() == 0);
}

TEST_CASE("a registry answer that comes after the claim's budget is not used", "[schema]") {
  Bed bed;
  bed.registry->Register("outbox.event.Order-value", kOrder);
  // The answer takes 4 s: past the message's budget of 3 s.
  bed.registry->set_before_answer([&] { bed.clock->Advance(4s); });
  Outcome out;
  Message m = OrderMessage(R"({"id": 1, "status": "PAID"})");
  m.queued_until = bed.clock->Now() + 3s;
  bed.publisher->Send(m, out.Fn());
  REQUIRE(WaitFor([&] { return out.Has(); }, 5s, 1ms));
  const PublishOutcome o = out.Get();
  CHECK(o.result == PublishResult::kNotAttempted);
  CHECK(o.reason == FailureReason::kSchemaRegistry);
  CHECK(o.error == "not sent: the schema registry answered after the claim's publish budget");
  CHECK(bed.inner->sends() == 0);
  CHECK(bed.registry->requests() == 1);
}

TEST_CASE("bytes values pass through untouched without a registry", "[schema]") {
  Bed bed{ValueConfig()};
  CHECK(bed.SendNow(OrderMessage("not even json")).result == PublishResult::kAcked);
  CHECK(bed.inner->acked().at(0).value == "not even json");
  CHECK(bed.registry->requests() == 0);
}

TEST_CASE("a payload stored as Avro gets the header alone and garbage goes DEAD as not_avro",
          "[schema]") {
  ValueConfig v = Bed::AvroValue();
  v.payload_encoding = PayloadEncoding::kAvro;
  Bed bed(v);
  const int id = bed.registry->Register("outbox.event.Order-value", kOrder);
  const std::string avro("\x02\x08PAID", 6);  // {"id": 1, "status": "PAID"}
  CHECK(bed.SendNow(OrderMessage(avro)).result == PublishResult::kAcked);
  CHECK(bed.inner->acked().at(0).value == WithWireHeader(id, avro));
  const PublishOutcome garbage = bed.SendNow(OrderMessage(std::string("\x02\x08PA", 4)));
  CHECK(garbage.result == PublishResult::kPermanent);
  CHECK(bed.reports->failures == std::vector<std::string>{"not_avro"});
}
