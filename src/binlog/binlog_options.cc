#include "binlog/binlog_options.h"

#include <algorithm>

namespace outbox {
namespace binlog {

uint32_t DeriveServerId(const std::string& instance_id, const std::string& host, int port) {
  // FNV-1a, 32 bits: simple, stable across builds and platforms, documented
  // in docs/BINLOG.md so an operator can compute it by hand.
  const std::string key = instance_id + "/" + host + ":" + std::to_string(port);
  uint32_t h = 2166136261u;
  for (unsigned char c : key) {
    h ^= c;
    h *= 16777619u;
  }
  return 0x80000000u | (h & 0x7FFFFFFFu);
}

uint32_t EffectiveServerId(const BinlogOptions& options) {
  return options.server_id != 0
             ? options.server_id
             : DeriveServerId(options.instance_id, options.mysql.host, options.mysql.port);
}

std::string ReportHost(const std::string& instance_id) {
  return ("outbox-relay " + instance_id).substr(0, 60);
}

std::chrono::milliseconds StreamStallLimit(const BinlogOptions& options) {
  // Open: connect, the server inspection (up to 5 statements), the SET and
  // the dump request; Follow: one read timeout before a stall is declared.
  constexpr int kReadTimeouts = 8;
  const int64_t read_timeout_ms =
      int64_t{std::max(1, (options.stall_timeout_ms + 999) / 1000)} * 1000;
  return std::chrono::milliseconds(int64_t{options.mysql.connect_timeout_ms} +
                                   kReadTimeouts * read_timeout_ms + 1000 + 10000);
}

}  // namespace binlog
}  // namespace outbox
