#include "app/fleet.h"

#include "common/log.h"
#include "fleet/shard.h"

namespace outbox {

namespace {

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ",") + i;
  return out.empty() ? "none" : out;
}

}  // namespace

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

Status Fleet::Start(std::function<void()> on_change) {
  if (!membership_) return Status::Ok();
  on_change_ = std::move(on_change);
  ExportOwned();  // 0 for every service until the first assignment
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
  if (metrics_) {
    for (const auto& old : file_.services) {
      const bool kept = std::any_of(file.services.begin(), file.services.end(),
                                    [&](const ServiceConfig& s) { return s.name == old.name; });
      if (!kept) metrics_->RemoveOwned(old.name);
    }
  }
  file_ = file;
}

void Fleet::ExportOwned() {
  if (!metrics_) return;
  MutexLock lock(&mu_);
  for (const auto& s : file_.services) metrics_->SetOwned(s.name, current_.Owns(s));
}

void Fleet::OnAssignment(const GroupAssignment& a) {
  std::vector<std::string> problems;
  {
    MutexLock lock(&mu_);
    current_ = Ownership::Shards(a.shards, a.partitions);
    LogInfo("fleet: assignment changed", {{"kind", ToString(a.kind)},
                                          {"shards_changed", JoinShards(a.changed)},
                                          {"shards", JoinShards(a.shards)},
                                          {"partitions", a.partitions},
                                          {"services", Join(current_.Names(file_))}});
    if (a.partitions > 0 && a.partitions != reported_partitions_) {
      reported_partitions_ = a.partitions;
      problems = ShardProblems(file_, a.partitions);
    }
  }
  for (const auto& p : problems) LogError("fleet: a service no relay can serve", {{"error", p}});
  metrics_->AddRebalance(ToString(a.kind));
  metrics_->SetShardsOwned(a.shards.size());
  metrics_->SetMember(membership_->Member());
  if (on_change_) on_change_();
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
