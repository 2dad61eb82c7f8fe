#include "fleet/shard.h"

#include <catch2/catch.hpp>

#include "fleet/ownership.h"

using namespace outbox;

namespace {

ServiceConfig Named(const std::string& name, std::optional<int> shard = std::nullopt) {
  ServiceConfig s;
  s.name = name;
  s.shard = shard;
  return s;
}

Config File(std::vector<ServiceConfig> services) {
  Config c;
  c.fleet = FleetConfig{"g", "shards", 10000, false, {}};
  c.services = std::move(services);
  return c;
}

}  // namespace

TEST_CASE("murmur2 gives what Kafka's Java client computes for the same bytes", "[fleet]") {
  // Kafka's own test vectors (UtilsTest.testMurmur2), as signed 32-bit values.
  struct Case {
    const char* data;
    int32_t java;
  };
  const Case cases[] = {{"21", -973932308},
                        {"foobar", -790332482},
                        {"a-little-bit-long-string", -985981536},
                        {"a-little-bit-longer-string", -1486304829},
                        {"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971},
                        {"abc", 479470107}};
  for (const Case& c : cases) {
    INFO(c.data);
    CHECK(static_cast<int32_t>(Murmur2(c.data)) == c.java);
  }
}

TEST_CASE("a service's default shard is the Java partitioner's partition for its name", "[fleet]") {
  // toPositive(murmur2("foobar")) % 12, as DefaultPartitioner computes it.
  const uint32_t positive = static_cast<uint32_t>(-790332482) & 0x7fffffffU;
  CHECK(ShardOf(Named("foobar"), 12) == static_cast<int>(positive % 12));
  CHECK(ShardOf(Named("foobar"), 1) == 0);
  SECTION("services[].shard wins") { CHECK(ShardOf(Named("foobar", 7), 12) == 7); }
}

TEST_CASE("default shards spread services over the partitions", "[fleet]") {
  std::vector<int> per_shard(10, 0);
  for (int i = 0; i < 300; ++i) per_shard[ShardOf(Named("svc-" + std::to_string(i)), 10)]++;
  for (int n : per_shard) {
    CHECK(n >= 15);  // 30 each on average
    CHECK(n <= 50);
  }
}

TEST_CASE("a shard beyond the topic's partitions is named with the service it strands", "[fleet]") {
  const Config c = File({Named("a", 3), Named("b"), Named("c", 12)});
  const auto problems = ShardProblems(c, 12);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].find("services[2].shard: 12 is beyond the 12 partitions of fleet.topic "
                         "shards (shards are 0..11)") != std::string::npos);
  CHECK(problems[0].find("service c") != std::string::npos);
  CHECK(ShardProblems(c, 13).empty());
}

TEST_CASE("ownership keeps the file's services of the owned shards in the file's order",
          "[fleet]") {
  const Config file = File({Named("a", 0), Named("b", 1), Named("c", 2), Named("d", 1)});
  SECTION("without a fleet, every service") {
    CHECK(Ownership::All().Names(file) == std::vector<std::string>{"a", "b", "c", "d"});
  }
  SECTION("the assigned shards' services") {
    const Ownership o = Ownership::Shards({1, 2}, 4);
    CHECK(o.Names(file) == std::vector<std::string>{"b", "c", "d"});
    const Config running = o.Filter(file);
    REQUIRE(running.services.size() == 3);
    CHECK(running.services[0].name == "b");
    CHECK(running.fleet == file.fleet);
  }
  SECTION("nothing before the partition count is known") {
    CHECK(Ownership::Shards({0, 1, 2}, 0).Names(file).empty());
  }
  SECTION("a shard beyond the partitions is nobody's") {
    CHECK(Ownership::Shards({0, 1, 2}, 2).Names(Config(File({Named("x", 2)}))).empty());
  }
  CHECK(JoinShards({}) == "none");
  CHECK(JoinShards({0, 3, 7}) == "0,3,7");
}
