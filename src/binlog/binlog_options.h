#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "common/clock.h"
#include "config/config.h"

namespace outbox {
namespace binlog {

// How one replication stream (one database server, host:port) connects and
// how quickly it notices trouble. Plain values with their reasons; the relay
// fills them from a service's config (src/app/wakeup_sources.cc; docs/BINLOG.md).
struct BinlogOptions {
  // host, port, user, password, tls and connect_timeout_ms are used; database
  // and table are not (a stream serves every database of the server).
  MysqlConfig mysql;
  // Names this relay in the default server_id and in SHOW SLAVE HOSTS.
  std::string instance_id = "relay";
  // The replica server_id; 0 derives it with DeriveServerId. It must be
  // unique among the server's replicas: a second connection with the same id
  // makes the server drop the first.
  uint32_t server_id = 0;
  // The server sends a heartbeat after this much silence, so an idle stream
  // still proves it is alive (MASTER_HEARTBEAT_PERIOD).
  int heartbeat_ms = 1000;
  // No event and no heartbeat for this long: the stream is stalled and is
  // reconnected. Whole seconds (the client library's read timeout); at least
  // twice heartbeat_ms so that one late heartbeat is not a stall.
  int stall_timeout_ms = 4000;
  // Reconnect backoff: doubles from initial to max while attempts fail.
  int initial_backoff_ms = 250;
  int max_backoff_ms = 10000;
  // After another replica took this server_id: each reconnect drops the
  // other one, which may be a real replica (a MariaDB replica retries every
  // 60 s): disturb it at most this often until the id is fixed.
  int duplicate_backoff_ms = 300000;
  // Called from the stream's thread on every event, heartbeat and backoff
  // step (at least every heartbeat_ms while up, every second while waiting to
  // reconnect): the liveness hook for /healthz. Must be cheap.
  std::function<void()> on_progress;
  // Paces the reconnect backoff and times the silence behind a stall.
  ClockPtr clock = DefaultClock();
};

// The default replica server_id: 0x80000000 | (FNV-1a-32(instance_id + "/" +
// host + ":" + port) & 0x7FFFFFFF). The high half of the 32-bit range keeps
// clear of the small ids people give real replicas (1, 2, 101, ...); the hash
// keeps it stable across restarts and different for each relay instance and
// server. Never 0 (the server ignores a replica id of 0).
uint32_t DeriveServerId(const std::string& instance_id, const std::string& host, int port);

// The id a stream with `options` uses: options.server_id or the derived one.
uint32_t EffectiveServerId(const BinlogOptions& options);

// The host name a stream registers with (COM_REGISTER_SLAVE), which SHOW
// REPLICA HOSTS shows beside its server_id: "outbox-relay <instance_id>",
// cut to the 60 bytes the server keeps.
std::string ReportHost(const std::string& instance_id);

// The longest the stream's thread can legitimately go without calling
// on_progress: a connect (mysql.connect_timeout_ms), the setup statements
// before the dump starts, each bounded by the read timeout (stall_timeout_ms
// rounded up to whole seconds), and a second of backoff, plus 10 s. Past it
// the thread is hung in a call that ignores its timeouts: the liveness limit
// of the "binlog/<host>:<port>" loop (src/app/wakeup_sources.cc, docs/RUNBOOK.md).
std::chrono::milliseconds StreamStallLimit(const BinlogOptions& options);

}  // namespace binlog
}  // namespace outbox
