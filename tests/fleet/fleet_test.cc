#include "fleet/fleet.h"

#include <catch2/catch.hpp>

#include "config/config_loader.h"
#include "fakes/fake_membership.h"
#include "fleet/shard.h"
#include "fleet_files.h"

using namespace outbox;
using namespace outbox::testing;

namespace {

using Kind = GroupAssignment::Kind;

struct Rig {
  explicit Rig(const Config& file) {
    auto m = std::make_unique<FakeMembership>();
    member = m.get();
    fleet = std::make_unique<Fleet>(file, std::move(m), &metrics);
    REQUIRE(fleet
                ->Start([this](const Ownership& o) {
                  ++changes;
                  followed = o;
                })
                .ok());
  }
  Metrics metrics;
  FakeMembership* member;
  std::unique_ptr<Fleet> fleet;
  int changes = 0;
  Ownership followed = Ownership::Shards({}, 0);
};

}  // namespace

TEST_CASE("a relay in a fleet serves nothing until the group assigns it shards", "[fleet]") {
  Rig r(FleetFile(kThreeServices));
  CHECK(r.fleet->Current().Names(FleetFile(kThreeServices)).empty());
  const std::string m = r.metrics.Serialize();
  CHECK(Has(m, "outbox_fleet_member 0"));
  CHECK(Has(m, "outbox_fleet_shards_owned 0"));
  std::string body;
  CHECK_FALSE(r.fleet->Readyz(&body));
  CHECK(body == "fleet g on shards: not a member: joining the group\n");
}

TEST_CASE("an assignment says what the relay owns and moves the fleet's metrics", "[fleet]") {
  const Config file = FleetFile(kThreeServices);
  Rig r(file);
  r.member->Assign({Kind::kAssigned, {1}, {1}, 2});
  CHECK(r.changes == 1);
  CHECK(r.fleet->Current().Names(file) == std::vector<std::string>{"b", "c"});
  CHECK(r.followed == r.fleet->Current());
  std::string m = r.metrics.Serialize();
  CHECK(Has(m, "outbox_fleet_member 1"));
  CHECK(Has(m, "outbox_fleet_shards_owned 1"));
  CHECK(Has(m, "outbox_fleet_rebalances_total{kind=\"assigned\"} 1"));
  CHECK(Has(m, "outbox_fleet_rebalances_total{kind=\"lost\"} 0"));
  CHECK(Has(m, "outbox_fleet_rebalances_total{kind=\"suspended\"} 0"));
  std::string body;
  CHECK(r.fleet->Readyz(&body));
  CHECK(body == "fleet g on shards: member, shards 1 of 2\n");

  SECTION("a lost assignment owns nothing and is not ready") {
    r.member->problem = "the group lost this relay's assignment; rejoining";
    r.member->Assign({Kind::kLost, {}, {1}, 2}, false);
    CHECK(r.changes == 2);
    CHECK(r.fleet->Current().Names(file).empty());
    CHECK(r.followed.Names(file).empty());
    m = r.metrics.Serialize();
    CHECK(Has(m, "outbox_fleet_rebalances_total{kind=\"lost\"} 1"));
    CHECK(Has(m, "outbox_fleet_member 0"));
    body.clear();
    CHECK_FALSE(r.fleet->Readyz(&body));
  }
  SECTION("a member that owns nothing is ready") {
    r.member->Assign({Kind::kRevoked, {}, {1}, 2});
    body.clear();
    CHECK(r.fleet->Readyz(&body));
    CHECK(body == "fleet g on shards: member, shards none of 2\n");
  }
  SECTION("a suspension by the watchdog serves nothing, is not ready, and its end serves again") {
    r.member->problem = "no answer from the group's coordinator for 4000 ms";
    r.member->Assign({Kind::kSuspended, {}, {1}, 2}, false);
    CHECK(r.followed.Names(file).empty());
    body.clear();
    CHECK_FALSE(r.fleet->Readyz(&body));
    CHECK(Has(body, "not a member: no answer from the group's coordinator"));
    r.member->Assign({Kind::kResumed, {1}, {1}, 2});
    CHECK(r.followed.Names(file) == std::vector<std::string>{"b", "c"});
    CHECK(Has(r.metrics.Serialize(), "outbox_fleet_rebalances_total{kind=\"resumed\"} 1"));
  }
  SECTION("the member gauge follows the membership on the tick, whatever event was missed") {
    r.member->member = false;  // as after a fatal error, before any event
    r.fleet->ExportMember();
    CHECK(Has(r.metrics.Serialize(), "outbox_fleet_member 0"));
  }
}

TEST_CASE("without a fleet block the relay owns every service and exports no fleet metrics",
          "[fleet]") {
  Metrics metrics;
  const Config file =
      LoadConfigText(
          "kafka: {bootstrap_servers: k:9092}\nservices:\n  - {name: a, mysql: {user: u, "
          "database: a}}\n",
          "c.yaml")
          .config;
  Fleet fleet(file, nullptr, &metrics);
  REQUIRE(fleet.Start(nullptr).ok());
  CHECK(fleet.metrics() == nullptr);
  CHECK(fleet.Current().Names(file) == std::vector<std::string>{"a"});
  std::string body;
  CHECK(fleet.Readyz(&body));
  CHECK(body.empty());
  CHECK_FALSE(Has(metrics.Serialize(), "outbox_fleet"));
  CHECK_FALSE(Has(metrics.Serialize(), "outbox_service_owned"));
}

TEST_CASE("a changed partition count moves the services to their new shards on every member",
          "[fleet]") {
  std::string services;
  for (int i = 0; i < 12; ++i)
    services += "  - {name: s" + std::to_string(i) + ", mysql: {user: u, database: d}}\n";
  const Config file = FleetFile(services);
  Rig r(file);
  r.member->Assign({Kind::kAssigned, {0}, {0}, 2});
  const auto before = r.followed.Names(file);
  // The member read 3 partitions; its shards did not change.
  r.member->Assign({Kind::kResized, {0}, {}, 3});
  const auto after = r.followed.Names(file);
  CHECK(before != after);
  for (const auto& s : file.services) CHECK(r.followed.Owns(s) == (ShardOf(s, 3) == 0));
  CHECK(Has(r.metrics.Serialize(), "outbox_fleet_rebalances_total{kind=\"resized\"} 1"));
}
