// The example service's handler through the library's test kit
// (docs/CONSUMERS.md, "Testing a handler"): run inside the inbox
// transaction on a real MySQL or MariaDB, as the consumer runs it, without
// Kafka. The database is the one the YAML names, with the inbox's tables
// (inbox_schema.sql) and payments.sql's; the test clears what it wrote
// before.
//
//   payments-test --config payments.yaml   (prints the outcomes; exit 0 when all hold)
#include <outbox/inbox/testing.h>

#include <cstring>
#include <exception>
#include <iostream>
#include <string>

#include "record_payment.h"

namespace inbox = outbox::inbox;
using inbox::testing::Outcome;
using inbox::testing::OutcomeName;

namespace {

int failures = 0;

void Expect(bool holds, const std::string& what) {
  std::cout << (holds ? "ok    " : "FAIL  ") << what << "\n";
  if (!holds) ++failures;
}

void Run(const inbox::ConsumerConfig& config) {
  payments::RecordPayment handler;
  inbox::testing::InboxRunner runner(config.mysql, config.consumer, handler);
  runner.Execute("DELETE FROM t_payment WHERE order_id = 7");
  runner.Execute("DELETE FROM t_inbox WHERE consumer = '" + config.consumer + "'");
  const auto paid = inbox::testing::TestEvent("Order", 7, 1).Type("OrderPaid");
  const Outcome first = runner.Apply(paid);
  const Outcome second = runner.Apply(paid);  // the same event delivered again
  std::cout << OutcomeName(first) << " " << OutcomeName(second) << "\n";
  Expect(first == Outcome::kApplied, "the first delivery is applied");
  Expect(second == Outcome::kDuplicate, "the second delivery is a duplicate");
  Expect(runner.QueryInt("SELECT COUNT(*) FROM t_payment WHERE order_id = 7") == 1,
         "one payment row for the order");
  const auto shipped = inbox::testing::TestEvent("Order", 7, 2).Type("OrderShipped");
  Expect(runner.Apply(shipped) == Outcome::kApplied, "another event type is recorded and skipped");
  Expect(runner.QueryInt("SELECT COUNT(*) FROM t_payment WHERE order_id = 7") == 1,
         "still one payment row");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 || std::strcmp(argv[1], "--config") != 0) {
    std::cerr << "usage: payments-test --config FILE\n";
    return 2;
  }
  try {
    Run(inbox::LoadConfigFile(argv[2]));
  } catch (const std::exception& e) {
    std::cerr << "payments-test: " << e.what() << "\n";
    return 2;
  }
  std::cout << (failures ? "payments-test: FAILED\n" : "payments-test: ok\n");
  return failures ? 1 : 0;
}
