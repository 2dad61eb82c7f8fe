#include "fleet/ownership.h"

#include "common/text.h"
#include "fleet/shard.h"

namespace outbox {

bool Ownership::Owns(const ServiceConfig& service) const {
  if (all_) return true;
  if (partitions_ <= 0) return false;
  const int shard = ShardOf(service, partitions_);
  return shard < partitions_ && shards_.count(shard) > 0;
}

Config Ownership::Filter(const Config& file) const {
  Config out = file;
  std::erase_if(out.services, [this](const ServiceConfig& s) { return !Owns(s); });
  return out;
}

std::vector<std::string> Ownership::Names(const Config& file) const {
  std::vector<std::string> names;
  for (const auto& s : file.services)
    if (Owns(s)) names.push_back(s.name);
  return names;
}

std::string JoinShards(const std::set<int>& shards) { return JoinNumbers(shards); }

}  // namespace outbox
