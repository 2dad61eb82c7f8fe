// Failover wiring (issue 25), kept apart so that it ports as one piece: what
// the claim loop does when its store's session was replaced (SPEC "Failover").
#include <spdlog/spdlog.h>

#include "relay/relay.h"

namespace outbox {

bool Relay::NoteSession() {
  // Failover wiring (issue 25). The store replaces a session that was lost
  // or answered read-only on its next statement, through mysql.host.
  const SessionInfo session = claimer_.ClaimSession();
  if (session.connects == seen_connects_) return false;
  const bool first = seen_connects_ == 0;
  seen_connects_ = session.connects;
  if (!first && session.server_identity != seen_server_) {
    spdlog::warn(
        "service {}: the database server behind {}:{} changed from {} to {} (a failover); "
        "following it",
        name(), options_.config.mysql.host, options_.config.mysql.port, seen_server_,
        session.server_identity);
    metrics_.database_server_changes->Increment();
    wakeup_->DatabaseServerChanged();
  }
  seen_server_ = session.server_identity;
  return !first;
}

}  // namespace outbox
