// outbox-bench: measures the relay against the database's own limit, on one
// MariaDB and one broker, in one run. See docs/BENCHMARKS.md (which it
// writes) for what each stage measures and how; scripts/bench runs it. This
// file is the command line; bench.h the driver and its stages.
#include <cppconn/exception.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "bench.h"

namespace outbox {
namespace bench {
namespace {

std::string Env(const char* k, const std::string& d) {
  const char* v = std::getenv(k);
  return v ? std::string(v) : d;
}

std::string Executable(const std::string& dir, const std::string& name) {
  std::string p = dir + "/" + name;
  return access(p.c_str(), X_OK) == 0 ? p : "";
}

std::vector<std::string> SplitList(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string t; std::getline(in, t, sep);) out.push_back(t);
  return out;
}

// What the command line does not say: the database from scripts/test's and
// scripts/bench's OUTBOX_TEST_MYSQL_*, the binaries next to build/bench/.
struct Defaults {
  std::string build_dir;
  std::string mysqld_pid_file;
};

Defaults FillDefaults(const char* argv0, Options* o) {
  o->db.host = Env("OUTBOX_TEST_MYSQL_HOST", "127.0.0.1");
  o->db.port = std::stoi(Env("OUTBOX_TEST_MYSQL_PORT", "3306"));
  o->db.user = Env("OUTBOX_TEST_MYSQL_USER", "root");
  o->db.password = Env("OUTBOX_TEST_MYSQL_PASSWORD", "");
  Defaults d;
  std::string self_dir =
      std::filesystem::absolute(std::filesystem::path(argv0)).parent_path().string();
  d.build_dir = std::filesystem::path(self_dir).parent_path().string();
  o->relay_bin = Executable(d.build_dir, "outbox-relay");
  o->broker_bin = Executable(d.build_dir, "outbox-mock-broker");
  o->load_bin = Executable(d.build_dir, "outbox-load");
  o->source_dir = OUTBOX_SOURCE_DIR;
  d.mysqld_pid_file = Env("OUTBOX_TEST_MYSQL_DIR", "");
  if (!d.mysqld_pid_file.empty()) d.mysqld_pid_file += "/mysqld.pid";
  return d;
}

struct Lists {
  std::string stages, drains, wakeup_rates;
  bool no_latency = false;
  int services = 0;        // 0: the size's default
  int fleet_services = 0;  // 0: the size's default
  int fleet_kills = -1;    // -1: the size's default
};

// The options that size the stages.
void AddSizeOptions(CLI::App& app, Lists& l) {
  app.add_option("--services", l.services,
                 "services (databases) of the services stage (default 100, --quick 10)")
      ->check(CLI::Range(1, 1000));
  app.add_option("--fleet-services", l.fleet_services,
                 "databases of the fleet stage (default 300, --quick 12)")
      ->check(CLI::Range(3, 1000));
  app.add_option("--fleet-kills", l.fleet_kills,
                 "kill -9 of a fleet member, one at a time (default 5, --quick 1)")
      ->check(CLI::Range(0, 100));
  app.add_option("--wakeup-rates", l.wakeup_rates,
                 "offered rates (events/s) of the wakeup stage, comma-separated (default "
                 "1,10,100,1000,10000; 90 s of load at 1/s, 30 s up to 1,000/s, 15 s above, in 3 "
                 "slices per mode)");
}

void AddOptions(CLI::App& app, Options& o, Defaults& d, Lists& l) {
  app.add_option("--mysql-host", o.db.host)->capture_default_str();
  app.add_option("--mysql-port", o.db.port)->capture_default_str();
  app.add_option("--mysql-user", o.db.user)->capture_default_str();
  app.add_option("--mysql-password", o.db.password);
  app.add_option("--database", o.db.database, "scratch database (dropped tables inside)")
      ->capture_default_str();
  app.add_option("--mysqld-pid-file", d.mysqld_pid_file, "for the database's CPU time");
  app.add_option("--relay", o.relay_bin)->capture_default_str();
  app.add_option("--compare-relay", o.compare_relay_bin,
                 "compare with this other outbox-relay build: the wakeup stage runs its poll and "
                 "binlog relays beside this build's in --runs alternating slices, each drain of "
                 "the drain and wakeup stages runs with both builds in turn; prints a verdict per "
                 "rate, mode and drain, and --doc gets only its comparison part")
      ->check(CLI::ExistingFile);
  app.add_option("--broker", o.broker_bin)->capture_default_str();
  app.add_option("--load", o.load_bin)->capture_default_str();
  app.add_option("--out", o.out_dir, "results directory")->required();
  app.add_option("--doc", o.doc_path, "write the report here (e.g. docs/BENCHMARKS.md)");
  app.add_option("--doc-template", o.doc_template, "bench/BENCHMARKS.md.in");
  app.add_option("--figures", o.figures_rel, "figures' path relative to the report")
      ->capture_default_str();
  app.add_option("--command", o.command, "the command line to print in the report");
  app.add_option("--commit", o.commit, "git commit measured");
  app.add_option("--source-dir", o.source_dir,
                 "the source tree: the formats stage's registry (tests/support/test_registry.py) "
                 "and schemas (bench/schemas/)")
      ->capture_default_str();
  app.add_flag("--quick", o.quick,
               "tiny sizes, one run (unless --runs): proves the benchmark works");
  app.add_option("--kafka-property", o.kafka_properties,
                 "KEY=VALUE producer property for every relay (kafka.properties), repeatable")
      ->check([](const std::string& kv) {
        return kv.find('=') == std::string::npos ? std::string("expected KEY=VALUE") : "";
      });
  app.add_option("--runs", o.runs,
                 "repetitions of the headline drains (and, with --compare-relay, of each wakeup "
                 "rate's slices)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  app.add_option("--sweep-runs", o.sweep_runs)->capture_default_str();
  app.add_option("--stages", l.stages,
                 "comma-separated subset of drain,sweep,latency,idle,scale,wakeup,services,fleet,"
                 "dbcost,formats (fleet, dbcost or formats alone: --doc gets only its part)");
  app.add_flag("--no-latency", l.no_latency, "skip the latency stage");
  AddSizeOptions(app, l);
  app.add_option("--drains", l.drains,
                 "drain stage configurations MODE:RELAYS[:cost], comma-separated (default: all)");
}

// --quick: tiny sizes, one run of everything; proves the benchmark works.
Sizes QuickSizes() {
  return Sizes{.main_aggregates = 2000,
               .cost_aggregates = 1000,
               .big_aggregates = 5000,
               .sent_rows = 50000,
               .latency_seconds = 3,
               .latency_runs = 1,
               .latency_rate = 200,
               .idle_seconds = 2,
               .sweep_batches = {100},
               .wakeup_rates = {10, 1000},
               .wakeup_seconds = {3, 3},
               .wakeup_slices = 1,
               .wakeup_idle_seconds = 3,
               .settle_seconds = 2,
               .services = 10,
               .services_seconds = 3,
               .fleet_services = 12,
               .fleet_shards = 6,
               .fleet_kills = 1,
               .fleet_session_timeout_ms = 6000,
               .dbcost_rates = {10, 1000},
               .dbcost_seconds = {3, 2},
               .formats_aggregates = 1000};
}

// The size options given on the command line, over the defaults or --quick's.
void ApplySizes(const Lists& l, Sizes* sizes) {
  Sizes& s = *sizes;
  if (l.services > 0) s.services = l.services;
  if (l.fleet_services > 0) s.fleet_services = l.fleet_services;
  if (l.fleet_kills >= 0) s.fleet_kills = l.fleet_kills;
  if (!l.wakeup_rates.empty()) {
    s.wakeup_rates.clear();
    s.wakeup_seconds.clear();
    for (const std::string& r : SplitList(l.wakeup_rates, ',')) {
      s.wakeup_rates.push_back(std::stod(r));
      s.wakeup_seconds.push_back(s.wakeup_rates.back() <= 1      ? 90
                                 : s.wakeup_rates.back() <= 1000 ? 30
                                                                 : 15);
    }
  }
}

int RunBench(const Options& o, const Sizes& s) {
  try {
    Bench bench(o, s);
    return bench.Run();
  } catch (const sql::SQLException& e) {
    std::cerr << "outbox-bench: MySQL error " << e.getErrorCode() << ": " << e.what() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "outbox-bench: " << e.what() << "\n";
  }
  return 1;
}

}  // namespace
}  // namespace bench
}  // namespace outbox

int main(int argc, char** argv) {
  using namespace outbox::bench;
  Options o;
  Sizes s;
  Defaults d = FillDefaults(argv[0], &o);
  Lists l;
  CLI::App app{
      "outbox-bench: drain rate against the in-server database limit, latency, idle cost, "
      "scale and the binlog wake-up of outbox-relay, on one MariaDB and one mock broker. "
      "Usually run by scripts/bench."};
  AddOptions(app, o, d, l);
  CLI11_PARSE(app, argc, argv);

  if (!l.stages.empty()) o.stages = SplitList(l.stages, ',');
  if (l.no_latency) std::erase(o.stages, std::string("latency"));
  if (!l.drains.empty()) o.drain_set = SplitList(l.drains, ',');
  if (o.quick) {
    s = QuickSizes();
    if (app.count("--runs") == 0) o.runs = 1;  // a quick comparison may ask for more
    o.sweep_runs = 1;
  }
  ApplySizes(l, &s);
  if (o.relay_bin.empty() || o.broker_bin.empty()) {
    std::cerr << "outbox-bench: cannot find outbox-relay / outbox-mock-broker next to "
              << d.build_dir << "; pass --relay and --broker\n";
    return 2;
  }
  if (!d.mysqld_pid_file.empty()) {
    std::string pid = Trim(ReadFile(d.mysqld_pid_file));
    if (!pid.empty()) o.mysqld_pid = std::stoi(pid);
  }
  return RunBench(o, s);
}
