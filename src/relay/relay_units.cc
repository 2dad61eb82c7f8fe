#include "relay/relay_units.h"

namespace outbox {

namespace {
WakeupSourcePtr TakeWakeup(RelayOptions& options) {
  if (options.wakeup) return std::move(options.wakeup);
  return std::make_unique<PollWakeupSource>(options.clock);
}

// `wakeup: binlog`: the settle's commits are the relay's own, which the
// stream does not wake the claim loop for (the loop may be waiting while the
// settle writes, so they are expected before it writes); so released and
// DEAD rows wake it directly. (`wakeup: poll` finds them at the next poll.)
SettleNotes SettleNotesFor(const ServiceConfig& config, WakeupSource& wakeup) {
  if (config.wakeup != WakeupMode::kBinlog) return {};
  return {.before_write = [&wakeup] { wakeup.BeginOwnChange(SettleResult::kMaxCommits); },
          .after_write =
              [&wakeup](int commits) { wakeup.EndOwnChange(SettleResult::kMaxCommits, commits); },
          .freed = [&wakeup] { wakeup.Interrupt(); }};
}

// The same for retention's DELETEs (one commit a batch).
Housekeeper::OwnWrites RetentionNotesFor(const ServiceConfig& config, WakeupSource& wakeup) {
  if (config.wakeup != WakeupMode::kBinlog) return {};
  return {.before = [&wakeup] { wakeup.BeginOwnChange(1); },
          .after = [&wakeup](int commits) { wakeup.EndOwnChange(1, commits); }};
}

ClaimLoopParts PartsOf(RelayUnits& u) {
  return {.config = u.config,
          .router = u.router,
          .planner = u.planner,
          .health = u.health,
          .stats = *u.options.metrics,
          .housekeeper = u.housekeeper,
          .wakeup = *u.wakeup,
          .scheduler = u.scheduler,
          .queue = u.queue,
          .stores = u.options.store_factory,
          .publisher = u.options.publisher,
          .clock = u.options.clock};
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
              config.ordering == Ordering::kPerAggregate ? &planner : nullptr, options.seed,
              SettleNotesFor(config, *wakeup)),
      housekeeper(config, options.store_factory(), options.metrics, &health, options.clock),
      scheduler(ClaimScheduler::OptionsFor(config), options.clock),
      claim(PartsOf(*this)),
      settle(
          &settler, queue, options.clock,
          [this](int64_t backoff_ms) { claim.NoteOwnRetry(backoff_ms); },
          options.settle_group_window_for_testing),
      housekeeping(config, &housekeeper, options.clock) {
  housekeeper.set_own_writes(RetentionNotesFor(config, *wakeup));
}

RelayUnits::~RelayUnits() { queue->Close(); }

}  // namespace outbox
