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

constexpr const char* kCompare = "binlog-compare";

}  // namespace

std::vector<std::string> Bench::WakeupModes() const {
  std::vector<std::string> modes = {"poll", "binlog"};
  if (!o_.compare_relay_bin.empty()) modes.push_back(kCompare);
  return modes;
}

std::string Bench::WakeupDatabase(const std::string& mode) const {
  std::string db = o_.db.database + "_wk_" + mode;
  std::replace(db.begin(), db.end(), '-', '_');
  return db;
}

Running Bench::StartWakeupRelay(const std::string& mode) {
  db_->Exec("CREATE DATABASE IF NOT EXISTS `" + WakeupDatabase(mode) +
            "` CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci");
  db_->CreateOutbox(kWakeupTable, WakeupDatabase(mode));
  RelaySpec rs;
  rs.table = kWakeupTable;
  rs.database = WakeupDatabase(mode);
  rs.wakeup = mode == kCompare ? "binlog" : mode;
  if (mode == kCompare) rs.relay_bin = o_.compare_relay_bin;
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
  const std::vector<std::string> modes = WakeupModes();
  const size_t n = modes.size();
  std::map<std::string, WakeupRun> runs;
  std::map<std::string, LatencySamples> samples;  // per mode, its slices pooled
  for (int k = 0; k < slices; ++k) {
    for (size_t m = 0; m < n; ++m) {
      // poll, binlog; binlog, poll; ...: no mode always goes first.
      const std::string& mode = modes[(m + static_cast<size_t>(k)) % n];
      LoadSpec spec{kWakeupTable, rate, s_.wakeup_seconds.at(i) / slices, WritersFor(rate),
                    WakeupDatabase(mode)};
      LatencyRun run = MeasureLoad(spec, relays.at(mode), static_cast<int>(i) + 1, &samples[mode]);
      // The other relays idle meanwhile: their idle statements are not this one's.
      for (const Idle& idle : r_.wakeup_idle)
        if (idle.mode != mode) run.relay_statements_per_s -= idle.statements_per_s;
      Say(
          Fmt("wakeup: %-6s %6.0f events/s, slice %d/%d: p50 %.1f p99 %.1f ms (%lld measured); "
              "insert->CreateTime p50 %.1f p99 %.1f ms; commit->CreateTime p50 %.1f p99 %.1f ms",
              mode.c_str(), rate, k + 1, slices, run.p50_ms, run.p99_ms,
              static_cast<long long>(run.measured), run.create_p50_ms, run.create_p99_ms,
              run.commit_create_p50_ms, run.commit_create_p99_ms));
      WakeupRun& w = runs[mode];
      w.slice_p50_ms.push_back(run.p50_ms);
      w.run.written += run.written;
      w.run.offered_rate += run.offered_rate / slices;
      w.run.relay_cpu_pct += run.relay_cpu_pct / slices;
      w.run.relay_statements_per_s += run.relay_statements_per_s / slices;
      w.run.insert_p50_ms += run.insert_p50_ms / slices;  // means of the slices' quantiles
      w.run.insert_p99_ms += run.insert_p99_ms / slices;
      w.run.writer_max_lag_ms = std::max(w.run.writer_max_lag_ms, run.writer_max_lag_ms);
      SleepSeconds(1);  // the last events' settles, before the next slice's probes
    }
  }
  for (const std::string& mode : modes) {
    WakeupRun w = runs[mode];
    w.mode = mode;
    w.target_rate = rate;
    SetQuantiles(samples[mode], &w.run);
    const bool binlog = w.mode != "poll";  // binlog, and binlog-compare's build
    w.binlog_up = binlog && SumOverRelays(relays.at(mode), "outbox_wakeup_binlog_up") >= 1;
    if (binlog && !w.binlog_up)
      r_.notes.push_back(
          Fmt("wakeup %s at %.0f events/s: the stream was down at the end of "
              "the run (the relay polled meanwhile)",
              w.mode.c_str(), rate));
    Say(
        Fmt("wakeup: %-6s %6.0f events/s offered, %7.1f achieved (%lld measured): p50 %.1f p99 "
            "%.1f max %.1f ms (writers' INSERT p50 %.1f p99 %.1f ms; insert->CreateTime p50 %.1f "
            "p99 %.1f ms; commit->CreateTime p50 %.1f p99 %.1f ms); relay %.1f statements/s, CPU "
            "%.1f%%",
            mode.c_str(), rate, w.run.offered_rate, static_cast<long long>(w.run.measured),
            w.run.p50_ms, w.run.p99_ms, w.run.max_ms, w.run.insert_p50_ms, w.run.insert_p99_ms,
            w.run.create_p50_ms, w.run.create_p99_ms, w.run.commit_create_p50_ms,
            w.run.commit_create_p99_ms, w.run.relay_statements_per_s, w.run.relay_cpu_pct));
    r_.wakeup.push_back(std::move(w));
  }
}

void Bench::WakeupSweep() {
  // binlog first, alone, for its idle figure; each later relay's idle window
  // has the (measured) idle statements of those already running subtracted.
  std::vector<std::string> order = WakeupModes();
  std::rotate(order.begin(), order.begin() + 1, order.end());  // poll last
  std::map<std::string, Running> relays;
  double running_per_s = 0;
  for (const std::string& mode : order) {
    relays.emplace(mode, StartWakeupRelay(mode));
    WakeupIdle(mode, &relays.at(mode), running_per_s);
    running_per_s += r_.wakeup_idle.back().statements_per_s;
  }
  for (size_t i = 0; i < s_.wakeup_rates.size(); ++i) WakeupRate(i, relays);
  for (const std::string& mode : order) {
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
