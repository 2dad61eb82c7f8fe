#pragma once

// Helpers for the fault scenarios (tests/faults/): relays as separate
// `outbox-relay run` processes (so they can be SIGKILLed, SIGSTOPped and
// SIGTERMed), their /metrics and /readyz, the workload generator and the
// checker as programs. Binaries come from the build (compile definitions).

#include <chrono>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "support/http_probe.h"
#include "support/process.h"

namespace outbox::testing {

// A fresh scratch directory for one scenario's configs, logs and reports;
// kept after the test (under $TMPDIR) so a failure can be read.
std::string ScratchDir(const std::string& scenario);

// Seed and size knobs, from the environment so that other people can rerun
// the scenarios with other values: OUTBOX_FAULTS_SEED (default `fallback`),
// OUTBOX_FAULTS_SCALE (a factor on event counts, default 1). And
// OUTBOX_FAULTS_KAFKA_DEBUG (librdkafka debug contexts for every relay).
uint64_t ScenarioSeed(uint64_t fallback);
double ScenarioScale();

struct RelaySpec {
  std::string service = "faults";
  MysqlConfig mysql;  // host, port, user, password, database
  std::string bootstrap;
  int batch_size = 200;
  int64_t lease_ms = 4000;
  int poll_interval_ms = 50;
  int max_inflight_batches = 4;
  int gauge_interval_ms = 300;
  std::string ordering = "per_aggregate";
  std::string dead_policy = "block";
  int max_attempts = 50;
  int64_t initial_backoff_ms = 100;
  int64_t max_backoff_ms = 1000;
  std::map<std::string, std::string> kafka_properties;  // kafka.properties
  std::string log_level = "info";
  int connect_timeout_ms = 1000;
  int read_timeout_ms = 5000;
  // poll or binlog; OUTBOX_FAULTS_WAKEUP sets the default, so that ctest
  // runs the scenarios tagged [wakeup] a second time with `wakeup: binlog`
  // (tests/CMakeLists.txt).
  std::string wakeup = DefaultWakeup();
  static std::string DefaultWakeup();
  // More entries of the `services` list, as YAML ("  - name: ...\n"), e.g.
  // a second service on another database of the same process.
  std::string extra_services_yaml;
  // More top-level keys, as YAML (e.g. a `fleet:` block).
  std::string top_yaml;
  std::string topic;  // the service's topic template; empty: the default
  // The relay binary (a copy elsewhere, e.g. one another user may run) and
  // the command it runs under ({"setpriv", "--reuid=...", ...}); empty: as
  // this process.
  std::string binary;  // empty: the build's outbox-relay
  std::vector<std::string> launcher;
};

// One `outbox-relay run --config FILE` process.
class RelayProcess {
 public:
  RelayProcess(std::string name, const std::string& dir, RelaySpec spec);
  ~RelayProcess();

  // Starts the relay and waits until it serves HTTP (the log names the port)
  // and, with `wakeup: binlog`, until its binlog stream is up.
  bool Start();
  // With `wakeup: binlog`: waits until outbox_wakeup_binlog_up is 1 (true at
  // once for `wakeup: poll`, and in a fleet, whose services start later).
  bool WaitWakeupsUp(std::chrono::milliseconds timeout);
  // SIGTERM and wait; returns the wait status or nullopt on timeout.
  std::optional<int> Stop(std::chrono::milliseconds timeout);
  void Signal(int sig) { proc_.Signal(sig); }
  void Kill() { proc_.Kill(); }
  bool running() { return proc_.running(); }
  LoggedProcess& process() { return proc_; }

  int port() const { return port_; }
  const std::string& name() const { return name_; }
  const std::string& log_path() const { return log_; }
  const std::string& config_path() const { return config_; }
  const RelaySpec& spec() const { return spec_; }
  std::string Metrics();                   // "" when it does not answer
  double Metric(const std::string& name);  // summed over this relay's service
  int ReadyzStatus();

  // Counters survive restarts of this relay: the sum of the values its
  // earlier incarnations reported last (see Remember).
  void Remember();
  double Total(const std::string& name);

 private:
  std::string name_;
  std::string config_;
  std::string log_;
  RelaySpec spec_;
  LoggedProcess proc_;
  int port_ = 0;
  std::map<std::string, double> last_seen_;  // metric -> last value of the current incarnation
  std::map<std::string, double> earlier_;    // metric -> sum over earlier incarnations
};

// outbox-load with `args` after the connection flags; returns its exit code.
int RunLoad(const MysqlConfig& mysql, const std::vector<std::string>& args,
            const std::string& log_path, std::chrono::milliseconds timeout);
// The same in the background.
bool StartLoad(LoggedProcess* proc, const MysqlConfig& mysql, const std::vector<std::string>& args,
               const std::string& log_path);

struct CheckResult {
  int exit_code = -1;
  nlohmann::json report;  // the --json output
  std::string output;     // the human summary
};
// outbox-check against `mysql` and `bootstrap`, topics by regex
// "^outbox\.event\." unless `extra` says otherwise; killed after `timeout`
// (exit_code then says so and report is null).
CheckResult RunCheck(const MysqlConfig& mysql, const std::string& bootstrap,
                     const std::vector<std::string>& extra, const std::string& dir,
                     const std::string& tag,
                     std::chrono::milliseconds timeout = std::chrono::minutes(5));

int64_t UnsentRows(const MysqlConfig& mysql);
std::map<std::string, int64_t> RowsByStatus(const MysqlConfig& mysql);

// One line per scenario, printed and appended to $OUTBOX_FAULTS_FIGURES when
// set (docs/RELIABILITY.md is written from these).
void RecordFigures(const std::string& scenario, const nlohmann::json& figures);

}  // namespace outbox::testing
