#include "fleet/fleet.h"

#include "common/log.h"
#include "common/text.h"
#include "fleet/shard.h"

namespace outbox {

Fleet::Fleet(const Config& file, MembershipPtr membership, Metrics* metrics)
    : config_(file.fleet),
      membership_(std::move(membership)),
      current_(membership_ ? Ownership::Shards({}, 0) : Ownership::All()),
      file_(file) {
  if (membership_) {
    metrics_ = std::make_unique<FleetMetrics>(*metrics->registry());
    metrics_->SetMember(false);
    metrics_->SetShardsOwned(0);
  }
}

Fleet::~Fleet() { Stop(); }

Status Fleet::Start(Follow follow) {
  if (!membership_) return Status::Ok();
  follow_ = std::move(follow);
  return membership_->Start([this](const GroupAssignment& a) { OnAssignment(a); });
}

void Fleet::Stop() {
  if (membership_) membership_->Stop();
}

Ownership Fleet::Current() const {
  MutexLock lock(&mu_);
  return current_;
}

void Fleet::SetFile(const Config& file) {
  MutexLock lock(&mu_);
  file_ = file;
}

void Fleet::ExportMember() {
  if (membership_) metrics_->SetMember(membership_->Member());
}

void Fleet::OnAssignment(const GroupAssignment& a) {
  std::vector<std::string> problems;
  Ownership now = Ownership::Shards(a.shards, a.partitions);
  {
    MutexLock lock(&mu_);
    current_ = now;
    LogInfo("fleet: assignment changed", {{"kind", ToString(a.kind)},
                                          {"shards_changed", JoinShards(a.changed)},
                                          {"shards", JoinShards(a.shards)},
                                          {"partitions", a.partitions},
                                          {"services", JoinNames(current_.Names(file_))}});
    if (a.partitions > 0 && a.partitions != reported_partitions_) {
      reported_partitions_ = a.partitions;
      problems = ShardProblems(file_, a.partitions);
    }
  }
  for (const auto& p : problems) LogError("fleet: a service no relay can serve", {{"error", p}});
  metrics_->AddRebalance(ToString(a.kind));
  metrics_->SetShardsOwned(a.shards.size());
  metrics_->SetMember(membership_->Member());
  if (follow_) follow_(now);
}

bool Fleet::Readyz(std::string* body) const {
  if (!membership_) return true;
  const bool member = membership_->Member();
  const Ownership now = Current();
  *body += "fleet " + config_->group_id + " on " + config_->topic + ": ";
  if (member) {
    *body += "member, shards " + JoinShards(now.shards()) + " of " +
             std::to_string(now.partitions()) + "\n";
  } else {
    const std::string why = membership_->Problem();
    *body += "not a member" + (why.empty() ? std::string() : ": " + why) + "\n";
  }
  return member;
}

}  // namespace outbox
