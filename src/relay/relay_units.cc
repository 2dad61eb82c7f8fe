#include "relay/relay_units.h"

namespace outbox {

namespace {
WakeupSourcePtr TakeWakeup(RelayOptions& options) {
  if (options.wakeup) return std::move(options.wakeup);
  return std::make_unique<PollWakeup>(options.clock);
}

ClaimLoopParts PartsOf(RelayUnits& u) {
  ClaimLoopParts p;
  p.config = &u.config;
  p.router = &u.router;
  p.planner = &u.planner;
  p.health = &u.health;
  p.stats = u.options.metrics;
  p.housekeeper = &u.housekeeper;
  p.wakeup = u.wakeup.get();
  p.queue = u.queue;
  p.stores = u.options.store_factory;
  p.publisher = u.options.publisher;
  p.clock = u.options.clock;
  return p;
}
}  // namespace

RelayUnits::RelayUnits(RelayOptions o)
    : wakeup(TakeWakeup(o)),
      options(std::move(o)),
      config(options.config),
      router(config),
      health(config.name, options.metrics),
      planner(config.dead_policy),
      queue(std::make_shared<SettleQueue>(options.clock)),
      settler(config, &router, options.store_factory(), options.metrics, &health,
              config.ordering == Ordering::kPerAggregate ? &planner : nullptr, options.seed),
      housekeeper(config, options.store_factory(), options.metrics, &health, options.clock),
      claim(PartsOf(*this)),
      settle(&settler, queue, options.clock,
             [this](int64_t backoff_ms) { claim.NoteOwnRetry(backoff_ms); }),
      housekeeping(config, &housekeeper, options.clock) {}

RelayUnits::~RelayUnits() { queue->Close(); }

}  // namespace outbox
