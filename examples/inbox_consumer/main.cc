// outbox-inbox-consumer: the consumer half of the outbox pattern, as a
// runnable example (docs/CONSUMERS.md): the inbox library (outbox/inbox/)
// with the counter handler (counter_handler.h). Reads the relay's events
// from Kafka and applies each exactly once to t_aggregate_effect,
// deduplicating with t_inbox in the same transaction; prints each event's
// schema id and its value, decoded to JSON or as bytes (value_printer.h).
//
//   outbox-inbox-consumer --config FILE
//   outbox-inbox-consumer dlq-replay --config FILE --from TOPIC [--reason R]
//       [--offsets A-B] [--dry-run] [--rate N]
//
// Exit codes: 0 stopped by SIGTERM/SIGINT, 1 runtime failure, 2 usage or
// configuration error.
#include <librdkafka/rdkafka.h>
#include <signal.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <thread>

#include "common/log.h"
#include "counter_handler.h"
#include "inbox/consumer_config.h"
#include "inbox/consumer_group.h"
#include "inbox/dlq_replay.h"
#include "value_printer.h"

namespace {

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop.store(true); }

// Test-only failpoints: OUTBOX_CONSUMER_FAILPOINT=before_db_commit:N or
// after_db_commit:N makes the process SIGKILL itself at that point of the
// N-th new event (after the effect and before COMMIT, or after COMMIT and
// before the offset is stored), so tests can place a kill -9 exactly;
// before_db_commit:N:MS sleeps MS milliseconds there instead, holding the
// transaction open (a consumer too slow for max.poll.interval.ms);
// seek_error:N makes the next N seeks fail without seeking.
// Never set it in production.
void InstallFailpoint(outbox::inbox::TestSeams* options) {
  const char* fp = std::getenv("OUTBOX_CONSUMER_FAILPOINT");
  if (!fp || !*fp) return;
  const std::string spec = fp;
  const size_t colon = spec.find(':');
  const std::string where = spec.substr(0, colon);
  const int n = colon == std::string::npos ? 1 : std::atoi(spec.c_str() + colon + 1);
  const size_t colon2 = colon == std::string::npos ? colon : spec.find(':', colon + 1);
  const int sleep_ms = colon2 == std::string::npos ? 0 : std::atoi(spec.c_str() + colon2 + 1);
  auto hook = [n, sleep_ms, count = 0, where]() mutable {
    if (++count != n) return;
    if (sleep_ms > 0) {
      spdlog::warn("failpoint {}: sleeping {} ms in the transaction", where, sleep_ms);
      std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
      return;
    }
    spdlog::warn("failpoint {}: killing this process (SIGKILL)", where);
    spdlog::default_logger()->flush();
    raise(SIGKILL);
  };
  if (where == "before_db_commit") options->before_db_commit = hook;
  if (where == "after_db_commit") options->after_db_commit = hook;
  if (where == "seek_error") options->failing_seeks = n;
  spdlog::warn("test failpoint {} armed ({})", where, n);
}

int Usage() {
  std::cerr << "usage: outbox-inbox-consumer --config FILE\n"
               "       outbox-inbox-consumer dlq-replay --config FILE --from TOPIC [--reason R]\n"
               "           [--offsets A-B] [--dry-run] [--rate N]\n"
               "       outbox-inbox-consumer --version\n"
               "Reads the relay's events from Kafka and applies each once (docs/CONSUMERS.md).\n";
  return 2;
}

bool LoadConfig(const std::string& path, outbox::inbox::LoadedConsumerConfig* loaded) {
  try {
    *loaded = outbox::inbox::LoadConsumerConfigFile(path);
    return true;
  } catch (const outbox::ConfigError& e) {
    std::cerr << e.what() << "\n";
    return false;
  }
}

// One option of dlq-replay at argv[*i] (moving *i past its value); 2 after
// printing why on a bad one, else 0.
int ReplayOption(int argc, char** argv, int* i, std::string* config_path,
                 outbox::inbox::ReplayOptions* o) {
  const std::string a = argv[*i];
  const bool has_value = *i + 1 < argc;
  if ((a == "--config" || a == "-c") && has_value) {
    *config_path = argv[++*i];
  } else if (a == "--from" && has_value) {
    o->from = argv[++*i];
  } else if (a == "--reason" && has_value) {
    o->reason = argv[++*i];
  } else if (a == "--offsets" && has_value) {
    if (outbox::inbox::ParseOffsetRange(argv[++*i], &o->first_offset, &o->last_offset)) return 0;
    std::cerr << "dlq-replay: --offsets takes A-B (e.g. 10-20, 10-, -20), not " << argv[*i] << "\n";
    return 2;
  } else if (a == "--dry-run") {
    o->dry_run = true;
  } else if (a == "--rate" && has_value) {
    if ((o->rate = std::atoi(argv[++*i])) > 0) return 0;
    std::cerr << "dlq-replay: --rate takes a positive number of messages per second\n";
    return 2;
  } else {
    return Usage();
  }
  return 0;
}

// dlq-replay: sends dead letters back to their source topic (dlq_replay.h).
int DlqReplay(int argc, char** argv) {
  std::string config_path;
  outbox::inbox::ReplayOptions o;
  for (int i = 2; i < argc; ++i)
    if (int rc = ReplayOption(argc, argv, &i, &config_path, &o); rc != 0) return rc;
  if (config_path.empty() || o.from.empty()) return Usage();
  outbox::inbox::LoadedConsumerConfig loaded;
  if (!LoadConfig(config_path, &loaded)) return 2;
  outbox::ConfigureLogging("warn", "text", loaded.config.consumer);
  return outbox::inbox::ReplayDeadLetters(loaded.config, o, std::cout);
}

// The consumer's command line: --config FILE, --version, and the
// benchmark's --bench-no-inbox. -1 to go on, else the exit code.
int ConsumerArgs(int argc, char** argv, std::string* config_path, outbox::inbox::TestSeams* seams) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--config" || a == "-c") && i + 1 < argc) {
      *config_path = argv[++i];
    } else if (a == "--version") {
      std::cout << "outbox-inbox-consumer " << OUTBOX_VERSION << " (librdkafka "
                << rd_kafka_version_str() << ")\n";
      return 0;
    } else if (a == "--bench-no-inbox") {
      // Benchmark only (examples/inbox_consumer/bench_main.cc measures the
      // same in-process): apply every delivery, duplicates included.
      seams->use_inbox = false;
    } else {
      return Usage();
    }
  }
  return config_path->empty() ? Usage() : -1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "dlq-replay") return DlqReplay(argc, argv);
  std::string config_path;
  outbox::inbox::TestSeams seams;  // benchmark and failpoints; InboxConsumer is the in-tree entry
  if (int rc = ConsumerArgs(argc, argv, &config_path, &seams); rc >= 0) return rc;
  outbox::inbox::LoadedConsumerConfig loaded;
  if (!LoadConfig(config_path, &loaded)) return 2;
  const outbox::inbox::ConsumerConfig& config = loaded.config;
  outbox::ConfigureLogging(loaded.log_level, loaded.log_format, config.consumer);
  for (const auto& w : loaded.warnings) spdlog::warn("{}", w);
  if (!seams.use_inbox) spdlog::warn("--bench-no-inbox: duplicates are applied again");
  InstallFailpoint(&seams);

  // SIGTERM/SIGINT only set a flag: the loop finishes the current message,
  // commits, and returns.
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);

  // The library serves the metrics on http.listen.
  example::CounterHandler counter;
  example::ValuePrinter handler(counter);
  outbox::inbox::ConsumerGroup consumer(config, handler, {}, seams);
  return consumer.Run(g_stop);
}
