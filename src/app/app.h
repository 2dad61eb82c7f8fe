#pragma once

#include "config/config_loader.h"

namespace outbox {

// Runs the daemon until SIGTERM/SIGINT: one Relay per service, one Kafka
// producer per distinct cluster config, the HTTP endpoints. Returns the exit
// code (0 after a graceful stop, 1 if it could not start).
int RunDaemon(const LoadedConfig& loaded);

}  // namespace outbox
