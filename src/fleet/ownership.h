#pragma once

#include <set>
#include <string>
#include <vector>

#include "config/config.h"

namespace outbox {

// Which services of the file this relay serves: all of them without a fleet,
// else those of the shards the group assigned to it (docs/DEPLOY.md "A
// fleet"). A value; pure.
class Ownership {
 public:
  // Every service (no fleet block).
  static Ownership All() { return Ownership(true, {}, 0); }
  // The services of `shards` of a topic with `partitions` partitions (0:
  // not known yet, nothing owned).
  static Ownership Shards(std::set<int> shards, int partitions) {
    return Ownership(false, std::move(shards), partitions);
  }

  bool Owns(const ServiceConfig& service) const;
  // `file` with only the services this relay serves, in the file's order.
  Config Filter(const Config& file) const;
  // The names of the services of `file` this relay serves.
  std::vector<std::string> Names(const Config& file) const;

  bool all() const { return all_; }
  const std::set<int>& shards() const { return shards_; }
  int partitions() const { return partitions_; }
  bool operator==(const Ownership&) const = default;

 private:
  Ownership(bool all, std::set<int> shards, int partitions)
      : all_(all), shards_(std::move(shards)), partitions_(partitions) {}

  bool all_;
  std::set<int> shards_;
  int partitions_;
};

// "0,3,7" (an empty set: "none").
std::string JoinShards(const std::set<int>& shards);

}  // namespace outbox
