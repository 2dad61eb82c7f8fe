// A service's consumer on the installed inbox library: one handler, the
// configuration filled in from code, the library's loop. With --check it
// only says what it would consume, so that the package test can run it
// without a broker.
#include <cppconn/prepared_statement.h>
#include <outbox/inbox/consumer.h>

#include <atomic>
#include <csignal>
#include <cstring>
#include <iostream>

namespace {

std::atomic<bool> g_stop{false};

// Counts each order's payments, once per event.
class CountPayments : public inbox::Handler {
 public:
  inbox::Status Apply(inbox::Transaction& tx, const inbox::Event& e) override {
    if (e.event_type != "OrderPaid") return inbox::Status::Ok();
    sql::PreparedStatement& st = tx.Prepare(
        "INSERT INTO t_aggregate_effect (aggregate_type, aggregate_id, applied, last_outbox_id) "
        "VALUES (?, ?, 1, ?) ON DUPLICATE KEY UPDATE applied = applied + 1");
    st.setString(1, e.aggregate_type);
    st.setInt64(2, e.aggregate_id);
    st.setInt64(3, e.outbox_id);
    st.executeUpdate();
    return inbox::Status::Ok();
  }
};

}  // namespace

int main(int argc, char** argv) {
  inbox::ConsumerConfig config;
  config.consumer = "payments";
  config.kafka.bootstrap_servers = argc > 1 ? argv[1] : "127.0.0.1:9092";
  config.kafka.group_id = "payments";
  config.kafka.topics = {"outbox.event.Order"};
  if (argc > 2 && std::strcmp(argv[2], "--check") == 0) {
    std::cout << "consumer " << config.consumer << " reads " << config.kafka.topics[0] << "\n";
    return 0;
  }
  std::signal(SIGTERM, [](int) { g_stop = true; });
  CountPayments handler;
  inbox::Consumer consumer(config, handler);
  return consumer.Run(g_stop);
}
