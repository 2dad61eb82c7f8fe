// The pure part of a reload (src/config/config_diff.h) and the `paused` key.

#include <catch2/catch.hpp>

#include "config/config_diff.h"
#include "config/config_loader.h"

using namespace outbox;

namespace {

// A config whose top level is `top` (after instance_id) and whose services
// are `services`, each a YAML flow mapping without name and mysql, keyed by
// name; every service gets a database of its own name.
Config Load(const std::string& top,
            const std::vector<std::pair<std::string, std::string>>& services) {
  std::string yaml = "instance_id: r1\n" + top + "services:\n";
  for (const auto& [name, extra] : services) {
    yaml += "  - {name: " + name + ", mysql: {user: u, database: " + name + "}";
    if (!extra.empty()) yaml += ", " + extra;
    yaml += "}\n";
  }
  return LoadConfigText(yaml, "c.yaml").config;
}

const std::string kTop = "kafka: {bootstrap_servers: k1:9092}\n";

using Names = std::vector<std::string>;

Names ChangedNames(const ReloadPlan& p) {
  Names out;
  for (const auto& c : p.changed) out.push_back(c.name);
  return out;
}

}  // namespace

TEST_CASE("a reload plan sorts services into added and removed and changed and unchanged ones",
          "[config]") {
  struct Case {
    const char* what;
    std::vector<std::pair<std::string, std::string>> before, after;
    Names added, removed, changed, unchanged;
  };
  const std::vector<Case> cases = {
      {"the same file", {{"a", ""}, {"b", ""}}, {{"a", ""}, {"b", ""}}, {}, {}, {}, {"a", "b"}},
      {"a service added", {{"a", ""}}, {{"a", ""}, {"b", ""}}, {"b"}, {}, {}, {"a"}},
      {"a service removed", {{"a", ""}, {"b", ""}}, {{"b", ""}}, {}, {"a"}, {}, {"b"}},
      {"a service changed",
       {{"a", ""}, {"b", ""}},
       {{"a", "batch_size: 7"}, {"b", ""}},
       {},
       {},
       {"a"},
       {"b"}},
      {"a service paused",
       {{"a", ""}, {"b", ""}},
       {{"a", ""}, {"b", "paused: true"}},
       {},
       {},
       {"b"},
       {"a"}},
      {"services reordered",
       {{"a", ""}, {"b", ""}},
       {{"b", ""}, {"a", ""}},
       {},
       {},
       {},
       {"b", "a"}},
      {"all at once",
       {{"a", ""}, {"b", ""}, {"c", ""}},
       {{"d", ""}, {"c", "poll_interval_ms: 5"}, {"a", ""}},
       {"d"},
       {"b"},
       {"c"},
       {"a"}},
      {"a default written out is no change",
       {{"a", ""}},
       {{"a", "batch_size: 500"}},
       {},
       {},
       {},
       {"a"}},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    const ReloadPlan p = PlanReload(Load(kTop, c.before), Load(kTop, c.after));
    CHECK(p.error.empty());
    CHECK(p.restart_only.empty());
    CHECK(p.added == c.added);
    CHECK(p.removed == c.removed);
    CHECK(ChangedNames(p) == c.changed);
    CHECK(p.unchanged == c.unchanged);
  }
}

TEST_CASE("a changed service names the keys that differ", "[config]") {
  struct Case {
    const char* before;
    const char* after;
    Names keys;
  };
  const std::vector<Case> cases = {
      {"", "paused: true", {"paused"}},
      {"paused: true", "paused: false", {"paused"}},
      {"", "retry: {max_attempts: 2}, wakeup: binlog", {"wakeup", "retry"}},
      {"", "kafka: {properties: {linger.ms: '5'}}", {"kafka"}},
      {"topic: x", "topic: y, gauge_interval_ms: 1000", {"topic", "gauge_interval_ms"}},
  };
  for (const Case& c : cases) {
    INFO(c.before << " -> " << c.after);
    const ReloadPlan p = PlanReload(Load(kTop, {{"a", c.before}}), Load(kTop, {{"a", c.after}}));
    REQUIRE(p.changed.size() == 1);
    CHECK(p.changed[0].keys == c.keys);
  }
  // The database moved: a mysql change.
  Config moved = Load(kTop, {{"a", ""}});
  moved.services[0].mysql.host = "db2";
  const ReloadPlan p = PlanReload(Load(kTop, {{"a", ""}}), moved);
  REQUIRE(p.changed.size() == 1);
  CHECK(p.changed[0].keys == Names{"mysql"});
}

TEST_CASE("keys that need a restart are reported and keep their running values", "[config]") {
  const Config running = Load("http: {listen: 127.0.0.1:1}\nlog: {level: info}\n" + kTop,
                              {{"a", ""}, {"b", "kafka: {bootstrap_servers: k9:9092}"}});
  Config loaded = Load(
      "http: {listen: 127.0.0.1:2}\nlog: {level: debug, format: text}\n"
      "kafka: {bootstrap_servers: k2:9092, properties: {linger.ms: '9'}}\n",
      {{"a", ""}, {"b", "kafka: {bootstrap_servers: k9:9092}"}});
  loaded.instance_id = "r2";
  const ReloadPlan p = PlanReload(running, loaded);
  CHECK(p.error.empty());
  CHECK(p.restart_only == Names{"instance_id", "http.listen", "log.level", "log.format", "kafka"});
  CHECK(p.config.instance_id == "r1");
  CHECK(p.config.http_listen == "127.0.0.1:1");
  CHECK(p.config.log_level == "info");
  CHECK(p.config.log_format == "json");
  CHECK(p.config.kafka == running.kafka);
  // The services stay on the running top-level block, so none changed; b's
  // own bootstrap_servers still wins over it.
  CHECK(p.unchanged == Names{"a", "b"});
  CHECK(p.config.services[0].kafka.bootstrap_servers == "k1:9092");
  CHECK(p.config.services[1].kafka.bootstrap_servers == "k9:9092");
  CHECK(p.config.services[0].kafka.properties.empty());
}

TEST_CASE("a service's own kafka change applies while the top-level block keeps its value",
          "[config]") {
  const Config running = Load(kTop, {{"a", ""}});
  const Config loaded = Load("kafka: {bootstrap_servers: k2:9092}\n",
                             {{"a", "kafka: {properties: {acks: all}}"}, {"b", ""}});
  const ReloadPlan p = PlanReload(running, loaded);
  CHECK(p.restart_only == Names{"kafka"});
  REQUIRE(p.changed.size() == 1);
  CHECK(p.changed[0].keys == Names{"kafka"});
  CHECK(p.added == Names{"b"});
  const KafkaConfig& a = p.config.services[0].kafka;
  CHECK(a.bootstrap_servers == "k1:9092");
  CHECK(a.properties == std::map<std::string, std::string>{{"acks", "all"}});
  CHECK(p.config.services[1].kafka.bootstrap_servers == "k1:9092");
}

TEST_CASE("a reload whose services need the changed top-level kafka block is refused", "[config]") {
  const Config running =
      Load("kafka: {properties: {acks: all}}\n", {{"a", "kafka: {bootstrap_servers: k9:9092}"}});
  const Config loaded = Load(kTop, {{"a", ""}});
  const ReloadPlan p = PlanReload(running, loaded);
  CHECK(p.error ==
        "services[0].kafka.bootstrap_servers: would come from the changed top-level kafka block, "
        "which only a restart applies; set it in the service or restart");
}

TEST_CASE("MergeKafka lays a service's own block over the top-level one", "[config]") {
  const KafkaConfig base{"k1:9092", {{"acks", "all"}, {"linger.ms", "5"}}};
  CHECK(MergeKafka(base, {}) == base);
  const KafkaConfig merged = MergeKafka(base, {"k2:9092", {{"linger.ms", "0"}}});
  CHECK(merged.bootstrap_servers == "k2:9092");
  CHECK(merged.properties ==
        std::map<std::string, std::string>{{"acks", "all"}, {"linger.ms", "0"}});
}

TEST_CASE("paused is false by default and takes true or false", "[config]") {
  CHECK_FALSE(Load(kTop, {{"a", ""}}).services[0].paused);
  CHECK(Load(kTop, {{"a", "paused: true"}}).services[0].paused);
  CHECK_FALSE(Load(kTop, {{"a", "paused: false"}}).services[0].paused);
  try {
    Load(kTop, {{"a", "paused: yes"}});
    FAIL("paused: yes was accepted");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()) ==
          "c.yaml:4:54: services[0].paused: must be one of false | true (got \"yes\")");
  }
}

TEST_CASE("the fleet block is parsed with its defaults and only a restart changes it",
          "[config][fleet]") {
  const std::string fleet =
      "fleet: {group_id: g1, topic: shards, kafka: {properties: {security.protocol: ssl}}}\n";
  const Config running = Load(fleet + kTop, {{"a", "shard: 3"}, {"b", ""}});
  REQUIRE(running.fleet.has_value());
  CHECK(running.fleet->group_id == "g1");
  CHECK(running.fleet->topic == "shards");
  CHECK(running.fleet->session_timeout_ms == 10000);
  CHECK_FALSE(running.fleet->static_membership);
  // The group's cluster is the top-level kafka block with its own on top.
  CHECK(running.fleet->kafka.bootstrap_servers == "k1:9092");
  CHECK(running.fleet->kafka.properties.at("security.protocol") == "ssl");
  CHECK(running.services[0].shard == 3);
  CHECK_FALSE(running.services[1].shard.has_value());

  const Config loaded =
      Load("fleet: {group_id: g2, topic: shards, session_timeout_ms: 6000}\n" + kTop,
           {{"a", "shard: 4"}, {"b", ""}});
  const ReloadPlan p = PlanReload(running, loaded);
  CHECK(p.restart_only == Names{"fleet"});
  CHECK(p.config.fleet == running.fleet);
  // A service's shard is its own key: the service may move.
  REQUIRE(p.changed.size() == 1);
  CHECK(p.changed[0].keys == Names{"shard"});
}
