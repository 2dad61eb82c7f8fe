#include "support/inbox_rig.h"

#include <atomic>
#include <thread>

#include "support/wait.h"

namespace outbox::testing {

inbox::DbConfig RootInboxDb(const std::string& database) {
  const MysqlConfig m = TestMysql(database);
  inbox::DbConfig c;
  c.host = m.host;
  c.port = m.port;
  c.user = m.user;
  c.password = m.password;
  c.database = database;
  c.tls_mode = "disabled";
  return c;
}

inbox::DbConfig InboxDb(const ConsumerDatabase& db) {
  inbox::DbConfig c = RootInboxDb(db.name());
  c.user = ConsumerDatabase::kUser;
  c.password = ConsumerDatabase::kPassword;
  c.connect_timeout_ms = 1000;
  c.read_timeout_ms = 5000;
  return c;
}

inbox::ConsumerConfig InboxConfig(ConsumerRig& rig) {
  inbox::ConsumerConfig config;
  config.consumer = "fulfillment";
  config.kafka.bootstrap_servers = rig.cluster.bootstrap();
  config.kafka.group_id = "fulfillment";
  config.kafka.topics = {kOrderTopic};
  config.kafka.properties = kGroupTiming;
  config.mysql = InboxDb(rig.db);
  return config;
}

int RunUntil(inbox::Consumer& consumer, const std::function<bool()>& done, bool* settled) {
  std::atomic<bool> stop{false};
  int exit_code = -1;
  std::thread loop([&] { exit_code = consumer.Run(stop); });
  *settled = WaitFor(done, std::chrono::seconds(60));
  stop = true;
  loop.join();
  return exit_code;
}

}  // namespace outbox::testing
