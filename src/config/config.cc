#include "config/config.h"

#include "common/text.h"

namespace outbox {

const char* ToString(Ordering o) { return o == Ordering::kNone ? "none" : "per_aggregate"; }
const char* ToString(DeadPolicy p) { return p == DeadPolicy::kSkip ? "skip" : "block"; }
const char* ToString(WakeupMode w) { return w == WakeupMode::kBinlog ? "binlog" : "poll"; }
const char* ToString(Envelope e) { return e == Envelope::kCloudEvents ? "cloudevents" : "plain"; }
const char* ToString(ValueFormat f) {
  return f == ValueFormat::kAvro ? "avro" : f == ValueFormat::kJsonSchema ? "json_schema" : "bytes";
}

const std::vector<std::string>& TlsModeNames() {
  static const std::vector<std::string> kNames = {"disabled", "preferred", "required", "verify_ca",
                                                  "verify_identity"};
  return kNames;
}

const char* ToString(TlsMode m) {
  const auto i = static_cast<size_t>(m);
  return i < TlsModeNames().size() ? TlsModeNames()[i].c_str() : "preferred";
}

std::string ServerKey(const MysqlConfig& mysql) {
  std::string key = AsciiLower(mysql.host);
  key.append(":").append(std::to_string(mysql.port));
  return key;
}

bool VerifiesServer(TlsMode m) { return m == TlsMode::kVerifyCa || m == TlsMode::kVerifyIdentity; }

}  // namespace outbox
