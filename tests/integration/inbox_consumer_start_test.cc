// What keeps a library consumer from consuming is said, at warn, once per
// cause and with its fix (outbox/inbox/consumer.h): a database that is down
// at start, a table of the inbox's that is missing, a broker nobody can
// reach; and a config filled in code that the YAML loader would refuse is
// refused before anything starts. Real MariaDB and librdkafka's mock cluster;
// the verdict is the lines the host's log callback received.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/mutex.h"
#include "counter_handler.h"
#include "outbox/inbox/consumer.h"
#include "support/consumer_harness.h"
#include "support/wait.h"

using namespace outbox::testing;
using namespace std::chrono_literals;

namespace {

outbox::inbox::ConsumerConfig StartConfig(ConsumerRig& rig) {
  const outbox::MysqlConfig m = TestMysql(rig.db.name());
  outbox::inbox::ConsumerConfig config;
  config.consumer = "fulfillment";
  config.kafka.bootstrap_servers = rig.cluster.bootstrap();
  config.kafka.topics = {kOrderTopic};
  config.mysql.host = m.host;
  config.mysql.port = m.port;
  config.mysql.user = ConsumerDatabase::kUser;
  config.mysql.password = ConsumerDatabase::kPassword;
  config.mysql.database = rig.db.name();
  config.mysql.tls_mode = "disabled";
  config.mysql.connect_timeout_ms = 1000;
  config.mysql.read_timeout_ms = 5000;
  return config;
}

// A TCP port nothing listens on (bound, then closed).
int ClosedPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
  REQUIRE(getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  close(fd);
  return ntohs(a.sin_port);
}

// The lines a consumer logs through its host's callback, by level.
class LogLines {
 public:
  outbox::inbox::LogCallback Callback() {
    return [this](outbox::inbox::LogLevel level, std::string_view line) {
      outbox::MutexLock lock(&mu_);
      lines_.emplace_back(level, std::string(line));
    };
  }
  int Count(outbox::inbox::LogLevel level, const std::string& text) {
    outbox::MutexLock lock(&mu_);
    int n = 0;
    for (const auto& [l, line] : lines_)
      if (l == level && line.find(text) != std::string::npos) ++n;
    return n;
  }
  std::string All() {
    outbox::MutexLock lock(&mu_);
    std::string out;
    for (const auto& [l, line] : lines_) out += line + "\n";
    return out;
  }

 private:
  outbox::Mutex mu_;
  std::vector<std::pair<outbox::inbox::LogLevel, std::string>> lines_;
};

// Runs `consumer` on a thread while `during` runs, then stops it.
int RunDuring(outbox::inbox::Consumer& consumer, const std::function<void()>& during) {
  std::atomic<bool> stop{false};
  int exit_code = -1;
  std::thread loop([&] { exit_code = consumer.Run(stop); });
  during();
  stop = true;
  loop.join();
  return exit_code;
}

using outbox::inbox::LogLevel;

}  // namespace

TEST_CASE("a database that is down at start is warned about once with what to check",
          "[inbox-start]") {
  ConsumerRig rig("inbox_start_db_down", {{kOrderTopic, 1}, {kOrderTopic + ".dlq", 1}});
  outbox::inbox::ConsumerConfig config = StartConfig(rig);
  config.mysql.port = ClosedPort();
  LogLines log;
  outbox::inbox::ConsumerOptions options;
  options.log = log.Callback();
  example::CounterHandler handler;
  outbox::inbox::Consumer consumer(config, handler, options);
  const std::string warning = "no event is applied until it answers: check mysql.host";
  bool warned = false;
  RunDuring(consumer, [&] {
    warned = WaitFor([&] { return log.Count(LogLevel::kWarn, warning) > 0; }, 20s);
    std::this_thread::sleep_for(3s);  // three more checks, one a second: no more lines
  });
  INFO(log.All());
  CHECK(warned);
  CHECK(log.Count(LogLevel::kWarn, warning) == 1);
  CHECK(log.Count(LogLevel::kWarn, "cannot connect to inbox_consumer@") == 1);
}

TEST_CASE("a missing inbox table is warned about once and its return is said", "[inbox-start]") {
  ConsumerRig rig("inbox_start_no_table", {{kOrderTopic, 1}, {kOrderTopic + ".dlq", 1}});
  rig.db.Exec("CREATE TABLE t_inbox_parked_kept LIKE t_inbox_parked");
  rig.db.Exec("DROP TABLE t_inbox_parked");
  LogLines log;
  outbox::inbox::ConsumerOptions options;
  options.log = log.Callback();
  example::CounterHandler handler;
  outbox::inbox::ConsumerConfig config = StartConfig(rig);
  outbox::inbox::Consumer consumer(config, handler, options);
  const std::string warning =
      "t_inbox_parked' doesn't exist; no event is applied until the "
      "inbox's tables exist: create them";
  bool warned = false, back = false;
  RunDuring(consumer, [&] {
    warned = WaitFor([&] { return log.Count(LogLevel::kWarn, warning) > 0; }, 20s);
    std::this_thread::sleep_for(3s);
    rig.db.Exec("RENAME TABLE t_inbox_parked_kept TO t_inbox_parked");
    back = WaitFor(
        [&] { return log.Count(LogLevel::kInfo, "the inbox's tables are there now") == 1; }, 20s);
  });
  INFO(log.All());
  CHECK(warned);
  CHECK(log.Count(LogLevel::kWarn, warning) == 1);
  CHECK(log.Count(LogLevel::kWarn, "no event is applied") == 1);  // not "down" as well
  CHECK(back);
}

TEST_CASE("a broker nobody can reach is warned about once with the servers to check",
          "[inbox-start]") {
  ConsumerRig rig("inbox_start_no_broker", {{kOrderTopic, 1}});
  outbox::inbox::ConsumerConfig config = StartConfig(rig);
  config.kafka.bootstrap_servers = "127.0.0.1:" + std::to_string(ClosedPort());
  config.kafka.properties["reconnect.backoff.max.ms"] = "200";
  LogLines log;
  outbox::inbox::ConsumerOptions options;
  options.log = log.Callback();
  example::CounterHandler handler;
  outbox::inbox::Consumer consumer(config, handler, options);
  const std::string warning =
      "no message is read until a broker answers: check "
      "kafka.bootstrap_servers (" +
      config.kafka.bootstrap_servers + ")";
  bool warned = false;
  RunDuring(consumer, [&] {
    warned = WaitFor([&] { return log.Count(LogLevel::kWarn, warning) > 0; }, 20s);
    std::this_thread::sleep_for(3s);  // reconnects every 200 ms meanwhile
  });
  INFO(log.All());
  CHECK(warned);
  CHECK(log.Count(LogLevel::kWarn, warning) == 1);
}

TEST_CASE("a consumer refuses a config filled in code that the YAML loader would refuse",
          "[inbox-start]") {
  outbox::inbox::ConsumerConfig config;
  config.consumer = "fulfillment";
  config.kafka.topics = {kOrderTopic};
  config.mysql.user = "inbox";
  config.mysql.database = "order_db";
  example::CounterHandler handler;
  try {
    outbox::inbox::Consumer consumer(config, handler);
    FAIL("the consumer took an empty kafka.bootstrap_servers");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()) ==
          "inbox consumer config: kafka.bootstrap_servers: must not be empty");
  }
  config.kafka.bootstrap_servers = "127.0.0.1:9092";
  CHECK(outbox::inbox::Validate(config).empty());  // group_id empty: the consumer's name
  CHECK_NOTHROW(outbox::inbox::Consumer(config, handler));
}
