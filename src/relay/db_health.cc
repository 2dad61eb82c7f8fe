#include "relay/db_health.h"

#include "common/log.h"

namespace outbox {

DbHealth::DbHealth(std::string service, ServiceStats* metrics)
    : service_(std::move(service)), metrics_(metrics) {
  metrics_->Set(ServiceStats::Gauge::kDatabaseUp, 0);
}

void DbHealth::Note(const Status& s, std::string_view what, bool settle) {
  MutexLock lock(&mu_);
  if (settle) settle_failing_ = !s.ok();
  if (s.ok() && settle_failing_) return;
  if (s.ok()) {
    if (logged_down_) {
      LogInfo("database reachable again", {{"service", service_}});
      logged_down_ = false;
    }
    up_ = true;
    metrics_->Set(ServiceStats::Gauge::kDatabaseUp, 1);
    last_error_.clear();
    return;
  }
  up_ = false;
  metrics_->Set(ServiceStats::Gauge::kDatabaseUp, 0);
  if (!logged_down_ || last_error_ != s.message()) {
    LogWarn("database call failed",
            {{"service", service_}, {"call", what}, {"error", s.message()}});
    logged_down_ = true;
  }
  last_error_ = s.message();
}

void DbHealth::NoteAndBeat(const Status& s, std::string_view what, const HeartbeatPtr& beat,
                           bool settle) {
  Note(s, what, settle);
  if (beat) beat->Beat();
}

std::string DbHealth::LastError() const {
  MutexLock lock(&mu_);
  return last_error_;
}

}  // namespace outbox
