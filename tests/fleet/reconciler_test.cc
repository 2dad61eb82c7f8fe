#include "fleet/reconciler.h"

#include <catch2/catch.hpp>
#include <thread>

#include "config/config_loader.h"
#include "fakes/fake_clock.h"
#include "fakes/fake_runner.h"
#include "fleet_files.h"
#include "metrics/metrics.h"
#include "support/wait.h"

using namespace outbox;
using namespace outbox::testing;
using namespace std::chrono_literals;

namespace {

const std::string kNoShards =
    "  - {name: a, mysql: {user: u, database: a}}\n"
    "  - {name: b, mysql: {user: u, database: b}}\n"
    "  - {name: c, mysql: {user: u, database: c}}\n";

using Names = std::vector<std::string>;

struct Rig {
  explicit Rig(const Config& file, Ownership owns = Ownership::Shards({}, 0))
      : runner(file), fleet_metrics(*metrics.registry()) {
    Reconciler::Options o;
    o.runner = &runner;
    o.registry = metrics.registry().get();
    o.fleet_metrics = &fleet_metrics;
    o.clock = clock;
    reconciler = std::make_unique<Reconciler>(o, file, owns);
  }
  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>();
  Metrics metrics;
  FakeRunner runner;
  FleetMetrics fleet_metrics;
  std::unique_ptr<Reconciler> reconciler;
};

}  // namespace

TEST_CASE("the reconciler runs the file's services this relay owns and follows each input",
          "[fleet]") {
  const Config file = FleetFile(kThreeServices);
  Rig r(file);
  CHECK(r.reconciler->Reconcile().empty());
  CHECK(r.runner.Claiming().empty());
  CHECK(Has(r.metrics.Serialize(), "outbox_service_running{service=\"a\"} 0"));

  r.reconciler->SetOwnership(Ownership::Shards({1}, 2));
  CHECK(r.reconciler->Reconcile().empty());
  CHECK(r.runner.Claiming() == Names{"b", "c"});
  std::string m = r.metrics.Serialize();
  CHECK(Has(m, "outbox_service_running{service=\"b\"} 1"));
  CHECK(Has(m, "outbox_service_owned{service=\"b\"} 1"));
  CHECK(Has(m, "outbox_service_owned{service=\"a\"} 0"));

  // A reload drops c and adds d (shard 1): the ownership is kept.
  r.reconciler->SetFile(
      FleetFile("  - {name: a, shard: 0, mysql: {user: u, database: a}}\n"
                "  - {name: b, shard: 1, mysql: {user: u, database: b}}\n"
                "  - {name: d, shard: 1, mysql: {user: u, database: d}}\n"));
  CHECK(r.reconciler->Reconcile().empty());
  CHECK(r.runner.Claiming() == Names{"b", "d"});
  m = r.metrics.Serialize();
  CHECK_FALSE(Has(m, "service=\"c\""));
  CHECK(Has(m, "outbox_service_running{service=\"d\"} 1"));
}

TEST_CASE("without a fleet every service of the file runs", "[fleet]") {
  const Config file = FleetFile(kNoShards, false);
  Rig r(file, Ownership::All());
  CHECK(r.reconciler->Reconcile().empty());
  CHECK(r.runner.Claiming() == Names{"a", "b", "c"});
}

TEST_CASE(
    "a service that cannot start is retried with backoff until it runs and is logged and counted "
    "once per cause",
    "[fleet]") {
  const Config file = FleetFile(kThreeServices);
  Rig r(file, Ownership::Shards({1}, 2));
  r.runner.CannotStart("b", "cannot create the Kafka producer: ssl.ca.location missing");
  const auto failures = r.reconciler->Reconcile();
  REQUIRE(failures.size() == 1);
  CHECK(failures[0].service == "b");
  CHECK(r.runner.Claiming() == Names{"c"});
  std::string m = r.metrics.Serialize();
  CHECK(Has(m, "outbox_service_owned{service=\"b\"} 1"));
  CHECK(Has(m, "outbox_service_running{service=\"b\"} 0"));
  CHECK(Has(m, "outbox_service_start_failures_total{service=\"b\"} 1"));

  // Not before its backoff (1 s), then 2 s, 4 s, ...
  const int applies = r.runner.applies();
  r.clock->Advance(500ms);
  CHECK(r.reconciler->Reconcile().empty());
  CHECK(r.runner.applies() == applies);
  r.clock->Advance(500ms);
  CHECK(r.reconciler->Reconcile().size() == 1);
  r.clock->Advance(1500ms);
  (void)r.reconciler->Reconcile();
  CHECK(r.runner.applies() == applies + 1);
  r.clock->Advance(500ms);
  CHECK(r.reconciler->Reconcile().size() == 1);
  // The same cause again: counted once.
  CHECK(Has(r.metrics.Serialize(), "outbox_service_start_failures_total{service=\"b\"} 1"));

  // Another cause: counted again.
  r.runner.CannotStart("b", "cannot create the Kafka producer: another reason");
  r.clock->Advance(4s);
  CHECK(r.reconciler->Reconcile().size() == 1);
  CHECK(Has(r.metrics.Serialize(), "outbox_service_start_failures_total{service=\"b\"} 2"));

  r.runner.CanStart("b");
  r.clock->Advance(8s);
  CHECK(r.reconciler->Reconcile().empty());
  CHECK(r.runner.Claiming() == Names{"b", "c"});
  CHECK(Has(r.metrics.Serialize(), "outbox_service_running{service=\"b\"} 1"));
}

TEST_CASE(
    "a shrinking ownership stops the claims of the services given away before it returns and a "
    "shard that comes back restarts them",
    "[fleet]") {
  const Config file = FleetFile(kThreeServices);
  Rig r(file, Ownership::Shards({0, 1}, 2));
  CHECK(r.reconciler->Reconcile().empty());
  CHECK(r.runner.Claiming() == Names{"a", "b", "c"});

  r.reconciler->SetOwnership(Ownership::Shards({0}, 2));
  // No Reconcile yet: the claims stopped within SetOwnership.
  CHECK(r.runner.stop_order() == Names{"b", "c"});
  CHECK(r.runner.Claiming() == Names{"a"});
  CHECK(Has(r.metrics.Serialize(), "outbox_service_running{service=\"b\"} 0"));
  CHECK(r.reconciler->Reconcile().empty());
  CHECK(r.runner.Running().services.size() == 1);

  SECTION("the watchdog's suspension stops everything and its end restarts it") {
    r.reconciler->SetOwnership(Ownership::Shards({}, 2));
    CHECK(r.runner.Claiming().empty());
    r.reconciler->SetOwnership(Ownership::Shards({0, 1}, 2));
    CHECK(r.reconciler->Reconcile().empty());
    CHECK(r.runner.Claiming() == Names{"a", "b", "c"});
    CHECK(r.runner.starts("a") == 2);
  }
}

TEST_CASE("a service whose shard is taken away while it starts never claims", "[fleet]") {
  const Config file = FleetFile(kThreeServices);
  Rig r(file, Ownership::Shards({1}, 2));
  bool once = false;
  r.runner.on_apply = [&] {
    if (once) return;
    once = true;
    r.reconciler->SetOwnership(Ownership::Shards({}, 2));
  };
  CHECK(r.reconciler->Reconcile().empty());
  CHECK(r.runner.Claiming().empty());
}

TEST_CASE("the reconciler's timer puts back what stopped without any input", "[fleet]") {
  const Config file = FleetFile(kNoShards, false);
  Metrics metrics;
  FakeRunner runner(file);
  Reconciler::Options o;
  o.runner = &runner;
  o.registry = metrics.registry().get();
  o.tick = 20ms;
  Reconciler reconciler(o, file, Ownership::All());
  reconciler.Start();
  REQUIRE(WaitFor([&] { return runner.Claiming().size() == 3; }, 5s, 5ms));
  runner.Drop("b");
  REQUIRE(WaitFor([&] { return runner.starts("b") == 2; }, 5s, 5ms));
  reconciler.Stop();
  CHECK(runner.Claiming().size() == 3);
}

TEST_CASE(
    "a changed service that cannot start keeps running its old settings and waits for its backoff",
    "[fleet]") {
  const Config file = FleetFile(kNoShards, false);
  Rig r(file, Ownership::All());
  CHECK(r.reconciler->Reconcile().empty());
  r.runner.CannotStart("b", "cannot create the Kafka producer: x");
  Config changed = file;
  changed.services[1].batch_size = 7;
  r.reconciler->SetFile(changed);
  CHECK(r.reconciler->Reconcile().size() == 1);
  CHECK(r.runner.Claiming() == Names{"a", "b", "c"});
  CHECK(r.runner.Running().services[1].batch_size != 7);
  const int applies = r.runner.applies();
  CHECK(r.reconciler->Reconcile().empty());  // before its backoff: nothing tried
  CHECK(r.runner.applies() == applies);
  CHECK(Has(r.metrics.Serialize(), "outbox_service_start_failures_total{service=\"b\"} 1"));
  r.runner.CanStart("b");
  r.clock->Advance(1s);
  CHECK(r.reconciler->Reconcile().empty());
  CHECK(r.runner.Running().services[1].batch_size == 7);
}
