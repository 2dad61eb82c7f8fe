#include "outbox_load.h"

#include <random>

namespace outbox::load {

Plan MakePlan(const PlanOptions& o) {
  Plan plan;
  std::mt19937_64 rng(o.seed);
  std::uniform_int_distribution<int> size(o.min_events, o.max_events);
  std::uniform_int_distribution<size_t> type(0, o.aggregate_types.size() - 1);
  plan.aggregates.reserve(static_cast<size_t>(o.aggregates));
  int64_t total = 0;
  for (int64_t a = 0; a < o.aggregates; ++a) {
    Aggregate g;
    g.type = o.aggregate_types[type(rng)];
    g.id = o.first_aggregate_id + a;
    g.events = size(rng);
    total += g.events;
    plan.aggregates.push_back(std::move(g));
  }
  plan.events.reserve(static_cast<size_t>(total));
  // A pool of aggregates in progress; each step emits the next event of a
  // random one, and a finished aggregate makes room for the next.
  std::vector<int32_t> pool;
  std::vector<int32_t> next_seq(plan.aggregates.size(), 0);
  int32_t next_aggregate = 0;
  const int32_t n = static_cast<int32_t>(plan.aggregates.size());
  auto refill = [&] {
    while (static_cast<int>(pool.size()) < std::max(1, o.active) && next_aggregate < n)
      pool.push_back(next_aggregate++);
  };
  refill();
  int64_t id = o.first_id;
  while (!pool.empty()) {
    size_t slot = std::uniform_int_distribution<size_t>(0, pool.size() - 1)(rng);
    int32_t a = pool[slot];
    plan.events.push_back(Event{id++, a, next_seq[a]++});
    if (next_seq[a] == plan.aggregates[a].events) {
      pool[slot] = pool.back();
      pool.pop_back();
      refill();
    }
  }
  return plan;
}

std::string EventType(const std::string& type, int seq) {
  static const char* kNames[] = {"Created", "Updated", "Paid", "Shipped", "Delivered", "Closed"};
  if (seq == 0) return type + kNames[0];
  return type + kNames[1 + (seq - 1) % 5];
}

std::string EventKey(const std::string& event_type, int64_t aggregate_id, int seq) {
  return event_type + "-" + std::to_string(aggregate_id) + "-v" + std::to_string(seq);
}

bool ParseRange(const std::string& text, int* min, int* max) {
  auto num = [](const std::string& s, int* out) {
    if (s.empty() || s.size() > 6) return false;
    for (char c : s)
      if (c < '0' || c > '9') return false;
    *out = std::stoi(s);
    return *out >= 1;
  };
  auto dots = text.find("..");
  if (dots == std::string::npos) {
    if (!num(text, min)) return false;
    *max = *min;
    return true;
  }
  return num(text.substr(0, dots), min) && num(text.substr(dots + 2), max) && *min <= *max;
}

}  // namespace outbox::load
