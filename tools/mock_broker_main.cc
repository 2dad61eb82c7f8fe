// outbox-mock-broker: a Kafka-protocol broker for tests and the quickstart,
// built on librdkafka's mock cluster. Prints "bootstrap HOST:PORT" on its
// first line, then reads fault commands, one per line, from stdin (or from a
// FIFO given with --control). With --control-port, it also serves the same
// commands over TCP (control_server.h), where each connection can ask for a
// cluster of its own: the test suites' external mode (docs/TESTING.md).
// Users point the relay at their real Kafka.
#include <signal.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include "control_server.h"
#include "mock_cluster.h"

namespace {

volatile std::sig_atomic_t g_stop = 0;
void OnSignal(int) { g_stop = 1; }

struct Args {
  int brokers = 1;
  int partitions = 4;
  std::string control;    // FIFO to read commands from; empty: stdin
  int control_port = -1;  // TCP port on 127.0.0.1 for commands (0: any free)
  std::string topics;     // comma-separated, created at start
};

// False (the usage printed) on an unknown argument.
bool ParseArgs(int argc, char** argv, Args* args) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--brokers") {
      args->brokers = std::stoi(next());
    } else if (a == "--partitions") {
      args->partitions = std::stoi(next());
    } else if (a == "--control") {
      args->control = next();
    } else if (a == "--control-port") {
      args->control_port = std::stoi(next());
    } else if (a == "--topics") {
      args->topics = next();
    } else {
      std::cerr << "usage: outbox-mock-broker [--brokers N] [--partitions N] [--topics a,b:N]"
                   " [--control FIFO] [--control-port PORT]\n"
                   "commands on stdin/FIFO: down | up | rtt MS | produce-errors COUNT [ERRNAME]"
                   " | clear-errors | topic NAME PARTITIONS | leader TOPIC PARTITION BROKER"
                   " | topic-error TOPIC ERRNAME | quit\n";
      return false;
    }
  }
  return true;
}

// No SA_RESTART: a signal must interrupt the blocking open() of the control
// FIFO (which waits for a writer), or SIGTERM would not stop the broker.
void StopOnSignals() {
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

// --partitions applies to the --topics created here, except to one written
// NAME:PARTITIONS; a topic created on its first use gets the mock cluster's
// own default (4), which librdkafka does not let us change.
void CreateTopics(const Args& args, outbox::testing::MockCluster* cluster) {
  const std::string& topics = args.topics;
  size_t start = 0;
  while (start < topics.size()) {
    size_t comma = topics.find(',', start);
    std::string t =
        topics.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const size_t colon = t.find(':');
    if (colon != std::string::npos)
      cluster->CreateTopic(t.substr(0, colon), std::stoi(t.substr(colon + 1)));
    else if (!t.empty())
      cluster->CreateTopic(t, args.partitions);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
}

// Runs commands from stdin or the control FIFO (reopened after each writer
// closes it) until "quit" or a signal.
void ServeCommands(const std::string& control, outbox::testing::MockCluster* cluster) {
  std::istream* in = &std::cin;
  std::ifstream fifo;
  for (;;) {
    if (!control.empty() && !fifo.is_open()) {
      fifo.open(control);  // blocks until a writer opens the FIFO
      in = &fifo;
    }
    std::string line;
    if (g_stop) break;
    if (!std::getline(*in, line)) {
      if (g_stop) break;
      if (!control.empty()) {
        fifo.close();
        fifo.clear();
        continue;
      }
      // stdin closed: keep serving until a signal arrives.
      while (!g_stop) pause();
      break;
    }
    if (line == "quit") break;
    if (line.empty()) continue;
    std::cout << cluster->Command(line) << std::endl;
  }
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!ParseArgs(argc, argv, &args)) return 2;
  StopOnSignals();
  outbox::testing::MockCluster cluster(args.brokers);
  CreateTopics(args, &cluster);
  std::cout << "bootstrap " << cluster.bootstrap() << std::endl;
  std::unique_ptr<outbox::testing::ControlServer> server;
  if (args.control_port >= 0) {
    server = std::make_unique<outbox::testing::ControlServer>(args.control_port, &cluster);
    std::cout << "control 127.0.0.1:" << server->port() << std::endl;
  }
  ServeCommands(args.control, &cluster);
  return 0;
}
