// The example service's consumer: its handler (record_payment.h), the
// configuration from its YAML file, the library's loop.
//
//   payments-consumer --config payments.yaml           (until SIGTERM or SIGINT)
//   payments-consumer --check --config payments.yaml   (the config checked, then exit)
//
// Exit codes: 0 after SIGTERM/SIGINT or a config that passes --check, 1
// when the consumer cannot run (Kafka cannot be set up), 2 for a usage or
// configuration error.
#include <outbox/inbox/consumer.h>

#include <atomic>
#include <csignal>
#include <cstring>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "record_payment.h"

namespace inbox = outbox::inbox;

namespace {

std::atomic<bool> g_stop{false};

const char* LevelName(inbox::LogLevel level) {
  switch (level) {
    case inbox::LogLevel::kDebug:
      return "debug";
    case inbox::LogLevel::kInfo:
      return "info";
    case inbox::LogLevel::kWarn:
      return "warn";
    case inbox::LogLevel::kError:
      return "error";
  }
  return "?";
}

int Serve(const inbox::ConsumerConfig& config) {
  std::signal(SIGTERM, [](int) { g_stop = true; });
  std::signal(SIGINT, [](int) { g_stop = true; });
  payments::RecordPayment handler;
  inbox::ConsumerOptions options;
  // The service's own logger; here, stderr with the program's name.
  options.log = [](inbox::LogLevel level, std::string_view line) {
    std::cerr << "payments-consumer: " << LevelName(level) << ": " << line << "\n";
  };
  inbox::Consumer consumer(config, handler, options);
  return consumer.Run(g_stop);
}

}  // namespace

int main(int argc, char** argv) {
  bool check = false;
  std::string path;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--check") == 0) check = true;
    if (std::strcmp(argv[i], "--config") == 0 && i + 1 < argc) path = argv[++i];
  }
  if (path.empty()) {
    std::cerr << "usage: payments-consumer [--check] --config FILE\n";
    return 2;
  }
  inbox::ConsumerConfig config;
  std::vector<std::string> warnings;
  try {
    config = inbox::LoadConfigFile(path, &warnings);  // parsed and validated
  } catch (const std::exception& e) {
    std::cerr << "payments-consumer: " << e.what() << "\n";
    return 2;
  }
  for (const std::string& w : warnings) std::cerr << "payments-consumer: warning: " << w << "\n";
  if (check) {
    std::cout << path << ": ok (consumer " << config.consumer << ", database "
              << config.mysql.database << ")\n";
    return 0;
  }
  return Serve(config);
}
