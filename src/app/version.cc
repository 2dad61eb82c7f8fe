#include "app/commands.h"
#include "kafka/kafka_publisher.h"
#include "outbox/mysql_connection.h"

// The build defines the git revision it was built from (CMake, or the
// Dockerfile's --build-arg REVISION); a plain source tarball has none.
#ifndef OUTBOX_REVISION
#define OUTBOX_REVISION "unknown"
#endif

namespace outbox {

std::string VersionText() {
  return std::string("outbox-relay ") + OUTBOX_VERSION + "\nrevision " + OUTBOX_REVISION +
         "\nlibrdkafka " + LibrdkafkaVersion() + "\nMySQL " + MysqlClientVersions() + "\n";
}

}  // namespace outbox
