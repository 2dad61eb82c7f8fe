#pragma once

// The Connector/C++ options every MySQL connection of the project sets, in
// one place: the relay's store (src/outbox/mysql_connection.cc), the inbox's
// (src/inbox/inbox_store.cc) and the tools'. Templates over the options map
// (sql::ConnectOptionsMap) and the settings, so that common/ does not
// include Connector/C++ (docs/DESIGN.md, "Layers"); each caller adds its own
// options (TLS, multi-statements) after these.

#include <algorithm>

namespace outbox {

// Where and as whom to log in: hostName, port, userName and password from
// `db`'s host, port, user and password (MysqlConfig, inbox::DbConfig, a
// tool's arguments).
template <typename Settings, typename OptionsMap>
void SetLoginOptions(const Settings& db, OptionsMap* opts) {
  using Text = typename OptionsMap::key_type;  // sql::SQLString
  (*opts)["hostName"] = Text(db.host);
  (*opts)["port"] = db.port;
  (*opts)["userName"] = Text(db.user);
  (*opts)["password"] = Text(db.password);
}

// A store's session on top of the login: `db`'s database as the schema, its
// connect_timeout_ms and read_timeout_ms (the write timeout too) in whole
// seconds, at least 1, and never a silent reconnect: a reconnect in the
// middle of a transaction would run the rest of it in autocommit mode.
template <typename Settings, typename OptionsMap>
void SetStoreSessionOptions(const Settings& db, OptionsMap* opts) {
  using Text = typename OptionsMap::key_type;
  SetLoginOptions(db, opts);
  (*opts)["schema"] = Text(db.database);
  (*opts)["OPT_CONNECT_TIMEOUT"] = std::max(1, db.connect_timeout_ms / 1000);
  (*opts)["OPT_READ_TIMEOUT"] = std::max(1, db.read_timeout_ms / 1000);
  (*opts)["OPT_WRITE_TIMEOUT"] = std::max(1, db.read_timeout_ms / 1000);
  (*opts)["OPT_RECONNECT"] = false;
}

}  // namespace outbox
