#include "config/config.h"

#include "common/text.h"

namespace outbox {

const char* ToString(Ordering o) { return o == Ordering::kNone ? "none" : "per_aggregate"; }
const char* ToString(DeadPolicy p) { return p == DeadPolicy::kSkip ? "skip" : "block"; }
const char* ToString(Wakeup w) { return w == Wakeup::kBinlog ? "binlog" : "poll"; }
const char* ToString(Envelope e) { return e == Envelope::kCloudEvents ? "cloudevents" : "plain"; }

const char* ToString(TlsMode m) {
  switch (m) {
    case TlsMode::kDisabled:
      return "disabled";
    case TlsMode::kRequired:
      return "required";
    case TlsMode::kVerifyCa:
      return "verify_ca";
    case TlsMode::kVerifyIdentity:
      return "verify_identity";
    case TlsMode::kPreferred:
      break;
  }
  return "preferred";
}

std::string ServerKey(const MysqlConfig& mysql) {
  std::string key = AsciiLower(mysql.host);
  key.append(":").append(std::to_string(mysql.port));
  return key;
}

bool VerifiesServer(TlsMode m) { return m == TlsMode::kVerifyCa || m == TlsMode::kVerifyIdentity; }

}  // namespace outbox
