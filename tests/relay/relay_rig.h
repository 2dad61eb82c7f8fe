#pragma once

// The relay tests' shared fixture: one service's relay over a fake table, a
// fake broker and a fake clock, either as RelayUnits that a test steps by
// hand (RelayRig) or as the options of a Relay that runs its own threads
// (FakeRelayOptions).

#include <chrono>
#include <memory>
#include <string>

#include "fakes/fake_clock.h"
#include "fakes/fake_publisher.h"
#include "fakes/fake_stats.h"
#include "fakes/fake_store.h"
#include "relay/relay.h"

namespace outbox::testing {

// The options of a relay of `config` over `stores` and `publisher`, on
// `clock`, counting into `*metrics` (which must outlive the relay).
inline RelayOptions FakeRelayOptions(ServiceConfig config, StoreFactory stores,
                                     PublisherPtr publisher, ClockPtr clock, FakeStats* metrics) {
  RelayOptions o;
  o.config = std::move(config);
  o.store_factory = std::move(stores);
  o.publisher = std::move(publisher);
  o.metrics = metrics;
  o.clock = std::move(clock);
  return o;
}

// One relay's units over a fake table and a fake broker behind a
// FailingPublisher, on a fake clock, with a fixed seed for the retry jitter.
// `shared` and `shared_clock`: a table and a clock shared with another relay
// (another replica); `factory`: stores other than plain fakes of the table.
struct RelayRig {
  explicit RelayRig(ServiceConfig c, std::shared_ptr<FakeTable> shared = nullptr,
                    std::shared_ptr<FakeClock> shared_clock = nullptr,
                    StoreFactory factory = nullptr)
      : config(std::move(c)),
        clock(shared_clock ? shared_clock : std::make_shared<FakeClock>()),
        table(shared ? shared : std::make_shared<FakeTable>(clock)),
        broker(std::make_shared<FakePublisher>()),
        faults(std::make_shared<FailingPublisher>(broker)) {
    RelayOptions o = FakeRelayOptions(config, factory ? factory : FakeStoreFactory(table), faults,
                                      clock, &metrics);
    o.seed = 42;
    // Steps on a clock that moves only when the test says: each batch is
    // settled at once, none waits for the SENT group's window.
    o.settle_group_window_for_testing = std::chrono::milliseconds(0);
    relay = std::make_unique<RelayUnits>(std::move(o));
  }

  FakeStats& m() { return metrics; }

  // One claim round and the settle of whatever the broker finished.
  ClaimRound Step() {
    ClaimRound r = relay->claim.ClaimOnce();
    relay->settle.SettleOrGroup(std::chrono::milliseconds(0));
    return r;
  }

  ServiceConfig config;
  std::shared_ptr<FakeClock> clock;
  std::shared_ptr<FakeTable> table;
  std::shared_ptr<FakePublisher> broker;
  std::shared_ptr<FailingPublisher> faults;
  FakeStats metrics;
  std::unique_ptr<RelayUnits> relay;
};

}  // namespace outbox::testing
