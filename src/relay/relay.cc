#include "relay/relay.h"

#include "common/log.h"

namespace outbox {

void Relay::SetHeartbeats(bool on) {
  LivenessRegistry* registry = units_.options.liveness;
  if (registry == nullptr) return;
  const StallLimits limits = StallLimitsFor(units_.config);
  const auto beat = [&](const char* loop, std::chrono::milliseconds limit) {
    return on ? registry->Register(name() + "/" + loop, limit) : nullptr;
  };
  // A stopped service is not a stalled one: dropping every reference to its
  // heartbeats unregisters them.
  units_.claim.set_heartbeat(beat("claim", limits.claim));
  units_.settle.set_heartbeat(beat("settle", limits.settle));
  units_.housekeeping.set_heartbeat(beat("housekeeping", limits.housekeeping));
}

void Relay::Start() {
  const ServiceConfig& c = units_.config;
  LogInfo("relaying",
          {{"service", c.name},
           {"table", c.mysql.database + "." + c.mysql.table},
           {"server", c.mysql.host + ":" + std::to_string(c.mysql.port)},
           {"user", c.mysql.user},
           {"password_from", c.mysql.password_source.empty() ? "none" : c.mysql.password_source},
           {"bootstrap_servers", c.kafka.bootstrap_servers},
           {"topic", c.topic},
           {"batch_size", c.batch_size},
           {"poll_interval_ms", c.poll_interval_ms},
           {"wakeup", ToString(c.wakeup)},
           {"lease_ms", c.lease_ms},
           {"ordering", ToString(c.ordering)},
           {"dead_policy", ToString(c.dead_policy)},
           {"envelope", ToString(c.envelope)},
           {"max_attempts", c.retry.max_attempts}});
  SetHeartbeats(true);
  threads_[0] = std::thread([this] { units_.claim.Run(); });
  threads_[1] = std::thread([this] { units_.settle.Run(); });
  threads_[2] = std::thread([this] { units_.housekeeping.Run(); });
}

void Relay::StopClaims() {
  units_.claim.Stop();
  MutexLock lock(&claims_mu_);
  if (!threads_[0].joinable()) return;  // not started, or stopped already
  threads_[0].join();
  units_.queue->ClaimsEnded();  // no batch comes after these
  // A claim loop that ended is not a stalled one, however long the
  // service then takes to stop.
  units_.claim.set_heartbeat(nullptr);
}

void Relay::Stop(std::chrono::milliseconds grace) {
  StopClaims();
  if (!threads_[2].joinable()) return;  // not started, or stopped already
  units_.housekeeping.Stop();
  if (threads_[2].joinable()) threads_[2].join();
  if (!units_.queue->WaitEmpty(units_.options.clock->Now() + grace)) {
    LogWarn(
        "batches still in flight at shutdown; their rows stay SENDING until the lease expires "
        "and a relay reclaims them",
        {{"service", name()}, {"count", units_.queue->unsettled()}});
  }
  units_.queue->Halt();
  if (threads_[1].joinable()) threads_[1].join();
  SetHeartbeats(false);
}

}  // namespace outbox
