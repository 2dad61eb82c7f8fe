#pragma once

#include <map>
#include <memory>
#include <string>

#include "common/liveness.h"
#include "config/config.h"
#include "relay/relay.h"

namespace outbox {
namespace binlog {
class BinlogStreams;
struct BinlogOptions;
}  // namespace binlog

// The process's binlog streams for `wakeup: binlog` services
// (docs/BINLOG.md "How it works"): one BinlogStreams, one stream per
// database server (host:port), opened with the credentials of the first
// service in the file on that server and the replica server_id of
// mysql.binlog_server_id (0 or absent: derived from instance_id, host and
// port). Each stream's thread is a loop of options.liveness, named
// "binlog/<host>:<port>" (a stream that hangs makes /healthz answer 503).
// Lifetime: must outlive every Relay it wired (declare it before them).
// Not thread-safe: one thread at a time (the daemon's setup thread, then its
// reload thread).
class WakeupSources {
 public:
  WakeupSources();
  ~WakeupSources();
  // Sets options->wakeup to a BinlogWakeupSource for a `wakeup: binlog` service;
  // leaves it null (a PollWakeupSource) otherwise. REQUIRES: options->config set.
  void Wire(const Config& config, RelayOptions* options);
  // After a reload stopped the relays it removed or changed and before it
  // wires the new ones: a server's stream whose first service (its
  // credentials, its server_id) is another in `config` is reopened with that
  // one's (its services poll meanwhile); a stream with no `wakeup: binlog`
  // service left on its server is closed. Logs each.
  void Update(const Config& config);

 private:
  void WatchStream(LivenessRegistry* liveness, binlog::BinlogOptions* b);

  // What a server's stream was opened with.
  struct Opened {
    MysqlConfig mysql;
    uint32_t server_id;
  };

  std::unique_ptr<binlog::BinlogStreams> streams_;    // created on the first binlog service
  std::map<std::string, HeartbeatPtr> stream_beats_;  // by ServerKey (config/config.h)
  std::map<std::string, Opened> opened_;              // by ServerKey
  LivenessRegistry* liveness_ = nullptr;              // the relays' registry, for reopens
};

// `check --connect` for `wakeup: binlog`: per server with such a service,
// binlog::CheckBinlog over the databases of its binlog services; prints each
// problem with its fix, or the summary. Returns the number of problems.
int CheckBinlogWakeups(const Config& config);

}  // namespace outbox
