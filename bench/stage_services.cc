// The services stage (bench.h): one relay process serving many services,
// each with its own database (and t_outbox) on the one server, with
// `wakeup: poll` and with `wakeup: binlog`: the relay's threads and
// connections, idle statements in total, and latency at a low rate per
// service.
#include <algorithm>

#include "bench.h"
#include "paced_writer.h"

namespace outbox {
namespace bench {

int64_t Bench::ThreadsConnected() {
  return db_->QueryInt(
      "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS"
      " WHERE VARIABLE_NAME = 'THREADS_CONNECTED'");
}

LatencyRun Bench::ServicesLoad(const Running& relay, const std::vector<std::string>& dbs,
                               int64_t base_connections, ServicesRun* out) {
  const int writers = std::min<int>(8, static_cast<int>(dbs.size()));
  // Each mode's rows get their own ids: the first mode's rows stay, SENT.
  PacedWriter writer(o_.db, dbs, kMainTable, writers,
                     1 + 1000000 * static_cast<int64_t>(r_.services.size()));
  TimingConsumer consumer(bootstrap_, kLatencyTopic, kPartitions);
  SleepSeconds(0.5);
  const pid_t pid = relay.procs.at(0).pid();
  double cpu0 = ProcessCpuSeconds(pid).value_or(0);
  auto st0 = db_->GlobalStatus();
  double w0 = MonoSeconds();
  const int64_t start_us = WallMicros();
  PacedWriter::Result res =
      writer.Run(s_.services_rate * static_cast<double>(dbs.size()), s_.services_seconds);
  double w1 = MonoSeconds();
  double cpu1 = ProcessCpuSeconds(pid).value_or(0);
  auto st1 = db_->GlobalStatus();
  out->threads_load = static_cast<int64_t>(ProcessStatusNumber(pid, "Threads").value_or(0));
  out->connections_load = ThreadsConnected() - base_connections - writer.connections();
  LatencyRun run;
  run.rep = 1;
  run.written = res.written;
  run.offered_rate = static_cast<double>(res.written) / (w1 - w0);
  run.writer_max_lag_ms = res.max_lag_ms;
  run.relay_cpu_pct = 100.0 * (cpu1 - cpu0) / (w1 - w0);
  run.relay_statements_per_s = (st1["Questions"] - st0["Questions"] -
                                static_cast<double>(res.written) - r_.idle_baseline_questions) /
                               (w1 - w0);
  CollectLatency(consumer, start_us, {}, &run, nullptr);
  return run;
}

ServicesRun Bench::MeasureServices(const std::string& mode, const std::vector<std::string>& dbs) {
  ServicesRun out;
  out.mode = mode;
  out.services = static_cast<int>(dbs.size());
  const int64_t base = ThreadsConnected();
  RelaySpec rs;
  rs.table = kMainTable;
  rs.services = out.services;
  rs.database_prefix = o_.db.database + "_svc";
  rs.wakeup = mode;
  double t0 = MonoSeconds();
  Running relay = StartRelays(rs, 1, "services-" + mode);
  out.startup_s = MonoSeconds() - t0;
  out.binlog_up = relay.binlog_up;
  SleepSeconds(s_.settle_seconds);
  out.idle.label = Fmt("%d services, wakeup: %s", out.services, mode.c_str());
  out.idle.services = out.services;
  out.idle.mode = mode;
  IdleWindow(&relay.procs, s_.wakeup_idle_seconds, &out.idle);
  out.idle.per_service = out.idle.statements_per_s / out.services;
  const pid_t pid = relay.procs.at(0).pid();
  out.threads_idle = static_cast<int64_t>(ProcessStatusNumber(pid, "Threads").value_or(0));
  out.connections_idle = ThreadsConnected() - base;
  out.replication_connections = db_->QueryInt(
      "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE COMMAND LIKE 'Binlog Dump%'");
  out.load = ServicesLoad(relay, dbs, base, &out);
  StopAll(&relay, "the services stage");
  Say(
      Fmt("services: %d x %-6s startup %.1f s; idle: %lld threads, %lld connections (%lld "
          "replication), %.1f statements/s (%.2f per service), CPU %.1f ms/s, RSS %.1f MiB; "
          "at %.0f events/s: p50 %.1f p99 %.1f max %.1f ms (%lld measured), %.0f statements/s, "
          "%lld threads, %lld connections",
          out.services, mode.c_str(), out.startup_s, static_cast<long long>(out.threads_idle),
          static_cast<long long>(out.connections_idle),
          static_cast<long long>(out.replication_connections), out.idle.statements_per_s,
          out.idle.per_service, out.idle.cpu_ms_per_s, out.idle.rss_mib, out.load.offered_rate,
          out.load.p50_ms, out.load.p99_ms, out.load.max_ms,
          static_cast<long long>(out.load.measured), out.load.relay_statements_per_s,
          static_cast<long long>(out.threads_load), static_cast<long long>(out.connections_load)));
  return out;
}

void Bench::StageServices() {
  if (!BinlogOn())
    r_.notes.push_back(
        "services: the server's binary log is off, so wakeup: binlog fell back to polling");
  const std::vector<std::string> dbs = CreateServiceDatabases("services", "_svc", s_.services);
  for (const char* mode : {"poll", "binlog"}) r_.services.push_back(MeasureServices(mode, dbs));
  for (const auto& d : dbs) db_->Exec("DROP DATABASE `" + d + "`");
}

std::vector<std::string> Bench::CreateServiceDatabases(const std::string& stage,
                                                       const std::string& suffix, int n) {
  std::vector<std::string> dbs;
  Say(Fmt("%s: creating %d databases with an outbox table each", stage.c_str(), n));
  for (int i = 0; i < n; ++i) {
    dbs.push_back(o_.db.database + suffix + std::to_string(i));
    db_->Exec("CREATE DATABASE IF NOT EXISTS `" + dbs.back() +
              "` CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci");
    db_->CreateOutbox(kMainTable, dbs.back());
  }
  return dbs;
}

}  // namespace bench
}  // namespace outbox
