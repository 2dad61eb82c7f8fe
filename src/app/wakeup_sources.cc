#include "app/wakeup_sources.h"

#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "binlog/binlog_check.h"
#include "binlog/binlog_options.h"
#include "binlog/binlog_streams.h"
#include "binlog/binlog_wakeup_source.h"
#include "common/log.h"

namespace outbox {

namespace {

// As BinlogStreams tells servers apart (host names in any case).
bool SameServer(const MysqlConfig& a, const MysqlConfig& b) { return ServerKey(a) == ServerKey(b); }

// The stream of a server uses the first service in the file on it, whatever
// its wakeup (docs/CONFIG.md "wakeup").
const ServiceConfig& FirstOnServer(const Config& config, const MysqlConfig& mysql) {
  for (const auto& s : config.services) {
    if (SameServer(s.mysql, mysql)) return s;
  }
  return config.services.front();  // unreachable: the service itself is one
}

// The options of the stream a service with wakeup: binlog shares.
binlog::BinlogOptions StreamOptions(const Config& config, const ServiceConfig& s) {
  binlog::BinlogOptions b;
  b.mysql = FirstOnServer(config, s.mysql).mysql;
  b.instance_id = config.instance_id;
  b.server_id = s.mysql.binlog_server_id.value_or(0);
  return b;
}

}  // namespace

WakeupSources::WakeupSources() = default;
WakeupSources::~WakeupSources() = default;

void WakeupSources::Wire(const Config& config, RelayOptions* options) {
  const ServiceConfig& s = options->config;
  if (s.wakeup != WakeupMode::kBinlog) return;
  if (!streams_) streams_ = std::make_unique<binlog::BinlogStreams>();
  binlog::BinlogOptions b = StreamOptions(config, s);
  liveness_ = options->liveness;
  // BinlogStreams opens the stream with the first subscriber's options.
  opened_.try_emplace(ServerKey(b.mysql), Opened{b.mysql, b.server_id});
  WatchStream(options->liveness, &b);
  options->wakeup = std::make_unique<binlog::BinlogWakeupSource>(options->clock, *streams_, b,
                                                                 s.mysql.database, s.mysql.table);
}

// BinlogStreams opens a server's stream with the options of its first subscriber,
// so only the first service on each of its servers (its ServerKey) registers
// the stream's loop: a second heartbeat would never be beaten.
void WakeupSources::WatchStream(LivenessRegistry* liveness, binlog::BinlogOptions* b) {
  if (liveness == nullptr) return;
  const std::string server = ServerKey(b->mysql);
  HeartbeatPtr& beat = stream_beats_[server];
  if (beat) return;
  beat = liveness->Register("binlog/" + server, binlog::StreamStallLimit(*b));
  b->on_progress = [beat = beat] { beat->Beat(); };
}

void WakeupSources::Update(const Config& config) {
  for (auto it = opened_.begin(); it != opened_.end();) {
    const std::string& server = it->first;
    auto first = std::find_if(config.services.begin(), config.services.end(), [&](const auto& s) {
      return s.wakeup == WakeupMode::kBinlog && ServerKey(s.mysql) == server;
    });
    if (first == config.services.end()) {
      streams_->Close(server);
      stream_beats_.erase(server);
      LogInfo("binlog stream closed: no service with wakeup: binlog is left on its server",
              {{"server", server}});
      it = opened_.erase(it);
      continue;
    }
    binlog::BinlogOptions b = StreamOptions(config, *first);
    if (b.mysql == it->second.mysql && b.server_id == it->second.server_id) {
      ++it;
      continue;
    }
    // The service whose credentials it used is gone or changed.
    stream_beats_.erase(server);  // the old stream's copy keeps it until it ends
    WatchStream(liveness_, &b);
    LogInfo(
        "binlog stream reopened with another service's credentials; its services poll until it is "
        "up",
        {{"server", server}, {"service", FirstOnServer(config, b.mysql).name}});
    streams_->Reopen(b);
    it->second = {b.mysql, b.server_id};
    ++it;
  }
}

int CheckBinlogWakeups(const Config& config) {
  int problems = 0;
  std::vector<const ServiceConfig*> done;  // one check per server
  for (const auto& s : config.services) {
    if (s.wakeup != WakeupMode::kBinlog) continue;
    if (std::any_of(done.begin(), done.end(),
                    [&](const ServiceConfig* d) { return SameServer(d->mysql, s.mysql); })) {
      continue;
    }
    done.push_back(&s);
    std::vector<std::string> databases;
    for (const auto& t : config.services) {
      if (t.wakeup == WakeupMode::kBinlog && SameServer(t.mysql, s.mysql)) {
        databases.push_back(t.mysql.database);
      }
    }
    const std::string where = "binlog " + s.mysql.host + ":" + std::to_string(s.mysql.port) + ": ";
    binlog::BinlogCheck check;
    Status st = binlog::CheckBinlog(StreamOptions(config, s), databases, &check);
    if (!st.ok()) check.problems.push_back(st.message());
    for (const auto& p : check.problems) std::cout << where << p << "\n";
    for (const auto& n : check.notes) std::cout << where << "note: " << n << "\n";
    if (check.problems.empty()) std::cout << check.summary << "\n";
    problems += static_cast<int>(check.problems.size());
  }
  return problems;
}

}  // namespace outbox
