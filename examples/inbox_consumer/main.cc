// outbox-inbox-consumer: the consumer half of the outbox pattern, as a
// runnable example (docs/CONSUMERS.md). Reads the relay's events from Kafka
// and applies each exactly once to t_aggregate_effect, deduplicating with
// t_inbox in the same transaction.
//
//   outbox-inbox-consumer --config FILE
//
// Exit codes: 0 stopped by SIGTERM/SIGINT, 1 runtime failure, 2 usage or
// configuration error.
#include <librdkafka/rdkafka.h>
#include <signal.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <string>

#include "common/log.h"
#include "consumer_config.h"
#include "inbox_consumer.h"

namespace {

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop.store(true); }

// Test-only failpoint: OUTBOX_CONSUMER_FAILPOINT=before_db_commit:N or
// after_db_commit:N makes the process SIGKILL itself at that point of the
// N-th new event (after the effect and before COMMIT, or after COMMIT and
// before the offset is stored), so tests can place a kill -9 exactly.
// Never set it in production.
void InstallFailpoint(inbox::ConsumerOptions* options) {
  const char* fp = std::getenv("OUTBOX_CONSUMER_FAILPOINT");
  if (!fp || !*fp) return;
  const std::string spec = fp;
  const size_t colon = spec.find(':');
  const std::string where = spec.substr(0, colon);
  const int n = colon == std::string::npos ? 1 : std::atoi(spec.c_str() + colon + 1);
  auto hook = [n, count = 0, where]() mutable {
    if (++count < n) return;
    spdlog::warn("failpoint {}: killing this process (SIGKILL)", where);
    spdlog::default_logger()->flush();
    raise(SIGKILL);
  };
  if (where == "before_db_commit") options->before_db_commit = hook;
  if (where == "after_db_commit") options->after_db_commit = hook;
  spdlog::warn("test failpoint {} armed for new event #{}", where, n);
}

int Usage() {
  std::cerr << "usage: outbox-inbox-consumer --config FILE\n"
               "       outbox-inbox-consumer --version\n"
               "Reads the relay's events from Kafka and applies each once (docs/CONSUMERS.md).\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string config_path;
  inbox::ConsumerOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--config" || a == "-c") && i + 1 < argc) {
      config_path = argv[++i];
    } else if (a == "--version") {
      std::cout << "outbox-inbox-consumer " << OUTBOX_VERSION << " (librdkafka "
                << rd_kafka_version_str() << ")\n";
      return 0;
    } else if (a == "--bench-no-inbox") {
      // Benchmark only (examples/inbox_consumer/bench_main.cc measures the
      // same in-process): apply every delivery, duplicates included.
      options.use_inbox = false;
    } else {
      return Usage();
    }
  }
  if (config_path.empty()) return Usage();

  inbox::LoadedConsumerConfig loaded;
  try {
    loaded = inbox::LoadConsumerConfigFile(config_path);
  } catch (const outbox::ConfigError& e) {
    std::cerr << e.what() << "\n";
    return 2;
  }
  const inbox::ConsumerConfig& config = loaded.config;
  outbox::ConfigureLogging(config.log_level, config.log_format, config.consumer);
  for (const auto& w : loaded.warnings) spdlog::warn("{}", w);
  if (!options.use_inbox) spdlog::warn("--bench-no-inbox: duplicates are applied again");
  InstallFailpoint(&options);

  // SIGTERM/SIGINT only set a flag: the loop finishes the current message,
  // commits, and returns.
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);

  inbox::InboxConsumer consumer(config, std::move(options));
  return consumer.Run(g_stop);
}
