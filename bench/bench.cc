// The benchmark's setup, its relay processes and the stage table (bench.h).
#include "bench.h"

#include <cppconn/exception.h>
#include <librdkafka/rdkafka.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "report.h"

namespace outbox {
namespace bench {

std::string WorkloadName(int64_t aggregates, int per_aggregate) {
  return std::to_string(aggregates) + "x" + std::to_string(per_aggregate);
}

void Say(const std::string& s) { std::cerr << "[bench] " << s << std::endl; }

bool Bench::Want(const std::string& stage) const {
  for (const auto& s : o_.stages)
    if (s == stage || s == "all") return true;
  return false;
}

void Bench::StartBroker() {
  std::string log = o_.out_dir + "/broker.log";
  std::remove(log.c_str());
  // The fleet topic has partitions of its own (TOPIC:PARTITIONS).
  broker_ = Child({o_.broker_bin, "--partitions", std::to_string(kPartitions), "--topics",
                   std::string("outbox.event.Order,") + kLatencyTopic + "," + kProbeTopic + "," +
                       kFleetTopic + ":" + std::to_string(s_.fleet_shards)},
                  log);
  double deadline = MonoSeconds() + 20;
  while (MonoSeconds() < deadline) {
    std::string text = ReadFile(log);
    size_t p = text.find("bootstrap ");
    if (p != std::string::npos && text.find('\n', p) != std::string::npos) {
      bootstrap_ = Trim(text.substr(p + 10, text.find('\n', p) - p - 10));
      Say("mock broker (pid " + std::to_string(broker_.pid()) + ") at " + bootstrap_);
      return;
    }
    if (!broker_.running()) break;
    SleepSeconds(0.05);
  }
  throw std::runtime_error("the mock broker did not start; see " + log);
}

void Bench::Machine() {
  auto& m = r_.machine;
  m["nproc"] = std::to_string(sysconf(_SC_NPROCESSORS_ONLN));
  std::string cpuinfo = ReadFile("/proc/cpuinfo");
  size_t p = cpuinfo.find("model name");
  if (p != std::string::npos) {
    size_t c = cpuinfo.find(':', p), e = cpuinfo.find('\n', p);
    m["cpu"] = Trim(cpuinfo.substr(c + 1, e - c - 1));
  }
  std::string meminfo = ReadFile("/proc/meminfo");
  long long kb = 0;
  if (sscanf(meminfo.c_str(), "MemTotal: %lld kB", &kb) == 1)
    m["ram"] = Fmt("%.1f GiB", static_cast<double>(kb) / 1024 / 1024);
  utsname u{};
  if (uname(&u) == 0) m["kernel"] = std::string(u.sysname) + " " + u.release;
  m["mariadb"] = db_->QueryString("SELECT VERSION()");
  m["buffer_pool"] =
      Fmt("%.0f MiB",
          static_cast<double>(db_->QueryInt("SELECT @@innodb_buffer_pool_size")) / 1048576.0);
  m["flush_log_at_trx_commit"] = db_->QueryString("SELECT @@innodb_flush_log_at_trx_commit");
  m["binlog"] = BinlogOn() ? "on, binlog_format=" + db_->QueryString("SELECT @@binlog_format") +
                                 ", sync_binlog=" + db_->QueryString("SELECT @@sync_binlog")
                           : std::string("off");
  m["librdkafka"] = rd_kafka_version_str();
  std::string props;
  for (const std::string& kv : o_.kafka_properties)
    props += (props.empty() ? "`" : ", `") + kv + "`";
  if (!props.empty()) m["kafka_properties"] = props;
  m["relay"] = RelayVersion(o_.relay_bin);
  if (Comparing()) m["compare_relay"] = RelayVersion(o_.compare_relay_bin);
  m["commit"] = o_.commit;
  m["command"] = o_.command;
}

std::string Bench::RelayVersion(const std::string& bin) {
  std::string vlog = o_.out_dir + "/version.txt";
  std::remove(vlog.c_str());
  Child v({bin, "version"}, vlog);
  v.Wait(10);
  // Its version and libraries, without the revision line: the docs name no
  // commits (the run's JSON keeps it under "commit").
  std::istringstream lines(Trim(ReadFile(vlog)));
  std::string version, line;
  while (std::getline(lines, line))
    if (line.rfind("revision ", 0) != 0) version += (version.empty() ? "" : ";") + line;
  return version;
}

bool Bench::BinlogOn() { return db_->QueryInt("SELECT @@log_bin") == 1; }

bool Bench::HaveLoadBinary(const std::string& stage) {
  if (!o_.load_bin.empty()) return true;
  r_.notes.push_back(stage + " not measured: no outbox-load binary (build/outbox-load)");
  Say(r_.notes.back());
  return false;
}

void Bench::PurgeBinlogs() {
  // Between stages of a full run, with no relay of ours following the log:
  // keeps the binary log from growing over the whole run. Not in --quick,
  // whose server (ctest's) other tests may be reading.
  if (o_.quick || !BinlogOn()) return;
  try {
    db_->Exec("FLUSH BINARY LOGS");
    std::string current = db_->QueryString("SHOW MASTER STATUS");
    if (!current.empty()) db_->Exec("PURGE BINARY LOGS TO '" + current + "'");
  } catch (const sql::SQLException& e) {  // e.g. a log still being read: keep it
    r_.notes.push_back(std::string("binary logs not purged between stages: ") + e.what());
  }
}

std::string Bench::ServiceYaml(const RelaySpec& spec, int i) const {
  const bool one = spec.services == 1;
  const bool own_db = !spec.database_prefix.empty();
  std::string y;
  y += "  - name: " + (one ? std::string("order") : "svc" + std::to_string(i)) + "\n";
  y += "    mysql:\n";
  y += "      host: " + o_.db.host + "\n";
  y += "      port: " + std::to_string(o_.db.port) + "\n";
  y += "      user: " + o_.db.user + "\n";
  if (!o_.db.password.empty()) y += "      password_env: OUTBOX_BENCH_DB_PASSWORD\n";
  std::string database = own_db ? spec.database_prefix + std::to_string(i) : o_.db.database;
  if (one && !spec.database.empty()) database = spec.database;
  y += "      database: " + database + "\n";
  y += "      table: " + (one || own_db ? spec.table : "idle_" + std::to_string(i)) + "\n";
  if (!spec.ordering.empty()) y += "    ordering: " + spec.ordering + "\n";
  if (spec.batch > 0) y += "    batch_size: " + std::to_string(spec.batch) + "\n";
  if (!spec.wakeup.empty()) y += "    wakeup: " + spec.wakeup + "\n";
  if (!spec.value_format.empty()) y += FormatYaml(spec.value_format);
  return y;
}

std::string Bench::WriteConfig(const RelaySpec& spec, int http_port) {
  std::string path = o_.out_dir + "/relay-" + std::to_string(++config_seq_) + ".yaml";
  std::string y;
  y += "# written by outbox-bench\n";
  // Unique per relay process: relays running side by side (the wakeup stage)
  // must not derive one binlog server_id from one instance_id.
  y += "instance_id: bench-" + std::to_string(config_seq_) + "\n";
  y += "http:\n  listen: 127.0.0.1:" + std::to_string(http_port) + "\n";
  y += "kafka:\n  bootstrap_servers: " + bootstrap_ + "\n";
  if (!spec.registry_url.empty()) y += "  schema_registry:\n    url: " + spec.registry_url + "\n";
  if (!o_.kafka_properties.empty()) y += "  properties:\n";
  for (const std::string& kv : o_.kafka_properties) {
    const size_t eq = kv.find('=');
    y += "    " + kv.substr(0, eq) + ": \"" + kv.substr(eq + 1) + "\"\n";
  }
  if (!spec.fleet_topic.empty()) {
    y += "fleet:\n  group_id: outbox-bench-fleet\n  topic: " + spec.fleet_topic + "\n";
    if (spec.fleet_session_timeout_ms > 0)
      y += "  session_timeout_ms: " + std::to_string(spec.fleet_session_timeout_ms) + "\n";
  }
  y += "services:\n";
  for (int i = 0; i < spec.services; ++i) y += ServiceYaml(spec, i);
  WriteFile(path, y);
  return path;
}

Running Bench::StartRelays(const RelaySpec& spec, int count, const std::string& tag) {
  Running r;
  for (int i = 0; i < count; ++i) {
    int port = FreePort();
    std::string cfg = WriteConfig(spec, port);
    std::string log = o_.out_dir + "/relay-" + tag + "-" + std::to_string(i) + ".log";
    const std::string& bin = spec.relay_bin.empty() ? o_.relay_bin : spec.relay_bin;
    r.procs.emplace_back(std::vector<std::string>{bin, "run", "--config", cfg}, log);
    r.ports.push_back(port);
    r.configs.push_back(cfg);
    r.logs.push_back(log);
  }
  // Ready: every service's database answered and the broker is reachable.
  WaitReady(&r, tag, spec.services > 10 ? 180 : 60);
  if (spec.wakeup == "binlog") {
    r.binlog_up = WaitBinlogUp(r, spec.services, 30);
    if (!r.binlog_up)
      r_.notes.push_back("relay " + tag +
                         ": the binlog stream was not up 30 s after /readyz (it polls meanwhile); "
                         "see its log");
  }
  return r;
}

void Bench::WaitReady(Running* r, const std::string& tag, double timeout_s) {
  double deadline = MonoSeconds() + timeout_s;
  for (size_t i = 0; i < r->procs.size(); ++i) {
    for (;;) {
      int status = 0;
      if (HttpGet(r->ports[i], "/readyz", &status) && status == 200) break;
      if (!r->procs[i].running())
        throw std::runtime_error("relay exited during startup; see " + o_.out_dir + "/relay-" +
                                 tag + "-" + std::to_string(i) + ".log");
      if (MonoSeconds() > deadline)
        throw std::runtime_error(Fmt("relay not ready after %.0f s", timeout_s));
      SleepSeconds(0.05);
    }
  }
}

bool Bench::WaitBinlogUp(const Running& r, int services, double timeout_s) {
  const double want = static_cast<double>(services) * static_cast<double>(r.ports.size());
  double deadline = MonoSeconds() + timeout_s;
  while (MonoSeconds() < deadline) {
    if (SumOverRelays(r, "outbox_wakeup_binlog_up") >= want) return true;
    SleepSeconds(0.1);
  }
  return false;
}

double Bench::SumOverRelays(const Running& r, const std::string& metric) {
  double sum = 0;
  for (int port : r.ports) {
    auto body = HttpGet(port, "/metrics");
    if (!body) return -1;
    sum += SumMetric(*body, metric);
  }
  return sum;
}

double Bench::Published(const Running& r) {
  return SumOverRelays(r, "outbox_events_published_total");
}

void Bench::StopAll(Running* r, const std::string& what) {
  for (auto& p : r->procs) {
    int st = p.Stop(60);
    if (st != 0)
      r_.notes.push_back(Fmt("a relay exited with status %d after %s", st, what.c_str()));
  }
}

int Bench::Run() {
  r_.started_unix = static_cast<double>(WallMicros()) / 1e6;
  r_.load_before = Trim(ReadFile("/proc/loadavg"));
  double t_start = MonoSeconds();
  std::filesystem::create_directories(o_.out_dir);
  if (!o_.db.password.empty()) setenv("OUTBOX_BENCH_DB_PASSWORD", o_.db.password.c_str(), 1);
  db_ = std::make_unique<Db>(o_.db, true);
  Machine();
  StartBroker();
  Say("building the workload templates");
  main_tpl_ = "tpl_main";
  cost_tpl_ = "tpl_cost";
  db_->BuildTemplate(main_tpl_, s_.main_aggregates, s_.events_per_aggregate);
  db_->BuildTemplate(cost_tpl_, s_.cost_aggregates, s_.events_per_aggregate);
  db_->CreateOutbox(kMainTable);
  db_->CreateDrainProcedure(kMainTable);
  // Our own probes (two SHOW GLOBAL STATUS) until the idle stage measures
  // them over a whole window.
  r_.idle_baseline_questions = IdleWindow(nullptr, 0, nullptr);

  struct Stage {
    const char* name;
    void (Bench::*run)();
  };
  static constexpr Stage kStages[] = {
      {"drain", &Bench::StageDrain},       {"sweep", &Bench::StageSweep},
      {"latency", &Bench::StageLatency},   {"idle", &Bench::StageIdle},
      {"scale", &Bench::StageScale},       {"wakeup", &Bench::StageWakeup},
      {"services", &Bench::StageServices}, {"fleet", &Bench::StageFleet},
      {"dbcost", &Bench::StageDbCost},     {"formats", &Bench::StageFormats}};
  for (const Stage& stage : kStages) {
    if (!Want(stage.name)) continue;
    PurgeBinlogs();
    double t0 = MonoSeconds();
    (this->*stage.run)();
    r_.stage_seconds[stage.name] = MonoSeconds() - t0;
    Say(Fmt("stage %s took %.0f s", stage.name, r_.stage_seconds[stage.name]));
  }

  broker_.Stop(10);
  r_.seconds = MonoSeconds() - t_start;
  r_.load_after = Trim(ReadFile("/proc/loadavg"));
  Report report(o_, s_, r_);
  std::cout << report.Table();
  if (Comparing()) std::cout << "\n" << report.CompareTable();
  report.WriteFiles();
  return 0;
}

}  // namespace bench
}  // namespace outbox
