#include "kafka/group_contact.h"

#include <catch2/catch.hpp>

using namespace outbox;
using Change = GroupContact::Change;

namespace {

ContactSample At(int64_t ms, int64_t rx, bool steady = true) { return {ms * 1000, rx, steady}; }

}  // namespace

TEST_CASE("the contact watchdog suspends after its limit of silence while heartbeats are due",
          "[fleet]") {
  struct Row {
    const char* what;
    std::vector<ContactSample> samples;
    Change last;
  };
  // Limit 4 s (a 6 s session less a 2 s heartbeat interval).
  const std::vector<Row> rows = {
      {"answers every 2 s", {At(0, 1), At(2000, 2), At(4000, 3), At(6000, 4)}, Change::kNone},
      {"silent for 3.9 s", {At(0, 1), At(1000, 1), At(3900, 1)}, Change::kNone},
      {"silent for 4 s", {At(0, 1), At(1000, 1), At(4000, 1)}, Change::kLost},
      {"silent during a join, then steady",
       {At(0, 1), At(3000, 1, false), At(6000, 1)},
       Change::kNone},
      {"silent from the last answer",
       {At(0, 1), At(2000, 2), At(5000, 2), At(6000, 2)},
       Change::kLost},
  };
  for (const auto& row : rows) {
    INFO(row.what);
    GroupContact c(std::chrono::milliseconds(4000));
    Change last = Change::kNone;
    for (const auto& s : row.samples) last = c.Observe(s, false);
    CHECK(last == row.last);
  }
}

TEST_CASE(
    "a suspended member serves again after two answers while steady and only if its assignment "
    "is not lost",
    "[fleet]") {
  GroupContact c(std::chrono::milliseconds(4000));
  CHECK(c.Observe(At(0, 1), false) == Change::kNone);
  CHECK(c.Observe(At(4000, 1), false) == Change::kLost);
  CHECK(c.silence_ms() == 4000);
  CHECK(c.Observe(At(5000, 1), false) == Change::kNone);  // still silent: no second kLost
  CHECK(c.Observe(At(6000, 2), false) == Change::kNone);  // one answer
  SECTION("the second answer with the assignment kept") {
    CHECK(c.Observe(At(7000, 3), false) == Change::kBack);
    CHECK_FALSE(c.lost());
  }
  SECTION("the second answer with the assignment lost") {
    CHECK(c.Observe(At(7000, 3), true) == Change::kNone);
    CHECK(c.lost());
  }
  SECTION("an assignment resets it") {
    c.Reset();
    CHECK_FALSE(c.lost());
    CHECK(c.Observe(At(7000, 3), false) == Change::kNone);
  }
}

TEST_CASE("a statistics document gives the coordinator's answers and the join state", "[fleet]") {
  ContactSample s;
  CHECK(ParseContactSample(
      R"({"ts": 5000000, "brokers": {
            "127.0.0.1:9092/1": {"source": "configured", "rx": 40},
            "GroupCoordinator": {"source": "logical", "rx": 12}},
          "cgrp": {"state": "up", "join_state": "steady"}})",
      &s));
  CHECK(s.ts_us == 5000000);
  CHECK(s.coordinator_rx == 12);
  CHECK(s.steady);
  CHECK(ParseContactSample(R"({"ts": 1, "cgrp": {"join_state": "wait-join"}})", &s));
  CHECK_FALSE(s.steady);
  CHECK(s.coordinator_rx == 0);
  CHECK_FALSE(ParseContactSample(R"({"ts": 1, "brokers": {}})", &s));
  CHECK_FALSE(ParseContactSample("not json", &s));
}
