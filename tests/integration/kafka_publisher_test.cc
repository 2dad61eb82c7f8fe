// KafkaPublisher against librdkafka's mock cluster: acknowledgements, a full
// queue, fatal producer errors; and the relay's chains and lease budget over
// the real producer.
#include "kafka/kafka_publisher.h"

#include <catch2/catch.hpp>
#include <future>

#include "kafka/kafka_config.h"
#include "relay/chain_publisher.h"
#include "support/kafka_reader.h"
#include "support/test_broker.h"
#include "support/wait.h"

namespace outbox {
namespace {

using namespace std::chrono_literals;
using testing::TestBroker;

std::shared_ptr<KafkaPublisher> Connect(TestBroker& cluster, int64_t lease_ms = 30000) {
  KafkaConfig k;
  k.bootstrap_servers = cluster.bootstrap();
  std::vector<std::string> warnings;
  std::string err;
  auto p = KafkaPublisher::Create(ProducerProperties(k, "test", lease_ms, &warnings), &err);
  REQUIRE(p);
  return p;
}

// Sends each message at once (no chains) and waits for every outcome.
std::vector<PublishOutcome> SendAllAndWait(Publisher& p, const std::vector<Message>& messages) {
  std::vector<std::promise<PublishOutcome>> done(messages.size());
  for (size_t i = 0; i < messages.size(); ++i)
    p.Send(messages[i], [&done, i](PublishOutcome o) { done[i].set_value(std::move(o)); });
  std::vector<PublishOutcome> out;
  for (auto& d : done) {
    auto f = d.get_future();
    REQUIRE(f.wait_for(30s) == std::future_status::ready);
    out.push_back(f.get());
  }
  return out;
}

std::vector<Message> Chain(int n) {
  std::vector<Message> m;
  for (int i = 0; i < n; ++i) m.push_back({"orders", "42", "event " + std::to_string(i), {}});
  return m;
}

std::vector<OutboxRow> Rows(int n) {
  std::vector<OutboxRow> rows;
  for (int i = 0; i < n; ++i) {
    OutboxRow r;
    r.id = i + 1;
    r.aggregate = {"order", 42};
    r.event_type = "E";
    r.event_key = "E:42:" + std::to_string(i);
    r.payload = "event " + std::to_string(i);
    rows.push_back(r);
  }
  return rows;
}

// The relay's ChainPublisher over the real producer, as the relay runs it.
std::vector<PublishOutcome> PublishChainAndWait(PublisherPtr p, const std::vector<OutboxRow>& rows,
                                                std::chrono::milliseconds budget) {
  ServiceConfig service;
  service.name = "orders";
  Router router(service);
  auto clock = DefaultClock();
  ChainPublisher chains(std::move(p), &router, Ordering::kPerAggregate, clock);
  std::promise<std::vector<PublishOutcome>> done;
  auto result = done.get_future();
  chains.Publish(rows, clock->Now() + budget,
                 [&done](std::vector<PublishOutcome> o) { done.set_value(std::move(o)); });
  REQUIRE(result.wait_for(30s) == std::future_status::ready);
  return result.get();
}

TEST_CASE("an aggregate's chain is published message by message within its lease budget",
          "[kafka]") {
  TestBroker cluster(1);
  auto p = Connect(cluster);
  auto out = PublishChainAndWait(p, Rows(3), 10s);
  REQUIRE(out.size() == 3);
  for (const auto& o : out) CHECK(o.result == PublishResult::kAcked);
}

TEST_CASE("a chain that runs out of its lease budget releases the rest unattempted", "[kafka]") {
  TestBroker cluster(1);
  auto p = Connect(cluster);
  // A budget of 0: the first message of each chain still goes (it was started
  // in time), the ones behind it wait for the next claim.
  auto out = PublishChainAndWait(p, Rows(3), 0ms);
  REQUIRE(out.size() == 3);
  CHECK(out[0].result == PublishResult::kAcked);
  for (int i : {1, 2}) {
    CHECK(out[i].result == PublishResult::kNotAttempted);
    CHECK(out[i].error.find("lease budget") != std::string::npos);
  }
}

TEST_CASE("a full producer queue releases messages unattempted instead of failing them",
          "[kafka]") {
  TestBroker cluster(1);
  cluster.CreateTopic("orders", 1);
  KafkaConfig k;
  k.bootstrap_servers = cluster.bootstrap();
  k.properties = {{"queue.buffering.max.messages", "1"}};
  std::vector<std::string> warnings;
  std::string err;
  auto p = KafkaPublisher::Create(ProducerProperties(k, "test", 30000, &warnings), &err);
  REQUIRE(p);
  // 20 messages produced at once into a queue of 1.
  std::vector<Message> messages;
  for (size_t i = 0; i < 20; ++i) messages.push_back({"orders", std::to_string(i), "e", {}});
  auto out = SendAllAndWait(*p, messages);
  int acked = 0, released = 0;
  for (const auto& o : out) {
    INFO(o.error);
    // It used to be kRetryable: a failed attempt, and DEAD after max_attempts.
    CHECK((o.result == PublishResult::kAcked || o.result == PublishResult::kNotAttempted));
    if (o.result == PublishResult::kAcked) ++acked;
    if (o.result == PublishResult::kNotAttempted) {
      ++released;
      CHECK(o.reason == FailureReason::kQueueFull);
    }
  }
  CHECK(acked >= 1);
  CHECK(released >= 1);
}

TEST_CASE("a producer that hit a fatal error is replaced and publishing resumes", "[kafka]") {
  TestBroker cluster(1);
  cluster.CreateTopic("orders", 1);
  auto p = Connect(cluster);
  REQUIRE(SendAllAndWait(*p, Chain(1))[0].result == PublishResult::kAcked);
  CHECK_FALSE(p->Fatal());
  p->TriggerFatalErrorForTesting("test: producer fenced");
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (p->ProducersReplacedForTesting() == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(10ms);
  REQUIRE(p->ProducersReplacedForTesting() == 1);
  CHECK_FALSE(p->Fatal());
  // The fresh producer publishes.
  auto out = SendAllAndWait(*p, Chain(3));
  for (const auto& o : out) CHECK(o.result == PublishResult::kAcked);
}

TEST_CASE("a fatal error fails queued messages as retryable producer_fatal", "[kafka]") {
  CHECK(ClassifyKafkaError(RD_KAFKA_RESP_ERR__FATAL, true).result == PublishResult::kRetryable);
  CHECK(ClassifyKafkaError(RD_KAFKA_RESP_ERR__PURGE_INFLIGHT, true).reason ==
        FailureReason::kProducerFatal);
  CHECK(ClassifyKafkaError(RD_KAFKA_RESP_ERR__PURGE_QUEUE, true).reason ==
        FailureReason::kProducerFatal);
}

}  // namespace
}  // namespace outbox

namespace outbox {
namespace {

// Sends `n` messages to `topic` with `queued_until`; each outcome with the
// seconds from its Send to its delivery report.
struct Timed {
  PublishOutcome outcome;
  double seconds = -1;
};
std::vector<std::future<Timed>> SendTimed(Publisher& p, const std::string& topic, int n,
                                          Clock::TimePoint queued_until) {
  std::vector<std::future<Timed>> out;
  for (int i = 0; i < n; ++i) {
    auto done = std::make_shared<std::promise<Timed>>();
    out.push_back(done->get_future());
    Message m{topic, std::to_string(i), "e" + std::to_string(i), {}};
    m.queued_until = queued_until;
    const auto t0 = std::chrono::steady_clock::now();
    p.Send(m, [done, t0](PublishOutcome o) {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      done->set_value({std::move(o), s});
    });
  }
  return out;
}

// How many of SendTimed's messages (values "e0", "e1", ...) `topic` holds.
size_t SentTimedOnTopic(TestBroker& cluster, const std::string& topic) {
  size_t n = 0;
  for (const auto& m : testing::ConsumeAll(cluster.bootstrap(), {topic}))
    n += m.value.rfind("e", 0) == 0 ? 1 : 0;
  return n;
}

// A producer (a lease of `lease_ms`) whose first message to "orders" was
// acknowledged: connected, its idempotent sequence begun.
std::shared_ptr<KafkaPublisher> ConnectedAndAcked(TestBroker& cluster, int64_t lease_ms) {
  auto p = Connect(cluster, lease_ms);
  REQUIRE(SendAllAndWait(*p, {{"orders", "k", "first", {}}})[0].result == PublishResult::kAcked);
  return p;
}

}  // namespace

TEST_CASE(
    "messages queued while every broker is down are taken back at once unsent and the "
    "producer publishes again when the brokers are back",
    "[kafka][mock-faults]") {
  TestBroker cluster(1, "orders", 4);
  // lease 5 s: message.timeout.ms 2.5 s, which librdkafka 2.0.2 applies to a
  // queued message only at the next reconnect attempt while the broker is
  // down (up to reconnect.backoff.max.ms, 10 s, later).
  auto p = ConnectedAndAcked(cluster, 5000);
  cluster.SetAllBrokersDown(true);
  REQUIRE(testing::WaitFor([&] { return !p->Healthy(); }, 10s));
  auto pending = SendTimed(*p, "orders", 50, Clock::TimePoint::max());
  for (auto& f : pending) {
    REQUIRE(f.wait_for(5s) == std::future_status::ready);
    Timed t = f.get();
    INFO(t.outcome.error);
    CHECK(t.outcome.result == PublishResult::kNotAttempted);
    CHECK(t.outcome.reason == FailureReason::kPurged);
    CHECK(t.seconds < 1.0);  // not 2.5 s, nor the next reconnect attempt's
  }
  cluster.SetAllBrokersDown(false);
  REQUIRE(testing::WaitFor([&] { return p->Healthy(); }, 15s));
  // The purged messages left a gap in the idempotent producer's sequence:
  // the next ones are acknowledged all the same.
  auto after = SendAllAndWait(*p, {{"orders", "k", "after", {}}, {"orders", "j", "after", {}}});
  for (const auto& o : after) CHECK(o.result == PublishResult::kAcked);
  CHECK_FALSE(p->Fatal());
  const size_t purged_on_topic = SentTimedOnTopic(cluster, "orders");
  CHECK(purged_on_topic == 0);
}

TEST_CASE(
    "a message still queued when its claim's budget ends is taken back and never sent later "
    "while requests on the wire are left to finish",
    "[kafka][mock-faults]") {
  TestBroker cluster(1, "orders", 1);
  auto p = ConnectedAndAcked(cluster, 30000);
  // A frozen broker: requests unanswered for 3 s, so what is not on the wire
  // stays queued behind max.in.flight requests.
  cluster.SetRtt(3000);
  const auto budget_end = Clock::TimePoint::clock::now() + 500ms;
  std::vector<std::future<Timed>> pending;
  for (int round = 0; round < 20; ++round) {
    auto more = SendTimed(*p, "orders", 10, budget_end);
    for (auto& f : more) pending.push_back(std::move(f));
    std::this_thread::sleep_for(10ms);
  }
  int purged = 0, acked = 0;
  for (auto& f : pending) {
    REQUIRE(f.wait_for(15s) == std::future_status::ready);
    Timed t = f.get();
    INFO(t.outcome.error);
    if (t.outcome.result == PublishResult::kNotAttempted) {
      CHECK(t.outcome.reason == FailureReason::kPurged);
      CHECK(t.seconds < 1.5);
      ++purged;
    } else if (t.outcome.result == PublishResult::kAcked) {
      ++acked;
    }
  }
  cluster.SetRtt(0);
  CHECK(purged > 0);
  // What was purged never reaches the topic: only the acknowledged are there.
  const size_t on_topic = SentTimedOnTopic(cluster, "orders");
  CHECK(on_topic == static_cast<size_t>(acked));
}

TEST_CASE("a delivery report says whether the failed message may have been written", "[kafka]") {
  using R = PublishResult;
  struct Row {
    rd_kafka_resp_err_t err;
    rd_kafka_msg_status_t status;
    bool fatal;
    R result;
    FailureReason reason;
    bool maybe_written;
  };
  const Row rows[] = {
      {RD_KAFKA_RESP_ERR_NO_ERROR, RD_KAFKA_MSG_STATUS_PERSISTED, false, R::kAcked,
       FailureReason::kNone, false},
      {RD_KAFKA_RESP_ERR__PURGE_QUEUE, RD_KAFKA_MSG_STATUS_NOT_PERSISTED, false, R::kNotAttempted,
       FailureReason::kPurged, false},
      {RD_KAFKA_RESP_ERR__PURGE_QUEUE, RD_KAFKA_MSG_STATUS_POSSIBLY_PERSISTED, false, R::kRetryable,
       FailureReason::kTimeout, true},
      {RD_KAFKA_RESP_ERR__PURGE_QUEUE, RD_KAFKA_MSG_STATUS_NOT_PERSISTED, true, R::kRetryable,
       FailureReason::kProducerFatal, false},
      {RD_KAFKA_RESP_ERR__MSG_TIMED_OUT, RD_KAFKA_MSG_STATUS_POSSIBLY_PERSISTED, false,
       R::kRetryable, FailureReason::kTimeout, true},
      {RD_KAFKA_RESP_ERR__MSG_TIMED_OUT, RD_KAFKA_MSG_STATUS_NOT_PERSISTED, false, R::kRetryable,
       FailureReason::kTimeout, false},
      {RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE, RD_KAFKA_MSG_STATUS_NOT_PERSISTED, false,
       R::kPermanent, FailureReason::kMessageTooLarge, false},
  };
  for (const auto& r : rows) {
    INFO(rd_kafka_err2name(r.err) << " status " << r.status << " fatal " << r.fatal);
    const PublishOutcome o = ClassifyDelivery(r.err, r.status, /*broker_up=*/true, r.fatal);
    CHECK(o.result == r.result);
    CHECK(o.reason == r.reason);
    CHECK(o.maybe_written == r.maybe_written);
  }
}

}  // namespace outbox
