#pragma once

#include <cppconn/connection.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"

namespace outbox::testing {

// The MariaDB started by scripts/test (OUTBOX_TEST_MYSQL_* variables): the
// administrator account that sets tables up.
MysqlConfig TestMysql(const std::string& database);

// The account the relay's own connections use (stores, dead list/replay, the
// binary). The minimal-grants tier sets OUTBOX_TEST_RELAY_USER (and
// optionally OUTBOX_TEST_RELAY_PASSWORD, default "outbox-relay-minimal-grants"):
// the user is created without privileges and each TestDatabase grants it only
// SELECT, UPDATE on its t_outbox (and DELETE with GrantDelete()). Unset: the
// administrator account.
MysqlConfig RelayMysql(const std::string& database);
// The name of the environment variable that holds RelayMysql's password, for
// relay configs (`password_env`); empty when the password is empty.
std::string RelayPasswordEnv();
// "NAME=value" of that variable, for ChildEnv (empty when no password).
std::vector<std::string> RelayChildEnv();
bool SeparateRelayUser();

// A fresh database with t_outbox exactly as sql/t_outbox.sql (README "The outbox table") (plus
// `extra_columns` SQL appended to the column list, e.g. ", last_error varchar(255)").
class TestDatabase {
 public:
  explicit TestDatabase(const std::string& name, const std::string& extra_columns = "");
  ~TestDatabase();
  const std::string& name() const { return name_; }
  // The relay's account on this database (RelayMysql).
  MysqlConfig mysql() const { return RelayMysql(name_); }
  // The DELETE grant retention needs (SELECT, UPDATE are granted by the
  // constructor). A no-op without a separate relay user.
  void GrantDelete();
  void Exec(const std::string& sql);
  int64_t QueryInt(const std::string& sql);
  std::string QueryString(const std::string& sql);  // "" when no row or NULL
  std::map<std::string, int64_t> CountByStatus();
  // Inserts `aggregates` x `per_aggregate` events, interleaved in id order
  // (all first events, then all second events, ...), ids from `first_id`.
  void InsertEvents(int aggregates, int per_aggregate, int64_t first_id = 1,
                    const std::string& aggregate_type = "Order");

 private:
  template <typename F>
  auto Retrying(F f);

  std::string name_;
  std::unique_ptr<sql::Connection> conn_;
};

// An administrator connection of its own to `database`, for a test thread
// that writes beside the TestDatabase's (a connection is not thread-safe).
class SqlClient {
 public:
  explicit SqlClient(const std::string& database);
  ~SqlClient();
  void Exec(const std::string& sql);
  int64_t QueryInt(const std::string& sql);

 private:
  std::unique_ptr<sql::Connection> conn_;
};

struct ConsumedMessage {
  std::string topic;
  int partition;
  int64_t offset;
  std::string key;
  std::string value;
  std::map<std::string, std::string> headers;
};

// Rows of `db`.t_outbox in NEW or SENDING.
int64_t Unsent(TestDatabase& db);

// Reads every message of `topics` from the start of every partition to the
// high watermark.
std::vector<ConsumedMessage> ConsumeAll(const std::string& bootstrap,
                                        const std::vector<std::string>& topics);

// A service config pointing at `db` and `bootstrap` with test-friendly
// timings (short poll, short backoff).
ServiceConfig TestService(const TestDatabase& db, const std::string& bootstrap);

// A relay config file for the binary: one service named `service` on `db`
// (the relay account, its password through password_env), text logs, the
// HTTP listener on `http_listen`. `service_yaml` is appended to the service's
// mapping, indented by 4 spaces per line (e.g. "retention: {sent_days: 7}\n").
// `kafka_yaml` goes into the top-level kafka mapping after bootstrap_servers.
std::string RelayConfigYaml(const TestDatabase& db, const std::string& service,
                            const std::string& bootstrap, const std::string& service_yaml = "",
                            const std::string& http_listen = "127.0.0.1:0",
                            const std::string& kafka_yaml = "");

}  // namespace outbox::testing
