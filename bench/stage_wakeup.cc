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
// weighs on both modes alike. With --compare-relay the other build's relays
// (modes poll-old and binlog-old) join them, each next to its mode's relay
// of this build, and every slice is one run of the comparison.
#include <algorithm>
#include <map>

#include "bench.h"

namespace outbox {
namespace bench {

namespace {

// Writers for a rate: outbox-load's 8 (as the latency stage) up to 1,000
// events/s; more above, where each writer's commit wait limits it.
int WritersFor(double rate) { return rate > 1000 ? 16 : 8; }

// "poll-old" -> true: the --compare-relay build's relay.
bool IsOld(const std::string& mode) {
  const std::string suffix = kOldSuffix;
  return mode.size() > suffix.size() &&
         mode.compare(mode.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The relay's `wakeup` key for a mode: poll | binlog.
std::string WakeupKey(const std::string& mode) {
  return mode.rfind("binlog", 0) == 0 ? "binlog" : "poll";
}

// One slice's figures into its mode's record (`slices` of them in all).
void AddSlice(const LatencyRun& run, int slices, WakeupRun* w) {
  w->slice_p50_ms.push_back(run.p50_ms);
  w->slice_p99_ms.push_back(run.p99_ms);
  w->run.written += run.written;
  w->run.offered_rate += run.offered_rate / slices;
  w->run.relay_cpu_pct += run.relay_cpu_pct / slices;
  w->run.relay_statements_per_s += run.relay_statements_per_s / slices;
  w->run.insert_p50_ms += run.insert_p50_ms / slices;  // means of the slices' quantiles
  w->run.insert_p99_ms += run.insert_p99_ms / slices;
  w->run.writer_max_lag_ms = std::max(w->run.writer_max_lag_ms, run.writer_max_lag_ms);
}

}  // namespace

std::vector<std::string> Bench::WakeupModes() const { return SliceOrder(0); }

std::vector<std::string> Bench::SliceOrder(int k) const {
  // poll, binlog; binlog, poll; ...: no mode always goes first. The two
  // builds of one mode run next to each other (the closest in time), the
  // other build first every other slice.
  std::vector<std::string> bases = {"poll", "binlog"};
  if (k % 2 == 1) std::reverse(bases.begin(), bases.end());
  std::vector<std::string> order;
  for (const std::string& base : bases) {
    order.push_back(base);
    if (!Comparing()) continue;
    const std::string old = base + kOldSuffix;
    order.insert(k % 2 == 1 ? order.end() - 1 : order.end(), old);
  }
  return order;
}

int Bench::WakeupSliceCount() const {
  return std::max(1, Comparing() ? o_.runs : s_.wakeup_slices);
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
  rs.wakeup = WakeupKey(mode);
  if (IsOld(mode)) rs.relay_bin = o_.compare_relay_bin;
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
  const int slices = WakeupSliceCount();
  // A slice lasts as long however many there are: more runs, longer stage.
  const double slice_s = s_.wakeup_seconds.at(i) / std::max(1, s_.wakeup_slices);
  std::map<std::string, WakeupRun> runs;
  std::map<std::string, LatencySamples> samples;  // per mode, its slices pooled
  for (int k = 0; k < slices; ++k) {
    for (const std::string& mode : SliceOrder(k)) {
      LoadSpec spec{kWakeupTable, rate, slice_s, WritersFor(rate), WakeupDatabase(mode)};
      LatencyRun run = MeasureLoad(spec, relays.at(mode), static_cast<int>(i) + 1, &samples[mode]);
      // The other relays idle meanwhile: their idle statements are not this one's.
      for (const Idle& idle : r_.wakeup_idle)
        if (idle.mode != mode) run.relay_statements_per_s -= idle.statements_per_s;
      Say(
          Fmt("wakeup: %-10s %6.0f events/s, slice %d/%d: p50 %.1f p99 %.1f ms (%lld measured); "
              "insert->CreateTime p50 %.1f p99 %.1f ms; commit->CreateTime p50 %.1f p99 %.1f ms",
              mode.c_str(), rate, k + 1, slices, run.p50_ms, run.p99_ms,
              static_cast<long long>(run.measured), run.create_p50_ms, run.create_p99_ms,
              run.commit_create_p50_ms, run.commit_create_p99_ms));
      AddSlice(run, slices, &runs[mode]);
      SleepSeconds(1);  // the last events' settles, before the next slice's probes
    }
  }
  for (const std::string& mode : WakeupModes()) {
    WakeupRun w = runs[mode];
    w.mode = mode;
    w.target_rate = rate;
    SetQuantiles(samples[mode], &w.run);
    const bool binlog = WakeupKey(mode) == "binlog";
    w.binlog_up = binlog && SumOverRelays(relays.at(mode), "outbox_wakeup_binlog_up") >= 1;
    if (binlog && !w.binlog_up)
      r_.notes.push_back(
          Fmt("wakeup %s at %.0f events/s: the stream was down at the end of "
              "the run (the relay polled meanwhile)",
              w.mode.c_str(), rate));
    Say(
        Fmt("wakeup: %-10s %6.0f events/s offered, %7.1f achieved (%lld measured): p50 %.1f p99 "
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
  std::vector<std::string> order = {"binlog"};
  if (Comparing()) order.push_back(std::string("binlog") + kOldSuffix);
  order.push_back("poll");
  if (Comparing()) order.push_back(std::string("poll") + kOldSuffix);
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
  if (!HaveLoadBinary("wakeup")) return;
  if (!BinlogOn())
    r_.notes.push_back(
        "the server's binary log is off: wakeup: binlog fell back to polling, so its figures are "
        "polling's (scripts/bench starts MariaDB with mariadb_binlog_args)");
  for (double rate : s_.wakeup_rates) CalibrateLoad(WritersFor(rate));
  WakeupSweep();

  // Drain rate with each wakeup mode (and build), default ordering,
  // alternating as the slices do.
  const int64_t main_n = s_.main_aggregates * s_.events_per_aggregate;
  for (int rep = 1; rep <= o_.runs; ++rep) {
    for (const std::string& mode : SliceOrder(rep - 1)) {
      const std::string stage = IsOld(mode) ? std::string("wakeup") + kOldSuffix : "wakeup";
      DrainSpec d = MakeDrain(stage, WakeupKey(mode), main_n, s_.default_batch, rep);
      d.ordering.clear();
      d.wakeup = WakeupKey(mode);
      if (IsOld(mode)) d.relay_bin = o_.compare_relay_bin;
      RunDrain(d);
    }
  }
}

}  // namespace bench
}  // namespace outbox
