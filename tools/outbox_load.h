#pragma once

// The pure part of outbox-load: which events to write, with which ids, in
// which order, by which writer. No I/O; tools/outbox_load_main.cc writes the
// plan, tests/tools/outbox_load_test.cc checks its invariants.

#include <cstdint>
#include <string>
#include <vector>

namespace outbox::load {

struct PlanOptions {
  int64_t aggregates = 1000;
  int min_events = 4;  // events per aggregate: uniform in [min_events, max_events]
  int max_events = 4;
  int64_t first_id = 1;
  int64_t first_aggregate_id = 1;
  std::vector<std::string> aggregate_types = {"Order"};
  // Aggregates in progress at once: each next event belongs to one of them,
  // picked at random, the way many concurrent business flows interleave.
  int active = 100;
  int writers = 4;
  uint64_t seed = 1;
};

struct Aggregate {
  std::string type;
  int64_t id = 0;
  int events = 0;
};

struct Event {
  int64_t id = 0;         // outbox id: increases with the event's position in the plan
  int32_t aggregate = 0;  // index into Plan::aggregates
  int32_t seq = 0;        // 0-based position within its aggregate
};

struct Plan {
  std::vector<Aggregate> aggregates;
  std::vector<Event> events;  // in id order
  // Writer w inserts the events of the aggregates with index % writers == w,
  // in id order, so one aggregate's events are inserted in id order.
  int WriterOf(const Event& e, int writers) const { return e.aggregate % writers; }
};

Plan MakePlan(const PlanOptions& options);

// Event type for the seq-th event of an aggregate of `type` (OrderCreated,
// OrderUpdated, ...).
std::string EventType(const std::string& type, int seq);
// Idempotency key: event type + aggregate id + version (README, "The outbox table").
std::string EventKey(const std::string& event_type, int64_t aggregate_id, int seq);

// Parses "4" or "2..20" into [min, max]; false on anything else.
bool ParseRange(const std::string& text, int* min, int* max);

}  // namespace outbox::load
