// The wakeup stage (bench.h): one relay, one service with the default
// poll_interval_ms and gauge_interval_ms, `wakeup: poll` against
// `wakeup: binlog` — idle statements, latency and statements over a rate
// sweep, and the drain rate. The binary log is on for both modes
// (scripts/bench), so the modes differ only in the relay's config.
#include "bench.h"

namespace outbox {
namespace bench {

namespace {

// Writers for a rate: outbox-load's 8 (as the latency stage) up to 1,000
// events/s; more above, where each writer's commit wait limits it.
int WritersFor(double rate) { return rate > 1000 ? 16 : 8; }

}  // namespace

void Bench::WakeupSweep(const std::string& mode) {
  // Both modes start from an empty table with purge caught up: the first
  // mode's up to ~170,000 SENT rows must not weigh on the second's claims.
  db_->Exec(std::string("TRUNCATE TABLE ") + kWakeupTable);
  db_->WaitPurge(60);
  RelaySpec rs;
  rs.table = kWakeupTable;
  rs.wakeup = mode;
  Running relay = StartRelays(rs, 1, "wakeup-" + mode);
  SleepSeconds(s_.settle_seconds);
  Idle idle;
  idle.label = "1 service, wakeup: " + mode;
  idle.services = 1;
  idle.mode = mode;
  IdleWindow(&relay.procs, s_.wakeup_idle_seconds, &idle);
  idle.per_service = idle.statements_per_s;
  r_.wakeup_idle.push_back(idle);
  Say(Fmt("wakeup: %-6s idle %.2f statements/s, CPU %.2f ms/s", mode.c_str(), idle.statements_per_s,
          idle.cpu_ms_per_s));
  for (size_t i = 0; i < s_.wakeup_rates.size(); ++i) {
    WakeupRun w;
    w.mode = mode;
    w.target_rate = s_.wakeup_rates[i];
    LoadSpec spec{kWakeupTable, w.target_rate, s_.wakeup_seconds.at(i), WritersFor(w.target_rate)};
    w.run = MeasureLoad(spec, relay, static_cast<int>(i) + 1, nullptr, nullptr);
    w.binlog_up = mode == "binlog" && SumOverRelays(relay, "outbox_wakeup_binlog_up") >= 1;
    if (mode == "binlog" && !w.binlog_up)
      r_.notes.push_back(
          Fmt("wakeup binlog at %.0f events/s: the stream was down at the end of "
              "the run (the relay polled meanwhile)",
              w.target_rate));
    r_.wakeup.push_back(w);
    Say(
        Fmt("wakeup: %-6s %6.0f events/s offered, %7.1f achieved (%lld measured): p50 %.1f p99 "
            "%.1f max %.1f ms; relay %.1f statements/s, CPU %.1f%%",
            mode.c_str(), w.target_rate, w.run.offered_rate, static_cast<long long>(w.run.measured),
            w.run.p50_ms, w.run.p99_ms, w.run.max_ms, w.run.relay_statements_per_s,
            w.run.relay_cpu_pct));
    SleepSeconds(1);  // the last events' settles, before the next run's probes
  }
  StopAll(&relay, "the wakeup stage");
}

void Bench::StageWakeup() {
  if (o_.load_bin.empty()) {
    r_.notes.push_back("wakeup not measured: no outbox-load binary (build/outbox-load)");
    Say(r_.notes.back());
    return;
  }
  if (!BinlogOn())
    r_.notes.push_back(
        "the server's binary log is off: wakeup: binlog fell back to polling, so its figures are "
        "polling's (scripts/bench starts MariaDB with mariadb_binlog_args)");
  db_->CreateOutbox(kWakeupTable);
  for (double rate : s_.wakeup_rates) CalibrateLoad(WritersFor(rate));
  for (const char* mode : {"poll", "binlog"}) WakeupSweep(mode);
  db_->Exec(std::string("DROP TABLE ") + kWakeupTable);

  // Drain rate with each wakeup mode, default ordering, alternating the modes.
  const int64_t main_n = s_.main_aggregates * s_.events_per_aggregate;
  for (int rep = 1; rep <= o_.runs; ++rep) {
    for (const char* mode : {"poll", "binlog"}) {
      DrainSpec d = MakeDrain("wakeup", mode, main_n, s_.default_batch, rep);
      d.ordering.clear();
      d.wakeup = mode;
      RunDrain(d);
    }
  }
}

}  // namespace bench
}  // namespace outbox
