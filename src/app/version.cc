#include "app/commands.h"
#include "common/build_info.h"
#include "kafka/kafka_publisher.h"
#include "outbox/mysql_store_factory.h"

namespace outbox {

std::string VersionText() {
  // The revision is "unknown" for a build without git and without
  // -DOUTBOX_REVISION (src/common/build_info.h).
  return std::string("outbox-relay ") + BuildVersion() + "\nrevision " + BuildRevision() +
         "\nlibrdkafka " + LibrdkafkaVersion() + "\nMySQL " + MysqlClientVersions() + "\n";
}

}  // namespace outbox
