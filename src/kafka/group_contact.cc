#include "kafka/group_contact.h"

#include <nlohmann/json.hpp>

namespace outbox {

bool ParseContactSample(const std::string& json, ContactSample* sample) {
  const nlohmann::json doc = nlohmann::json::parse(json, nullptr, false);
  if (doc.is_discarded() || !doc.contains("cgrp")) return false;
  *sample = ContactSample{};
  sample->ts_us = doc.value("ts", int64_t{0});
  sample->steady = doc["cgrp"].value("join_state", std::string()) == "steady";
  if (doc.contains("brokers")) {
    for (const auto& [name, b] : doc["brokers"].items()) {
      if (b.value("source", std::string()) == "logical" && name.rfind("GroupCoordinator", 0) == 0)
        sample->coordinator_rx += b.value("rx", int64_t{0});
    }
  }
  return true;
}

GroupContact::Change GroupContact::Observe(const ContactSample& s, bool assignment_lost) {
  if (!seen_) {
    seen_ = true;
    rx_ = s.coordinator_rx;
    since_us_ = last_ts_us_ = s.ts_us;
    return Change::kNone;
  }
  const bool answered = s.coordinator_rx != rx_;
  rx_ = s.coordinator_rx;
  last_ts_us_ = s.ts_us;
  // Not steady: a join or sync in flight, which the coordinator may hold
  // for a rebalance; no heartbeat is due, so silence proves nothing.
  if (answered || !s.steady) since_us_ = s.ts_us;
  if (lost_) {
    if (answered) ++answers_;
    if (answers_ < 2 || !s.steady || assignment_lost) return Change::kNone;
    lost_ = false;
    return Change::kBack;
  }
  if (s.ts_us - since_us_ < limit_us_) return Change::kNone;
  lost_ = true;
  answers_ = 0;
  return Change::kLost;
}

void GroupContact::Reset() {
  seen_ = false;
  lost_ = false;
  answers_ = 0;
}

}  // namespace outbox
