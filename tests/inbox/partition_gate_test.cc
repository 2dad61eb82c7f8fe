// Which partitions wait and until when (src/inbox/
// partition_gate.cc), with time passed in: no sleeping.
#include "inbox/partition_gate.h"

#include <catch2/catch.hpp>

using outbox::inbox::PartitionGate;
using namespace std::chrono_literals;

namespace {
const outbox::inbox::TopicPartition kP0{"t", 0}, kP1{"t", 1};
const PartitionGate::TimePoint kT0{};
}  // namespace

TEST_CASE("a stall holds only its partition from the unfinished offset with a growing backoff",
          "[consumer][gate]") {
  PartitionGate g;
  CHECK(g.Stall(kP0, 7, kT0) == 200ms);
  CHECK(g.Held(kP0));
  CHECK_FALSE(g.Held(kP1));
  CHECK(g.HeldOffset(kP0) == 7);
  CHECK(g.Due(kT0 + 199ms).empty());
  REQUIRE(g.Due(kT0 + 200ms).size() == 1);
  g.Seeked(kP0);
  g.Resumed(kP0);
  CHECK_FALSE(g.Held(kP0));
  CHECK(g.Stall(kP0, 7, kT0 + 1s) == 400ms);  // the same outage goes on
  g.Resumed(kP0);
  for (int i = 0; i < 10; ++i) g.Stall(kP0, 7, kT0);
  CHECK(g.Stall(kP0, 7, kT0) == 10000ms);  // capped
  CHECK(g.Finished(kP0, 7));               // "resumed"
  CHECK(g.Stall(kP0, 8, kT0) == 200ms);    // a new outage starts small
}

TEST_CASE("a failed seek keeps the partition held until a seek succeeds", "[consumer][gate]") {
  PartitionGate g;
  g.Stall(kP0, 3, kT0);
  CHECK(g.NeedsSeek(kP0));
  g.SeekFailed(kP0, kT0);
  CHECK(g.Held(kP0));
  CHECK(g.Due(kT0 + 100ms).empty());
  REQUIRE(g.Due(kT0 + 1s).size() == 1);
  CHECK(g.NeedsSeek(kP0));  // the consumer seeks again before it resumes
  g.SeekFailed(kP0, kT0 + 1s);
  CHECK(g.Held(kP0));
  CHECK(g.HeldOffset(kP0) == 3);
  g.Seeked(kP0);
  CHECK_FALSE(g.NeedsSeek(kP0));
  g.Resumed(kP0);
  CHECK_FALSE(g.Held(kP0));
}

TEST_CASE("retries count attempts per message and back off without holding the others",
          "[consumer][gate]") {
  PartitionGate g;
  CHECK(g.Attempts(kP0, 5) == 0);
  CHECK(g.Retry(kP0, 5, kT0) == 100ms);
  CHECK(g.Attempts(kP0, 5) == 1);
  g.Resumed(kP0);
  CHECK(g.Retry(kP0, 5, kT0) == 200ms);
  CHECK(g.Attempts(kP0, 5) == 2);
  CHECK(g.Attempts(kP0, 6) == 0);
  CHECK_FALSE(g.Held(kP1));
  g.Resumed(kP0);
  // A stall in between keeps the count: the attempts were the message's.
  g.Stall(kP0, 5, kT0);
  CHECK(g.Attempts(kP0, 5) == 2);
  g.Resumed(kP0);
  g.Finished(kP0, 5);
  CHECK(g.Attempts(kP0, 5) == 0);
  for (int i = 0; i < 8; ++i) g.Retry(kP0, 9, kT0);
  CHECK(g.Retry(kP0, 9, kT0) == 2000ms);  // capped
}

TEST_CASE("a revoked partition is forgotten: its next owner starts afresh", "[consumer][gate]") {
  PartitionGate g;
  g.Stall(kP0, 3, kT0);
  g.Stall(kP1, 4, kT0);
  CHECK(g.held() == 2);
  g.Forget(kP0);
  CHECK_FALSE(g.Held(kP0));
  CHECK(g.held() == 1);
  CHECK(g.Due(kT0 + 1s) == std::vector<outbox::inbox::TopicPartition>{kP1});
}

TEST_CASE(
    "a partition waiting for its dead letter's answer has no deadline and goes on after the "
    "message once it is finished",
    "[consumer][gate]") {
  PartitionGate g;
  g.AwaitDeadLetter(kP0, 4);
  CHECK(g.Held(kP0));
  CHECK_FALSE(g.Held(kP1));
  CHECK(g.Due(kT0 + 24h).empty());  // the broker's answer, not a clock, ends the wait
  g.SeekFailed(kP0, kT0);
  CHECK(g.Due(kT0 + 24h).empty());
  g.Finished(kP0, 4);  // acknowledged (or parked)
  REQUIRE(g.Due(kT0).size() == 1);
  CHECK(g.NeedsSeek(kP0));        // it was read again from 4 meanwhile
  CHECK(g.HeldOffset(kP0) == 5);  // resumes after the dead letter
  g.Seeked(kP0);
  g.Resumed(kP0);
  CHECK_FALSE(g.Held(kP0));
}

TEST_CASE("a dead letter the broker did not take stalls its partition at the message",
          "[consumer][gate]") {
  PartitionGate g;
  g.AwaitDeadLetter(kP0, 9);
  CHECK(g.Stall(kP0, 9, kT0) == 200ms);
  CHECK(g.Due(kT0 + 199ms).empty());
  REQUIRE(g.Due(kT0 + 200ms).size() == 1);
  CHECK(g.HeldOffset(kP0) == 9);  // the message is handled (and dead-lettered) again
  g.AwaitDeadLetter(kP1, 9);
  g.Finished(kP1, 8);  // another message's end does not answer this one
  CHECK(g.Due(kT0 + 24h) == std::vector<outbox::inbox::TopicPartition>{kP0});
}
