#include "fleet/shard.h"

namespace outbox {

uint32_t Murmur2(std::string_view data) {
  // Constants and steps of Kafka's Utils.murmur2 (MurmurHash2, seed
  // 0x9747b28c), on unsigned integers so that overflow is defined.
  constexpr uint32_t kSeed = 0x9747b28c, kM = 0x5bd1e995;
  constexpr int kR = 24;
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  const size_t length = data.size();
  uint32_t h = kSeed ^ static_cast<uint32_t>(length);
  for (size_t i = 0; i + 4 <= length; i += 4) {
    uint32_t k =
        p[i] | (p[i + 1] << 8) | (p[i + 2] << 16) | (static_cast<uint32_t>(p[i + 3]) << 24);
    k *= kM;
    k ^= k >> kR;
    k *= kM;
    h *= kM;
    h ^= k;
  }
  const size_t tail = length & ~size_t{3};
  switch (length % 4) {
    case 3:
      h ^= static_cast<uint32_t>(p[tail + 2]) << 16;
      [[fallthrough]];
    case 2:
      h ^= static_cast<uint32_t>(p[tail + 1]) << 8;
      [[fallthrough]];
    case 1:
      h ^= p[tail];
      h *= kM;
  }
  h ^= h >> 13;
  h *= kM;
  h ^= h >> 15;
  return h;
}

int ShardOf(const ServiceConfig& service, int partitions) {
  if (service.shard) return *service.shard;
  return static_cast<int>((Murmur2(service.name) & 0x7fffffffU) %
                          static_cast<uint32_t>(partitions));
}

std::vector<std::string> ShardProblems(const Config& config, int partitions) {
  std::vector<std::string> problems;
  for (size_t i = 0; i < config.services.size(); ++i) {
    const ServiceConfig& s = config.services[i];
    if (!s.shard || *s.shard < partitions) continue;
    problems.push_back(
        "services[" + std::to_string(i) + "].shard: " + std::to_string(*s.shard) +
        " is beyond the " + std::to_string(partitions) + " partitions of fleet.topic " +
        (config.fleet ? config.fleet->topic : std::string("?")) + " (shards are 0.." +
        std::to_string(partitions - 1) + "): no relay serves service " + s.name);
  }
  return problems;
}

}  // namespace outbox
