// outbox-bench: measures the relay against the database's own limit, on one
// MariaDB and one broker, in one run. See docs/BENCHMARKS.md (which it
// writes) for what each stage measures and how; scripts/bench runs it.
#include <cppconn/exception.h>
#include <librdkafka/rdkafka.h>
#include <mysql_driver.h>
#include <sys/utsname.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "kafka_clock.h"
#include "report.h"
#include "stages.h"
#include "util.h"

namespace outbox::bench {

std::string WorkloadName(int64_t aggregates, int per_aggregate) {
  return std::to_string(aggregates) + "x" + std::to_string(per_aggregate);
}

namespace {

constexpr int kPartitions = 4;
const char* kMainTable = "t_outbox";
const char* kBigTable = "t_big";
const char* kLatencyTable = "t_latency";
const char* kLatencyTopic = "outbox.event.Lat";
const char* kProbeTopic = "outbox.bench.probe";

void Say(const std::string& s) { std::cerr << "[bench] " << s << std::endl; }

struct RelaySpec {
  std::string table = kMainTable;
  std::string ordering;  // empty: the default (per_aggregate), key left out
  int batch = 0;         // 0: the default, key left out
  int services = 1;      // >1: services svc0..svcN-1 on tables idle_0..
};

class Bench {
 public:
  Bench(Options o, Sizes s) : o_(std::move(o)), s_(std::move(s)) {}

  int Run();

 private:
  // --- setup
  void StartBroker();
  void Machine();
  // --- relays
  std::string WriteConfig(const RelaySpec& spec, int index, int http_port);
  struct Running {
    std::vector<Child> procs;
    std::vector<int> ports;
  };
  Running StartRelays(const RelaySpec& spec, int count, const std::string& tag);
  double Published(const Running& r);
  // --- drains
  struct DrainSpec {
    std::string stage, mode;
    std::string tpl;
    int64_t events = 0;
    int batch = 500;
    int relays = 1;
    bool big = false;  // on t_big, above its SENT rows
    bool sample_rss = false;
    int rep = 0;
  };
  Drain RunDrain(const DrainSpec& spec);
  void ResetFor(const DrainSpec& spec, Drain* d);
  // --- stages
  void StageDrain();
  void StageSweep();
  void StageLatency();
  void StageIdle();
  void StageScale();
  bool Want(const std::string& stage) const;

  Options o_;
  Sizes s_;
  Results r_;
  std::unique_ptr<Db> db_;
  Child broker_;
  std::string bootstrap_;
  int config_seq_ = 0;
  std::string main_tpl_, cost_tpl_;
  int64_t big_next_id_ = 0;  // the next big-table run's ids start above this
};

bool Bench::Want(const std::string& stage) const {
  for (const auto& s : o_.stages)
    if (s == stage || s == "all") return true;
  return false;
}

void Bench::StartBroker() {
  std::string log = o_.out_dir + "/broker.log";
  std::remove(log.c_str());
  broker_ = Child({o_.broker_bin, "--partitions", std::to_string(kPartitions), "--topics",
                   std::string("outbox.event.Order,") + kLatencyTopic + "," + kProbeTopic},
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
  m["librdkafka"] = rd_kafka_version_str();
  std::string vlog = o_.out_dir + "/version.txt";
  std::remove(vlog.c_str());
  Child v({o_.relay_bin, "version"}, vlog);
  v.Wait(10);
  std::string version = Trim(ReadFile(vlog));
  std::replace(version.begin(), version.end(), '\n', ';');
  m["relay"] = version;
  m["commit"] = o_.commit;
  m["command"] = o_.command;
}

std::string Bench::WriteConfig(const RelaySpec& spec, int index, int http_port) {
  std::string path = o_.out_dir + "/relay-" + std::to_string(++config_seq_) + ".yaml";
  std::string y;
  y += "# written by outbox-bench\n";
  y += "instance_id: bench-" + std::to_string(index) + "\n";
  y += "http:\n  listen: 127.0.0.1:" + std::to_string(http_port) + "\n";
  y += "kafka:\n  bootstrap_servers: " + bootstrap_ + "\n";
  y += "services:\n";
  for (int i = 0; i < spec.services; ++i) {
    y += "  - name: " + (spec.services == 1 ? std::string("order") : "svc" + std::to_string(i)) +
         "\n";
    y += "    mysql:\n";
    y += "      host: " + o_.db.host + "\n";
    y += "      port: " + std::to_string(o_.db.port) + "\n";
    y += "      user: " + o_.db.user + "\n";
    if (!o_.db.password.empty()) y += "      password_env: OUTBOX_BENCH_DB_PASSWORD\n";
    y += "      database: " + o_.db.database + "\n";
    y += "      table: " + (spec.services == 1 ? spec.table : "idle_" + std::to_string(i)) + "\n";
    if (!spec.ordering.empty()) y += "    ordering: " + spec.ordering + "\n";
    if (spec.batch > 0) y += "    batch_size: " + std::to_string(spec.batch) + "\n";
  }
  WriteFile(path, y);
  return path;
}

Bench::Running Bench::StartRelays(const RelaySpec& spec, int count, const std::string& tag) {
  Running r;
  for (int i = 0; i < count; ++i) {
    int port = FreePort();
    std::string cfg = WriteConfig(spec, i, port);
    std::string log = o_.out_dir + "/relay-" + tag + "-" + std::to_string(i) + ".log";
    r.procs.emplace_back(std::vector<std::string>{o_.relay_bin, "run", "--config", cfg}, log);
    r.ports.push_back(port);
  }
  // Ready: every service's database answered and the broker is reachable.
  double deadline = MonoSeconds() + 60;
  for (size_t i = 0; i < r.procs.size(); ++i) {
    for (;;) {
      int status = 0;
      if (HttpGet(r.ports[i], "/readyz", &status) && status == 200) break;
      if (!r.procs[i].running())
        throw std::runtime_error("relay exited during startup; see " + o_.out_dir + "/relay-" +
                                 tag + "-" + std::to_string(i) + ".log");
      if (MonoSeconds() > deadline) throw std::runtime_error("relay not ready after 60 s");
      SleepSeconds(0.05);
    }
  }
  return r;
}

double Bench::Published(const Running& r) {
  double sum = 0;
  for (int port : r.ports) {
    auto body = HttpGet(port, "/metrics");
    if (!body) return -1;
    sum += SumMetric(*body, "outbox_events_published_total");
  }
  return sum;
}

void Bench::ResetFor(const DrainSpec& spec, Drain* d) {
  // t_big keeps the rows of its earlier runs (SENT, below the next run's
  // ids): deleting them would leave InnoDB purging 200,000 rows during the
  // next drain, which an empty table (TRUNCATE) does not have to do.
  if (!spec.big) db_->Exec(std::string("TRUNCATE TABLE ") + kMainTable);
  d->purge_wait_s = db_->WaitPurge(60);
}

Drain Bench::RunDrain(const DrainSpec& spec) {
  Drain d;
  d.stage = spec.stage;
  d.mode = spec.mode;
  d.batch = spec.batch;
  d.relays = spec.mode == "db" ? 0 : spec.relays;
  d.rep = spec.rep;
  d.events = spec.events;
  d.workload = WorkloadName(spec.events / s_.events_per_aggregate, s_.events_per_aggregate);
  if (spec.big) d.table_state = std::to_string(s_.sent_rows) + " SENT";
  const std::string table = spec.big ? kBigTable : kMainTable;
  const int64_t offset = spec.big ? big_next_id_ : 0;
  if (spec.big) big_next_id_ += spec.events;
  ResetFor(spec, &d);

  Running relays;
  std::unique_ptr<Db> proc_conn;
  if (spec.mode == "db") {
    // A fresh procedure for every call: none of the server's cached plans
    // survive the TRUNCATE before it.
    db_->CreateDrainProcedure(kMainTable);
    proc_conn = std::make_unique<Db>(o_.db);
  } else {
    RelaySpec rs;
    rs.table = table;
    rs.ordering = spec.mode;
    rs.batch = spec.batch;
    relays = StartRelays(rs, spec.relays, spec.stage + "-" + spec.mode);
    SleepSeconds(0.3);
  }
  auto cpu = [](pid_t pid) { return pid > 0 ? ProcessCpuSeconds(pid).value_or(0) : 0.0; };
  auto relay_cpu = [&] {
    double s = 0;
    for (auto& p : relays.procs) s += cpu(p.pid());
    return s;
  };
  auto st0 = db_->GlobalStatus();
  double db0 = cpu(o_.mysqld_pid), br0 = cpu(broker_.pid()), re0 = relay_cpu();

  db_->LoadTemplate(table, spec.tpl, offset);  // one commit: the backlog appears
  double t0 = MonoSeconds();
  double t1 = 0;
  if (spec.mode == "db") {
    int64_t n = proc_conn->CallDrain(spec.batch, 30);
    t1 = MonoSeconds();
    if (n != spec.events)
      r_.notes.push_back(Fmt("in-server drain settled %lld of %lld events",
                             static_cast<long long>(n), static_cast<long long>(spec.events)));
  } else {
    double next_rss = t0;
    const double timeout = 900;
    for (;;) {
      double pub = Published(relays);
      double now = MonoSeconds();
      if (pub >= static_cast<double>(spec.events)) {
        t1 = now;
        break;
      }
      if (spec.sample_rss && now >= next_rss) {
        double rss = 0;
        for (auto& p : relays.procs)
          rss = std::max(rss, ProcessStatusMiB(p.pid(), "VmRSS").value_or(0));
        r_.rss_series.push_back({now - t0, static_cast<int64_t>(std::max(0.0, pub)), rss});
        next_rss = now + 0.25;
      }
      for (auto& p : relays.procs)
        if (!p.running()) throw std::runtime_error("a relay exited during a drain");
      if (now - t0 > timeout) throw std::runtime_error("drain did not finish in 900 s");
      SleepSeconds(0.02);
    }
  }
  d.seconds = t1 - t0;
  d.rate = static_cast<double>(spec.events) / d.seconds;
  auto st1 = db_->GlobalStatus();
  d.db_cpu_s = cpu(o_.mysqld_pid) - db0;
  d.broker_cpu_s = cpu(broker_.pid()) - br0;
  d.relay_cpu_s = relay_cpu() - re0;
  for (auto& p : relays.procs)
    d.relay_peak_rss_mib =
        std::max(d.relay_peak_rss_mib, ProcessStatusMiB(p.pid(), "VmHWM").value_or(0));
  d.fsyncs = st1["Innodb_data_fsyncs"] - st0["Innodb_data_fsyncs"];
  d.questions = st1["Questions"] - st0["Questions"];
  if (spec.sample_rss && !relays.procs.empty()) {
    r_.rss_series.push_back(
        {t1 - t0, spec.events, ProcessStatusMiB(relays.procs[0].pid(), "VmRSS").value_or(0)});
    r_.rss_series_events = spec.events;
  }
  for (auto& p : relays.procs) {
    int st = p.Stop(60);
    if (st != 0) r_.notes.push_back(Fmt("a relay exited with status %d after a drain", st));
  }
  int64_t sent = db_->QueryInt("SELECT COUNT(*) FROM " + table +
                               " WHERE status = 'SENT' AND id > " + std::to_string(offset));
  if (sent != spec.events)
    throw std::runtime_error(Fmt("after the drain %lld of %lld rows are SENT",
                                 static_cast<long long>(sent),
                                 static_cast<long long>(spec.events)));
  Say(
      Fmt("%-6s %-6s %-14s relays=%d batch=%-5d %-12s %9.0f events/s  (%.2f s; cpu db %.1f s, "
          "relay %.1f s, broker %.1f s)",
          d.stage.c_str(), d.workload.c_str(), d.mode.c_str(), d.relays, d.batch,
          d.table_state.c_str(), d.rate, d.seconds, d.db_cpu_s, d.relay_cpu_s, d.broker_cpu_s));
  r_.drains.push_back(d);
  return d;
}

void Bench::StageDrain() {
  const int64_t main_n = s_.main_aggregates * s_.events_per_aggregate;
  const int64_t cost_n = s_.cost_aggregates * s_.events_per_aggregate;
  for (int rep = 1; rep <= o_.runs; ++rep) {
    Say(Fmt("drain: repetition %d of %d", rep, o_.runs));
    auto spec = [&](const std::string& mode, int relays, const std::string& tpl, int64_t n) {
      DrainSpec d;
      d.stage = "drain";
      d.mode = mode;
      d.relays = relays;
      d.tpl = tpl;
      d.events = n;
      d.batch = s_.default_batch;
      d.rep = rep;
      return d;
    };
    for (const std::string& item : o_.drain_set) {
      std::vector<std::string> f;
      std::stringstream in(item);
      for (std::string t; std::getline(in, t, ':');) f.push_back(t);
      if (f.size() < 2) throw std::runtime_error("bad --drains item " + item);
      bool cost = f.size() > 2 && f[2] == "cost";
      RunDrain(spec(f[0], std::stoi(f[1]), cost ? cost_tpl_ : main_tpl_, cost ? cost_n : main_n));
    }
  }
}

void Bench::StageSweep() {
  const int64_t main_n = s_.main_aggregates * s_.events_per_aggregate;
  for (int rep = 1; rep <= o_.sweep_runs; ++rep) {
    for (int batch : s_.sweep_batches) {
      for (const char* mode : {"db", "none", "per_aggregate"}) {
        DrainSpec d;
        d.stage = "sweep";
        d.mode = mode;
        d.tpl = main_tpl_;
        d.events = main_n;
        d.batch = batch;
        d.rep = rep;
        RunDrain(d);
      }
    }
  }
}

void Bench::StageLatency() {
  if (o_.load_bin.empty()) {
    r_.notes.push_back("latency not measured: no outbox-load binary (build/outbox-load)");
    Say(r_.notes.back());
    return;
  }
  db_->CreateOutbox(kLatencyTable);
  // How late our consumer sees a message after the broker acknowledged it.
  Say("latency: probing the consumer's own delay");
  ProbeResult probe =
      ProbeConsumerDelay(bootstrap_, kProbeTopic, kPartitions, o_.quick ? 200 : 2000, 500);
  r_.probe_ack_ms = probe.ack_ms;
  r_.probe_late_ms = probe.recv_late_ms;

  RelaySpec rs;  // the default config: only the table is named
  rs.table = kLatencyTable;
  Running relay = StartRelays(rs, 1, "latency");
  SleepSeconds(1);
  int64_t next_aggregate = 1;
  for (int rep = 1; rep <= s_.latency_runs; ++rep) {
    TimingConsumer consumer(bootstrap_, kLatencyTopic, kPartitions);
    SleepSeconds(0.5);
    const int64_t planned = static_cast<int64_t>(s_.latency_rate * s_.latency_seconds);
    const int64_t aggregates = (planned + s_.events_per_aggregate - 1) / s_.events_per_aggregate;
    std::string json = o_.out_dir + "/load-" + std::to_string(rep) + ".json";
    std::remove(json.c_str());
    std::vector<std::string> argv = {o_.load_bin,
                                     "--host",
                                     o_.db.host,
                                     "--port",
                                     std::to_string(o_.db.port),
                                     "--user",
                                     o_.db.user,
                                     "--database",
                                     o_.db.database,
                                     "--table",
                                     kLatencyTable,
                                     "--aggregates",
                                     std::to_string(aggregates),
                                     "--events",
                                     std::to_string(s_.events_per_aggregate),
                                     "--first-aggregate-id",
                                     std::to_string(next_aggregate),
                                     "--aggregate-types",
                                     "Lat",
                                     "--writers",
                                     "8",
                                     "--rate",
                                     Fmt("%.0f", s_.latency_rate),
                                     "--json",
                                     json,
                                     "--quiet"};
    next_aggregate += aggregates;
    double cpu0 = ProcessCpuSeconds(relay.procs[0].pid()).value_or(0);
    auto st0 = db_->GlobalStatus();
    double w0 = MonoSeconds();
    const int64_t start_us = WallMicros();
    Child load(argv, o_.out_dir + "/load.log");
    int rc = load.Wait(s_.latency_seconds * 3 + 60);
    double w1 = MonoSeconds();
    double cpu1 = ProcessCpuSeconds(relay.procs[0].pid()).value_or(0);
    auto st1 = db_->GlobalStatus();
    if (rc != 0) throw std::runtime_error("outbox-load failed; see " + o_.out_dir + "/load.log");
    nlohmann::json j = nlohmann::json::parse(ReadFile(json));
    LatencyRun run;
    run.rep = rep;
    run.written = j.value("events", int64_t{0});
    run.offered_rate = j.value("events_per_second", 0.0);
    run.writer_max_lag_ms = j.value("max_lag_ms", 0.0);
    run.relay_cpu_pct = 100.0 * (cpu1 - cpu0) / (w1 - w0);
    run.relay_statements_per_s =
        (st1["Questions"] - st0["Questions"] - static_cast<double>(run.written)) / (w1 - w0);
    double deadline = MonoSeconds() + 60;
    while (consumer.count() < static_cast<size_t>(run.written) && MonoSeconds() < deadline)
      SleepSeconds(0.05);
    std::vector<Received> got = consumer.Take();
    if (got.size() < static_cast<size_t>(run.written))
      r_.notes.push_back(Fmt("latency run %d: consumed %zu of %lld events", rep, got.size(),
                             static_cast<long long>(run.written)));
    // The first second is warm-up (the relay wakes from idle polling).
    std::vector<double> lat, create;
    for (const Received& m : got) {
      if (m.ts_us <= 0 || m.ts_us < start_us + 1000000) continue;
      lat.push_back((m.recv_us - m.ts_us) / 1000.0);
      create.push_back((m.create_ms * 1000 - m.ts_us) / 1000.0);
    }
    run.measured = static_cast<int64_t>(lat.size());
    run.p50_ms = Quantile(lat, 0.5);
    run.p99_ms = Quantile(lat, 0.99);
    run.max_ms = Quantile(lat, 1);
    run.create_p50_ms = Quantile(create, 0.5);
    run.create_p99_ms = Quantile(create, 0.99);
    run.create_max_ms = Quantile(create, 1);
    r_.latency_samples_ms.insert(r_.latency_samples_ms.end(), lat.begin(), lat.end());
    r_.latency_create_samples_ms.insert(r_.latency_create_samples_ms.end(), create.begin(),
                                        create.end());
    r_.latency.push_back(run);
    Say(
        Fmt("latency run %d: %lld events at %.0f/s (writer max lag %.1f ms): insert->consumed "
            "p50 %.1f p99 %.1f max %.1f ms; insert->CreateTime p50 %.1f p99 %.1f ms; relay CPU "
            "%.1f%%, %.0f statements/s",
            rep, static_cast<long long>(run.written), run.offered_rate, run.writer_max_lag_ms,
            run.p50_ms, run.p99_ms, run.max_ms, run.create_p50_ms, run.create_p99_ms,
            run.relay_cpu_pct, run.relay_statements_per_s));
  }
  for (auto& p : relay.procs) p.Stop(60);
}

void Bench::StageIdle() {
  const std::vector<std::string> com = {"Com_select",     "Com_update",         "Com_begin",
                                        "Com_commit",     "Com_rollback",       "Com_insert",
                                        "Com_delete",     "Com_stmt_execute",   "Com_stmt_prepare",
                                        "Com_set_option", "Com_admin_commands", "Com_show_status"};
  // Our own probes, over a window of the same length with no relay running.
  auto window = [&](std::vector<Child>* procs, Idle* out) {
    auto s0 = db_->GlobalStatus();
    std::vector<double> c0;
    if (procs)
      for (auto& p : *procs) c0.push_back(ProcessCpuSeconds(p.pid()).value_or(0));
    double t0 = MonoSeconds();
    SleepSeconds(s_.idle_seconds);
    double t1 = MonoSeconds();
    auto s1 = db_->GlobalStatus();
    double q = s1["Questions"] - s0["Questions"];
    if (out) {
      out->seconds = t1 - t0;
      out->statements_per_s = (q - r_.idle_baseline_questions) / out->seconds;
      for (const auto& k : com) {
        double v = (s1[k] - s0[k]) / out->seconds;
        if (v > 0) out->com_per_s[k] = v;
      }
      double cpu = 0;
      for (size_t i = 0; procs && i < procs->size(); ++i)
        cpu += ProcessCpuSeconds((*procs)[i].pid()).value_or(0) - c0[i];
      out->cpu_ms_per_s = 1000 * cpu / out->seconds;
    }
    return q;
  };
  r_.idle_baseline_questions = window(nullptr, nullptr);
  Say(Fmt("idle: baseline (our probes only): %.0f statements per %.0f s window",
          r_.idle_baseline_questions, s_.idle_seconds));

  auto measure = [&](const std::string& label, const RelaySpec& spec, const std::string& mode) {
    db_->Exec(std::string("TRUNCATE TABLE ") + kMainTable);
    Running relay = StartRelays(spec, 1, "idle");
    // Past the first gauge refresh and connection setup: the steady idle state.
    SleepSeconds(o_.quick ? 1 : 6);
    Idle idle;
    idle.label = label;
    idle.services = spec.services;
    idle.mode = mode;
    window(&relay.procs, &idle);
    idle.per_service = idle.statements_per_s / spec.services;
    idle.rss_mib = ProcessStatusMiB(relay.procs[0].pid(), "VmRSS").value_or(0);
    idle.hwm_mib = ProcessStatusMiB(relay.procs[0].pid(), "VmHWM").value_or(0);
    for (auto& p : relay.procs) p.Stop(60);
    Say(
        Fmt("idle: %-28s %.2f statements/s (%.2f per service), CPU %.2f ms/s, RSS %.1f MiB "
            "(peak %.1f)",
            label.c_str(), idle.statements_per_s, idle.per_service, idle.cpu_ms_per_s, idle.rss_mib,
            idle.hwm_mib));
    r_.idle.push_back(idle);
  };
  RelaySpec pa;
  measure("1 service, per_aggregate", pa, "per_aggregate");
  RelaySpec none;
  none.ordering = "none";
  measure("1 service, none", none, "none");
  for (int i = 0; i < 10; ++i) db_->CreateOutbox("idle_" + std::to_string(i));
  RelaySpec ten;
  ten.services = 10;
  measure("10 services, per_aggregate", ten, "per_aggregate");
}

void Bench::StageScale() {
  Say(Fmt("scale: building %lld SENT rows in %s", static_cast<long long>(s_.sent_rows), kBigTable));
  double t0 = MonoSeconds();
  db_->CreateOutbox(kBigTable);
  db_->AddSentRows(kBigTable, s_.sent_rows);
  r_.big_table_build_s = MonoSeconds() - t0;
  big_next_id_ = s_.sent_rows;
  const int64_t main_n = s_.main_aggregates * s_.events_per_aggregate;
  for (int rep = 1; rep <= o_.runs; ++rep) {
    for (const char* mode : {"per_aggregate", "none"}) {
      for (bool big : {false, true}) {
        DrainSpec d;
        d.stage = "scale";
        d.mode = mode;
        d.tpl = main_tpl_;
        d.events = main_n;
        d.batch = s_.default_batch;
        d.big = big;
        d.rep = rep;
        RunDrain(d);
      }
    }
  }
  db_->Exec(std::string("DROP TABLE ") + kBigTable);

  const std::string tpl = "tpl_backlog";
  Say(Fmt("scale: RSS while draining %lld events",
          static_cast<long long>(s_.big_aggregates * s_.events_per_aggregate)));
  db_->BuildTemplate(tpl, s_.big_aggregates, s_.events_per_aggregate);
  DrainSpec d;
  d.stage = "backlog";
  d.mode = "per_aggregate";
  d.tpl = tpl;
  d.events = s_.big_aggregates * s_.events_per_aggregate;
  d.batch = s_.default_batch;
  d.sample_rss = true;
  d.rep = 1;
  RunDrain(d);
  db_->Exec("DROP TABLE " + tpl);
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

  if (Want("drain")) StageDrain();
  if (Want("sweep")) StageSweep();
  if (Want("latency")) StageLatency();
  if (Want("idle")) StageIdle();
  if (Want("scale")) StageScale();

  broker_.Stop(10);
  r_.seconds = MonoSeconds() - t_start;
  r_.load_after = Trim(ReadFile("/proc/loadavg"));
  Report report(o_, s_, r_);
  std::cout << report.Table();
  report.WriteFiles();
  return 0;
}

std::string Executable(const std::string& dir, const std::string& name) {
  std::string p = dir + "/" + name;
  return access(p.c_str(), X_OK) == 0 ? p : "";
}

}  // namespace
}  // namespace outbox::bench

int main(int argc, char** argv) {
  using namespace outbox::bench;
  Options o;
  Sizes s;
  auto env = [](const char* k, const std::string& d) {
    const char* v = std::getenv(k);
    return v ? std::string(v) : d;
  };
  o.db.host = env("OUTBOX_TEST_MYSQL_HOST", "127.0.0.1");
  o.db.port = std::stoi(env("OUTBOX_TEST_MYSQL_PORT", "3306"));
  o.db.user = env("OUTBOX_TEST_MYSQL_USER", "root");
  o.db.password = env("OUTBOX_TEST_MYSQL_PASSWORD", "");
  std::string self_dir =
      std::filesystem::absolute(std::filesystem::path(argv[0])).parent_path().string();
  // The binaries sit in the build directory (outbox-bench in build/bench/).
  std::string build_dir = std::filesystem::path(self_dir).parent_path().string();
  o.relay_bin = Executable(build_dir, "outbox-relay");
  o.broker_bin = Executable(build_dir, "outbox-mock-broker");
  o.load_bin = Executable(build_dir, "outbox-load");
  std::string mysqld_pid_file = env("OUTBOX_TEST_MYSQL_DIR", "");
  if (!mysqld_pid_file.empty()) mysqld_pid_file += "/mysqld.pid";
  std::string stages;
  bool no_latency = false;

  CLI::App app{
      "outbox-bench: drain rate against the in-server database limit, latency, idle cost and "
      "scale of outbox-relay, on one MariaDB and one mock broker. Usually run by scripts/bench."};
  app.add_option("--mysql-host", o.db.host)->capture_default_str();
  app.add_option("--mysql-port", o.db.port)->capture_default_str();
  app.add_option("--mysql-user", o.db.user)->capture_default_str();
  app.add_option("--mysql-password", o.db.password);
  app.add_option("--database", o.db.database, "scratch database (dropped tables inside)")
      ->capture_default_str();
  app.add_option("--mysqld-pid-file", mysqld_pid_file, "for the database's CPU time");
  app.add_option("--relay", o.relay_bin)->capture_default_str();
  app.add_option("--broker", o.broker_bin)->capture_default_str();
  app.add_option("--load", o.load_bin)->capture_default_str();
  app.add_option("--out", o.out_dir, "results directory")->required();
  app.add_option("--doc", o.doc_path, "write the report here (e.g. docs/BENCHMARKS.md)");
  app.add_option("--doc-template", o.doc_template, "bench/BENCHMARKS.md.in");
  app.add_option("--figures", o.figures_rel, "figures' path relative to the report")
      ->capture_default_str();
  app.add_option("--command", o.command, "the command line to print in the report");
  app.add_option("--commit", o.commit, "git commit measured");
  app.add_flag("--quick", o.quick, "tiny sizes, one run: proves the benchmark works");
  app.add_option("--runs", o.runs, "repetitions of the headline drains")->capture_default_str();
  app.add_option("--sweep-runs", o.sweep_runs)->capture_default_str();
  app.add_option("--stages", stages, "comma-separated subset of drain,sweep,latency,idle,scale");
  app.add_flag("--no-latency", no_latency, "skip the latency stage");
  std::string drains;
  app.add_option("--drains", drains,
                 "drain stage configurations MODE:RELAYS[:cost], comma-separated (default: all)");
  CLI11_PARSE(app, argc, argv);

  if (!stages.empty()) {
    o.stages.clear();
    std::stringstream in(stages);
    for (std::string t; std::getline(in, t, ',');) o.stages.push_back(t);
  }
  if (no_latency) std::erase(o.stages, std::string("latency"));
  if (!drains.empty()) {
    o.drain_set.clear();
    std::stringstream in(drains);
    for (std::string t; std::getline(in, t, ',');) o.drain_set.push_back(t);
  }
  if (o.quick) {
    s.main_aggregates = 2000;
    s.cost_aggregates = 1000;
    s.big_aggregates = 5000;
    s.sent_rows = 50000;
    s.latency_seconds = 3;
    s.latency_runs = 1;
    s.latency_rate = 200;
    s.idle_seconds = 2;
    s.sweep_batches = {100};
    o.runs = 1;
    o.sweep_runs = 1;
  }
  if (o.relay_bin.empty() || o.broker_bin.empty()) {
    std::cerr << "outbox-bench: cannot find outbox-relay / outbox-mock-broker next to " << build_dir
              << "; pass --relay and --broker\n";
    return 2;
  }
  if (!mysqld_pid_file.empty()) {
    std::string pid = Trim(ReadFile(mysqld_pid_file));
    if (!pid.empty()) o.mysqld_pid = std::stoi(pid);
  }
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
