// A service's consumer on the installed inbox library, as a user writes it
// on day one: its own handler and its own table (t_user_payment, which the
// package test creates), the configuration from its YAML file, the
// library's loop. With --test-kit it instead checks its handler with the
// library's test kit against the same database, without a broker.
//
//   inbox-user --config payments.yaml              (until SIGTERM)
//   inbox-user --test-kit --config payments.yaml   (prints the outcomes)
#include <cppconn/prepared_statement.h>
#include <outbox/inbox/consumer.h>
#include <outbox/inbox/testing.h>

#include <atomic>
#include <csignal>
#include <cstring>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

namespace inbox = outbox::inbox;

namespace {

std::atomic<bool> g_stop{false};

// Records each payment once: the row commits with the event's inbox row.
class RecordPayment : public inbox::Handler {
 public:
  inbox::Status Apply(inbox::Transaction& tx, const inbox::Event& e) override {
    sql::PreparedStatement& st =
        tx.Prepare("INSERT INTO t_user_payment (event_key, order_id, outbox_id) VALUES (?, ?, ?)");
    st.setString(1, e.event_key);
    st.setInt64(2, e.aggregate_id);
    st.setInt64(3, e.outbox_id);
    st.executeUpdate();
    return inbox::Status::Ok();
  }
};

// The handler through the test kit: applied once, then a duplicate.
int TestKit(const inbox::ConsumerConfig& config, inbox::Handler& handler) {
  inbox::testing::InboxRunner runner(config.mysql, config.consumer, handler);
  inbox::testing::TestEvent paid("Order", 7, 1);
  paid.Type("OrderPaid").Payload(R"({"amount": 12})");
  std::cout << inbox::testing::OutcomeName(runner.Apply(paid)) << " "
            << inbox::testing::OutcomeName(runner.Apply(paid)) << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  bool test_kit = false;
  std::string path;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--test-kit") == 0) test_kit = true;
    if (std::strcmp(argv[i], "--config") == 0 && i + 1 < argc) path = argv[++i];
  }
  if (path.empty()) {
    std::cerr << "usage: inbox-user [--test-kit] --config FILE\n";
    return 2;
  }
  inbox::ConsumerConfig config;
  std::vector<std::string> warnings;
  try {
    config = inbox::LoadConfigFile(path, &warnings);
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 2;
  }
  RecordPayment handler;
  if (test_kit) return TestKit(config, handler);
  std::signal(SIGTERM, [](int) { g_stop = true; });
  inbox::ConsumerOptions options;
  // The service's own logger; here, stderr with a prefix of its own.
  options.log = [](inbox::LogLevel, std::string_view line) {
    std::cerr << "inbox-user: " << line << "\n";
  };
  inbox::Consumer consumer(config, handler, options);
  return consumer.Run(g_stop);
}
