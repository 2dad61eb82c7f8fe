#pragma once

// MysqlStore behind the OutboxStore seam, without Connector/C++'s headers:
// what code outside src/outbox/ includes to make one (the app wiring), so
// that the MySQL client library stays visible only inside this folder.

#include <string>

#include "common/clock.h"
#include "config/config.h"
#include "outbox/outbox_store.h"

namespace outbox {

// A MysqlStore (outbox/mysql_store.h) for `config`; it connects on first use.
OutboxStorePtr NewMysqlStore(MysqlConfig config, ClockPtr clock = DefaultClock());

// "Connector/C++ 1.1.12, client library 3.3.20": the versions of the MySQL
// client libraries this process runs with (for `outbox-relay version`).
std::string MysqlClientVersions();

}  // namespace outbox
