#include <dlfcn.h>
#include <librdkafka/rdkafka.h>
#include <mysql_driver.h>

#include "app/commands.h"

// The build defines the git revision it was built from (CMake, or the
// Dockerfile's --build-arg REVISION); a plain source tarball has none.
#ifndef OUTBOX_REVISION
#define OUTBOX_REVISION "unknown"
#endif

namespace outbox {

std::string VersionText() {
  auto* driver = sql::mysql::get_mysql_driver_instance();
  // libmariadb is loaded by Connector/C++; ask it for its version directly.
  using ClientInfoFn = const char* (*)();
  auto client_info = reinterpret_cast<ClientInfoFn>(dlsym(RTLD_DEFAULT, "mysql_get_client_info"));
  return std::string("outbox-relay ") + OUTBOX_VERSION + "\nrevision " + OUTBOX_REVISION +
         "\nlibrdkafka " + rd_kafka_version_str() + "\nMySQL Connector/C++ " +
         std::to_string(driver->getMajorVersion()) + "." +
         std::to_string(driver->getMinorVersion()) + "." +
         std::to_string(driver->getPatchVersion()) + "\nMySQL client library " +
         (client_info ? client_info() : "unknown") + "\n";
}

}  // namespace outbox
