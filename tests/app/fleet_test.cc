#include "app/fleet.h"

#include <catch2/catch.hpp>

#include "config/config_loader.h"
#include "fakes/fake_membership.h"

using namespace outbox;
using namespace outbox::testing;

namespace {

using Kind = GroupAssignment::Kind;

Config File(const std::string& services) {
  return LoadConfigText(
             "fleet: {group_id: g, topic: shards}\nkafka: {bootstrap_servers: k:9092}\n"
             "services:\n" +
                 services,
             "c.yaml")
      .config;
}

const std::string kThree =
    "  - {name: a, shard: 0, mysql: {user: u, database: a}}\n"
    "  - {name: b, shard: 1, mysql: {user: u, database: b}}\n"
    "  - {name: c, shard: 1, mysql: {user: u, database: c}}\n";

bool Has(const std::string& text, const std::string& line) {
  return text.find(line) != std::string::npos;
}

struct Rig {
  explicit Rig(const Config& file) {
    auto m = std::make_unique<FakeMembership>();
    member = m.get();
    fleet = std::make_unique<Fleet>(file, std::move(m), &metrics);
    REQUIRE(fleet->Start([this] { ++changes; }).ok());
  }
  Metrics metrics;
  FakeMembership* member;
  std::unique_ptr<Fleet> fleet;
  int changes = 0;
};

}  // namespace

TEST_CASE("a relay in a fleet serves nothing until the group assigns it shards", "[fleet]") {
  Rig r(File(kThree));
  CHECK(r.fleet->Current().Names(File(kThree)).empty());
  const std::string m = r.metrics.Serialize();
  CHECK(Has(m, "outbox_fleet_member 0"));
  CHECK(Has(m, "outbox_fleet_shards_owned 0"));
  CHECK(Has(m, "outbox_service_owned{service=\"a\"} 0"));
  std::string body;
  CHECK_FALSE(r.fleet->Readyz(&body));
  CHECK(body == "fleet g on shards: not a member: joining the group\n");
}

TEST_CASE("an assignment says what the relay owns and moves the fleet's metrics", "[fleet]") {
  const Config file = File(kThree);
  Rig r(file);
  r.member->Assign({Kind::kAssigned, {1}, {1}, 2});
  CHECK(r.changes == 1);
  CHECK(r.fleet->Current().Names(file) == std::vector<std::string>{"b", "c"});
  r.fleet->ExportOwned();
  std::string m = r.metrics.Serialize();
  CHECK(Has(m, "outbox_fleet_member 1"));
  CHECK(Has(m, "outbox_fleet_shards_owned 1"));
  CHECK(Has(m, "outbox_fleet_rebalances_total{kind=\"assigned\"} 1"));
  CHECK(Has(m, "outbox_fleet_rebalances_total{kind=\"lost\"} 0"));
  CHECK(Has(m, "outbox_service_owned{service=\"a\"} 0"));
  CHECK(Has(m, "outbox_service_owned{service=\"b\"} 1"));
  std::string body;
  CHECK(r.fleet->Readyz(&body));
  CHECK(body == "fleet g on shards: member, shards 1 of 2\n");

  SECTION("a lost assignment owns nothing and is not ready") {
    r.member->problem = "the group lost this relay's assignment; rejoining";
    r.member->Assign({Kind::kLost, {}, {1}, 2}, false);
    CHECK(r.changes == 2);
    CHECK(r.fleet->Current().Names(file).empty());
    r.fleet->ExportOwned();
    m = r.metrics.Serialize();
    CHECK(Has(m, "outbox_fleet_rebalances_total{kind=\"lost\"} 1"));
    CHECK(Has(m, "outbox_service_owned{service=\"b\"} 0"));
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
  SECTION("a service gone from the file loses its owned series") {
    r.fleet->SetFile(File("  - {name: b, shard: 1, mysql: {user: u, database: b}}\n"));
    r.fleet->ExportOwned();
    m = r.metrics.Serialize();
    CHECK_FALSE(Has(m, "outbox_service_owned{service=\"a\"}"));
    CHECK(Has(m, "outbox_service_owned{service=\"b\"} 1"));
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
  CHECK(fleet.Current().Names(file) == std::vector<std::string>{"a"});
  std::string body;
  CHECK(fleet.Readyz(&body));
  CHECK(body.empty());
  CHECK_FALSE(Has(metrics.Serialize(), "outbox_fleet"));
  CHECK_FALSE(Has(metrics.Serialize(), "outbox_service_owned"));
}
