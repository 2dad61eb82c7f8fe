// The wakeup stage (bench.h): one service with the default poll_interval_ms
// and gauge_interval_ms, `wakeup: poll` against `wakeup: binlog` — idle
// statements, latency and statements over a rate sweep, and the drain rate.
// The binary log is on for both modes (scripts/bench), so the modes differ
// only in the relay's config.
//
// The commit latency of this machine's disk drifts over minutes, more than
// the modes differ. So both relays run side by side, each on its own
// database (a binlog stream wakes per database with binlog_format MIXED),
// and each rate is loaded in slices that alternate between the two: drift
// weighs on both modes alike.
#include <algorithm>
#include <map>

#include "bench.h"

namespace outbox {
namespace bench {

namespace {

// Writers for a rate: outbox-load's 8 (as the latency stage) up to 1,000
// events/s; more above, where each writer's commit wait limits it.
int WritersFor(double rate) { return rate > 1000 ? 16 : 8; }

constexpr const char* kModes[] = {"poll", "binlog"};

}  // namespace

std::string Bench::WakeupDatabase(const std::string& mode) const {
  return o_.db.database + "_wk_" + mode;
}

Running Bench::StartWakeupRelay(const std::string& mode) {
  db_->Exec("CREATE DATABASE IF NOT EXISTS `" + WakeupDatabase(mode) +
            "` CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci");
  db_->CreateOutbox(kWakeupTable, WakeupDatabase(mode));
  RelaySpec rs;
  rs.table = kWakeupTable;
  rs.database = WakeupDatabase(mode);
  rs.wakeup = mode;
  Running relay = StartRelays(rs, 1, "wakeup-" + mode);
  SleepSeconds(s_.settle_seconds);
  return relay;
}

// Idle cost of `mode`'s relay; `others_per_s`: statements/s of relays
// already running (measured alone before), subtracted.
void Bench::WakeupIdle(const std::string& mode, Running* relay, double others_per_s) {
  Idle idle;
  idle.label = "1 service, wakeup: " + mode;
  idle.services = 1;
  idle.mode = mode;
  IdleWindow(&relay->procs, s_.wakeup_idle_seconds, &idle);
  idle.statements_per_s -= others_per_s;
  idle.per_service = idle.statements_per_s;
  r_.wakeup_idle.push_back(idle);
  Say(Fmt("wakeup: %-6s idle %.2f statements/s, CPU %.2f ms/s", mode.c_str(), idle.statements_per_s,
          idle.cpu_ms_per_s));
}

void Bench::WakeupRate(size_t i, std::map<std::string, Running>& relays) {
  const double rate = s_.wakeup_rates[i];
  const int slices = std::max(1, s_.wakeup_slices);
  std::map<std::string, WakeupRun> runs;
  std::map<std::string, std::vector<double>> samples;
  for (int k = 0; k < slices; ++k) {
    for (int m = 0; m < 2; ++m) {
      // poll, binlog; binlog, poll; ...: neither always goes first.
      const std::string mode = kModes[(m + k) % 2];
      LoadSpec spec{kWakeupTable, rate, s_.wakeup_seconds.at(i) / slices, WritersFor(rate),
                    WakeupDatabase(mode)};
      LatencyRun run =
          MeasureLoad(spec, relays.at(mode), static_cast<int>(i) + 1, &samples[mode], nullptr);
      // The other relay idles meanwhile: its idle statements are not this one's.
      const Idle* other = nullptr;
      for (const Idle& idle : r_.wakeup_idle)
        if (idle.mode != mode) other = &idle;
      if (other) run.relay_statements_per_s -= other->statements_per_s;
      Say(Fmt("wakeup: %-6s %6.0f events/s, slice %d/%d: p50 %.1f p99 %.1f ms (%lld measured)",
              mode.c_str(), rate, k + 1, slices, run.p50_ms, run.p99_ms,
              static_cast<long long>(run.measured)));
      WakeupRun& w = runs[mode];
      w.slice_p50_ms.push_back(run.p50_ms);
      w.run.written += run.written;
      w.run.offered_rate += run.offered_rate / slices;
      w.run.relay_cpu_pct += run.relay_cpu_pct / slices;
      w.run.relay_statements_per_s += run.relay_statements_per_s / slices;
      w.run.writer_max_lag_ms = std::max(w.run.writer_max_lag_ms, run.writer_max_lag_ms);
      SleepSeconds(1);  // the last events' settles, before the next slice's probes
    }
  }
  for (const char* mode : kModes) {
    WakeupRun w = runs[mode];
    w.mode = mode;
    w.target_rate = rate;
    const std::vector<double>& lat = samples[mode];
    w.run.measured = static_cast<int64_t>(lat.size());
    w.run.p50_ms = Quantile(lat, 0.5);
    w.run.p99_ms = Quantile(lat, 0.99);
    w.run.max_ms = Quantile(lat, 1);
    w.binlog_up =
        w.mode == "binlog" && SumOverRelays(relays.at(mode), "outbox_wakeup_binlog_up") >= 1;
    if (w.mode == "binlog" && !w.binlog_up)
      r_.notes.push_back(
          Fmt("wakeup binlog at %.0f events/s: the stream was down at the end of "
              "the run (the relay polled meanwhile)",
              rate));
    Say(
        Fmt("wakeup: %-6s %6.0f events/s offered, %7.1f achieved (%lld measured): p50 %.1f p99 "
            "%.1f max %.1f ms; relay %.1f statements/s, CPU %.1f%%",
            mode, rate, w.run.offered_rate, static_cast<long long>(w.run.measured), w.run.p50_ms,
            w.run.p99_ms, w.run.max_ms, w.run.relay_statements_per_s, w.run.relay_cpu_pct));
    r_.wakeup.push_back(std::move(w));
  }
}

void Bench::WakeupSweep() {
  // binlog first, alone, for its idle figure; poll's idle window then has
  // binlog's (measured) idle statements to subtract.
  std::map<std::string, Running> relays;
  relays.emplace("binlog", StartWakeupRelay("binlog"));
  WakeupIdle("binlog", &relays.at("binlog"), 0);
  relays.emplace("poll", StartWakeupRelay("poll"));
  WakeupIdle("poll", &relays.at("poll"), r_.wakeup_idle.back().statements_per_s);
  for (size_t i = 0; i < s_.wakeup_rates.size(); ++i) WakeupRate(i, relays);
  for (const char* mode : kModes) {
    StopAll(&relays.at(mode), "the wakeup stage");
    db_->Exec("DROP DATABASE `" + WakeupDatabase(mode) + "`");
  }
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
  for (double rate : s_.wakeup_rates) CalibrateLoad(WritersFor(rate));
  WakeupSweep();

  // Drain rate with each wakeup mode, default ordering, alternating the modes.
  const int64_t main_n = s_.main_aggregates * s_.events_per_aggregate;
  for (int rep = 1; rep <= o_.runs; ++rep) {
    for (const char* mode : kModes) {
      DrainSpec d = MakeDrain("wakeup", mode, main_n, s_.default_batch, rep);
      d.ordering.clear();
      d.wakeup = mode;
      RunDrain(d);
    }
  }
}

}  // namespace bench
}  // namespace outbox
