// Drains of a prepared backlog: the drain, sweep and scale stages (bench.h),
// and the wakeup stage's drains.
#include <algorithm>
#include <sstream>

#include "bench.h"

namespace outbox {
namespace bench {

namespace {

double Cpu(pid_t pid) { return pid > 0 ? ProcessCpuSeconds(pid).value_or(0) : 0.0; }

double RelayCpu(Running& r) {
  double s = 0;
  for (auto& p : r.procs) s += Cpu(p.pid());
  return s;
}

}  // namespace

DrainSpec Bench::MakeDrain(const std::string& stage, const std::string& mode, int64_t events,
                           int batch, int rep) const {
  DrainSpec d;
  d.stage = stage;
  d.mode = mode;
  d.ordering = mode;
  d.tpl = main_tpl_;
  d.events = events;
  d.batch = batch;
  d.rep = rep;
  return d;
}

void Bench::ResetFor(const DrainSpec& spec, Drain* d) {
  // t_big keeps the rows of its earlier runs (SENT, below the next run's
  // ids): deleting them would leave InnoDB purging 200,000 rows during the
  // next drain, which an empty table (TRUNCATE) does not have to do.
  if (!spec.big) db_->Exec(std::string("TRUNCATE TABLE ") + kMainTable);
  d->purge_wait_s = db_->WaitPurge(60);
}

double Bench::WaitPublished(const DrainSpec& spec, Running& relays, double t0) {
  double next_rss = t0;
  double next_dead_check = t0 + 1;
  const double timeout = 900;
  for (;;) {
    double pub = Published(relays);
    double now = MonoSeconds();
    if (pub >= static_cast<double>(spec.events)) return now;
    if (spec.sample_rss && now >= next_rss) {
      double rss = 0;
      for (auto& p : relays.procs)
        rss = std::max(rss, ProcessStatusMiB(p.pid(), "VmRSS").value_or(0));
      r_.rss_series.push_back({now - t0, static_cast<int64_t>(std::max(0.0, pub)), rss});
      next_rss = now + 0.25;
    }
    for (auto& p : relays.procs)
      if (!p.running()) throw std::runtime_error("a relay exited during a drain");
    // A value that cannot be encoded makes its row DEAD: the drain would
    // never end.
    if (!spec.value_format.empty() && now >= next_dead_check) {
      if (SumOverRelays(relays, "outbox_events_dead_total") > 0)
        throw std::runtime_error("rows went DEAD in a drain with value_format " +
                                 spec.value_format + "; see " + relays.logs.front());
      next_dead_check = now + 1;
    }
    if (now - t0 > timeout) throw std::runtime_error("drain did not finish in 900 s");
    SleepSeconds(0.02);
  }
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
    rs.ordering = spec.ordering;
    rs.batch = spec.batch;
    rs.wakeup = spec.wakeup;
    rs.relay_bin = spec.relay_bin;
    rs.value_format = spec.value_format;
    rs.registry_url = spec.registry_url;
    relays = StartRelays(rs, spec.relays, spec.stage + "-" + spec.mode);
    SleepSeconds(0.3);
  }
  auto st0 = db_->GlobalStatus();
  double db0 = Cpu(o_.mysqld_pid), br0 = Cpu(broker_.pid()), re0 = RelayCpu(relays);

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
    t1 = WaitPublished(spec, relays, t0);
  }
  d.seconds = t1 - t0;
  d.rate = static_cast<double>(spec.events) / d.seconds;
  auto st1 = db_->GlobalStatus();
  d.db_cpu_s = Cpu(o_.mysqld_pid) - db0;
  d.broker_cpu_s = Cpu(broker_.pid()) - br0;
  d.relay_cpu_s = RelayCpu(relays) - re0;
  d.fsyncs = st1["Innodb_data_fsyncs"] - st0["Innodb_data_fsyncs"];
  d.questions = st1["Questions"] - st0["Questions"];
  FinishDrain(spec, table, offset, relays, &d);
  return d;
}

void Bench::FinishDrain(const DrainSpec& spec, const std::string& table, int64_t offset,
                        Running& relays, Drain* d) {
  for (auto& p : relays.procs)
    d->relay_peak_rss_mib =
        std::max(d->relay_peak_rss_mib, ProcessStatusMiB(p.pid(), "VmHWM").value_or(0));
  if (spec.sample_rss && !relays.procs.empty()) {
    r_.rss_series.push_back(
        {d->seconds, spec.events, ProcessStatusMiB(relays.procs[0].pid(), "VmRSS").value_or(0)});
    r_.rss_series_events = spec.events;
  }
  StopAll(&relays, "a drain");
  int64_t sent = db_->QueryInt("SELECT COUNT(*) FROM " + table +
                               " WHERE status = 'SENT' AND id > " + std::to_string(offset));
  if (sent != spec.events)
    throw std::runtime_error(Fmt("after the drain %lld of %lld rows are SENT",
                                 static_cast<long long>(sent),
                                 static_cast<long long>(spec.events)));
  Say(Fmt(
      "%-6s %-6s %-14s relays=%d batch=%-5d %-12s %9.0f events/s  (%.2f s; cpu db %.1f s, "
      "relay %.1f s, broker %.1f s)",
      d->stage.c_str(), d->workload.c_str(), d->mode.c_str(), d->relays, d->batch,
      d->table_state.c_str(), d->rate, d->seconds, d->db_cpu_s, d->relay_cpu_s, d->broker_cpu_s));
  r_.drains.push_back(*d);
}

void Bench::RunDrainCompared(const DrainSpec& spec) {
  if (!Comparing() || spec.mode == "db") {
    RunDrain(spec);
    return;
  }
  DrainSpec old = spec;
  old.stage += kOldSuffix;
  old.relay_bin = o_.compare_relay_bin;
  // Odd repetitions this build first, even ones the other: the disk's drift
  // weighs on both alike.
  const bool new_first = spec.rep % 2 == 1;
  RunDrain(new_first ? spec : old);
  RunDrain(new_first ? old : spec);
}

void Bench::StageDrain() {
  const int64_t main_n = s_.main_aggregates * s_.events_per_aggregate;
  const int64_t cost_n = s_.cost_aggregates * s_.events_per_aggregate;
  for (int rep = 1; rep <= o_.runs; ++rep) {
    Say(Fmt("drain: repetition %d of %d", rep, o_.runs));
    for (const std::string& item : o_.drain_set) {
      std::vector<std::string> f;
      std::stringstream in(item);
      for (std::string t; std::getline(in, t, ':');) f.push_back(t);
      if (f.size() < 2) throw std::runtime_error("bad --drains item " + item);
      const bool cost = f.size() > 2 && f[2] == "cost";
      DrainSpec d = MakeDrain("drain", f[0], cost ? cost_n : main_n, s_.default_batch, rep);
      d.relays = std::stoi(f[1]);
      if (cost) d.tpl = cost_tpl_;
      RunDrainCompared(d);
    }
  }
}

void Bench::StageSweep() {
  const int64_t main_n = s_.main_aggregates * s_.events_per_aggregate;
  for (int rep = 1; rep <= o_.sweep_runs; ++rep)
    for (int batch : s_.sweep_batches)
      for (const char* mode : {"db", "none", "per_aggregate"})
        RunDrain(MakeDrain("sweep", mode, main_n, batch, rep));
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
        DrainSpec d = MakeDrain("scale", mode, main_n, s_.default_batch, rep);
        d.big = big;
        RunDrain(d);
      }
    }
  }
  db_->Exec(std::string("DROP TABLE ") + kBigTable);

  const std::string tpl = "tpl_backlog";
  const int64_t n = s_.big_aggregates * s_.events_per_aggregate;
  Say(Fmt("scale: RSS while draining %lld events", static_cast<long long>(n)));
  db_->BuildTemplate(tpl, s_.big_aggregates, s_.events_per_aggregate);
  DrainSpec d = MakeDrain("backlog", "per_aggregate", n, s_.default_batch, 1);
  d.tpl = tpl;
  d.sample_rss = true;
  RunDrain(d);
  db_->Exec("DROP TABLE " + tpl);
}

}  // namespace bench
}  // namespace outbox
