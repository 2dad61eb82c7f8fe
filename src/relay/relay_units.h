#pragma once

#include <chrono>
#include <memory>
#include <random>

#include "common/clock.h"
#include "common/liveness.h"
#include "common/service_stats.h"
#include "common/wakeup_source.h"
#include "config/config.h"
#include "kafka/publisher.h"
#include "outbox/outbox_store.h"
#include "relay/claim_loop.h"
#include "relay/claim_planner.h"
#include "relay/claim_scheduler.h"
#include "relay/db_health.h"
#include "relay/housekeeper.h"
#include "relay/housekeeping_loop.h"
#include "relay/router.h"
#include "relay/settle_loop.h"
#include "relay/settle_queue.h"
#include "relay/settle_timing.h"
#include "relay/settler.h"

namespace outbox {

struct RelayOptions {
  ServiceConfig config;
  StoreFactory store_factory;  // one store per connection the relay opens (four)
  PublisherPtr publisher;
  ServiceStats* metrics = nullptr;  // must outlive the Relay
  ClockPtr clock = DefaultClock();
  uint64_t seed = std::random_device{}();
  // Where the service's loops register their heartbeats for /healthz (null:
  // none). Must outlive the Relay.
  LivenessRegistry* liveness = nullptr;
  // What the claim loop waits on when idle (docs/BINLOG.md): null means a
  // PollWakeupSource on poll_interval_ms (`wakeup: poll`); src/app/ hands a
  // binlog::BinlogWakeupSource for `wakeup: binlog`.
  WakeupSourcePtr wakeup;
  // How long acknowledged batches wait to be settled together (SentGrouping,
  // settle_timing.h). A test seam: production keeps the default; 0 (each
  // alone, at once) is for tests that step the loops on a clock that moves
  // only when they say.
  std::chrono::milliseconds settle_group_window_for_testing = SentGrouping::kWindow;
};

// One service's units (docs/DESIGN.md) wired together, with no thread: the
// Relay runs the three loops on threads; a test may step them on its own.
// The members are in construction order: each holds references to members
// declared before it, which C++ builds before it and destroys after it.
struct RelayUnits {
  explicit RelayUnits(RelayOptions options);
  ~RelayUnits();  // completions that arrive later are dropped (SettleQueue::Close)
  RelayUnits(const RelayUnits&) = delete;
  RelayUnits& operator=(const RelayUnits&) = delete;

  const WakeupSourcePtr wakeup;  // taken out of the options before they are stored
  const RelayOptions options;
  const ServiceConfig& config;
  const Router router;
  DbHealth health;
  ClaimPlanner planner;  // internally locked: OnSettled comes from the settle thread
  const std::shared_ptr<SettleQueue> queue;
  Settler settler;
  Housekeeper housekeeper;
  // When the claim loop runs next: driven by the loop alone (its notes come
  // from the settle and delivery threads); a test may ask it what it decides.
  ClaimScheduler scheduler;
  ClaimLoop claim;
  SettleLoop settle;
  HousekeepingLoop housekeeping;
};

}  // namespace outbox
