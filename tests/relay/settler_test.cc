// PlanSettle (src/relay/settler.h): outcomes to settle operations, a pure
// function; and the latency on the database's clock.
#include "relay/settler.h"

#include <catch2/catch.hpp>
#include <limits>

namespace outbox {
namespace {

using namespace std::chrono_literals;

OutboxRow Row(int64_t id, int retry_count = 0) {
  OutboxRow r;
  r.id = id;
  r.aggregate = {"order", 1};
  r.retry_count = retry_count;
  return r;
}

RetryConfig Retry() {
  RetryConfig c;
  c.max_attempts = 3;
  c.initial_backoff_ms = 1000;
  c.max_backoff_ms = 4000;
  return c;
}

TEST_CASE("each publish outcome becomes its settle operation", "[relay][settle]") {
  RetryPolicy retry(Retry(), 1);
  std::vector<OutboxRow> rows = {Row(1), Row(2), Row(3), Row(4), Row(5, 2)};
  std::vector<PublishOutcome> outcomes = {
      {PublishResult::kAcked, FailureReason::kNone, ""},
      {PublishResult::kNotAttempted, FailureReason::kNone, "not sent"},
      {PublishResult::kRetryable, FailureReason::kTimeout, "timed out"},
      {PublishResult::kPermanent, FailureReason::kMessageTooLarge, "too large"},
      {PublishResult::kRetryable, FailureReason::kBrokerDown, "down"},
  };
  auto ops = PlanSettle(rows, outcomes, retry);
  REQUIRE(ops.size() == 5);
  for (size_t i = 0; i < ops.size(); ++i) CHECK(ops[i].id == rows[i].id);
  CHECK(ops[0].kind == SettleKind::kSent);
  CHECK(ops[1].kind == SettleKind::kRelease);
  CHECK(ops[2].kind == SettleKind::kRetry);
  CHECK(ops[2].error == "timed out");
  CHECK(ops[2].backoff_ms >= 500);
  CHECK(ops[2].backoff_ms <= 1000);
  CHECK(ops[3].kind == SettleKind::kDead);
  CHECK(ops[3].error == "too large");
  // The third failure of a row with max_attempts 3.
  CHECK(ops[4].kind == SettleKind::kDead);
  CHECK(ops[4].error == "attempts exhausted (3): down");
}

TEST_CASE("a retry count at its column's limit stays there and the row goes DEAD",
          "[relay][settle]") {
  RetryPolicy retry(Retry(), 1);
  auto ops = PlanSettle({Row(1, std::numeric_limits<int>::max())},
                        {{PublishResult::kRetryable, FailureReason::kTimeout, "t"}}, retry);
  CHECK(ops[0].kind == SettleKind::kDead);
  CHECK(ops[0].error.find(std::to_string(std::numeric_limits<int>::max())) != std::string::npos);
}

TEST_CASE("the publish latency is the database's age at the claim plus the claim to the ack",
          "[relay][settle]") {
  OutboxRow r = Row(1);
  r.age_at_claim_us = 2'500'000;  // the database said: created 2.5 s before the claim
  r.created_at_unix = 0;          // whatever the relay host's clock thinks of created_at
  Clock::TimePoint claimed{};
  CHECK(PublishLatencySeconds(r, claimed, claimed + 40ms) == Approx(2.54));
  r.age_at_claim_us = -5'000'000;  // created_at in the future (another zone): not negative
  CHECK(PublishLatencySeconds(r, claimed, claimed) == 0);
}

}  // namespace
}  // namespace outbox
