// The dbcost stage (bench.h): what the relay costs the database per event at
// everyday rates. One relay alone on the server (the counters are the
// server's: a second relay's statements would count as this one's), one
// service on a database of its own, for each wakeup mode and ordering (and,
// with --compare-relay, each build), a paced load at 10, 100 and 1,000
// events/s of one autocommit INSERT per event. The global status deltas over
// the load and a tail until the last events settled, minus what the
// writers' and the benchmark's own statements add (CalibrateLoad), are the
// relay's: every statement it sends, idle polls, gauges and role checks
// included. The latency of the same run beside them.
#include <algorithm>

#include "bench.h"

namespace outbox {
namespace bench {

namespace {

// The counters the stage reports per event.
const std::vector<std::string>& CostCounters() {
  static const std::vector<std::string> kCounters = {
      "Questions",        "Binlog_commits", "Com_select",        "Com_update",
      "Com_begin",        "Com_commit",     "Com_rollback",      "Com_set_option",
      "Com_stmt_execute", "Com_insert",     "Com_admin_commands"};
  return kCounters;
}

}  // namespace

DbCostRun Bench::MeasureDbCost(const RelaySpec& spec, const Running& relay, size_t rate_index) {
  const double rate = s_.dbcost_rates.at(rate_index);
  const int writers = 8;
  LoadSpec load{spec.table, rate,          s_.dbcost_seconds.at(rate_index),
                writers,    spec.database, s_.dbcost_tail_seconds};
  DbCostRun c;
  c.target_rate = rate;
  c.run = MeasureLoad(load, relay, static_cast<int>(rate_index) + 1, nullptr);
  c.window_s = last_load_window_s_;
  const double events = std::max<double>(1, static_cast<double>(c.run.written));
  const std::map<std::string, double>& once = load_overhead_status_[writers];
  for (const std::string& k : CostCounters()) {
    const auto o = once.find(k);
    const auto p = load_per_event_.find(k);
    const double writers_share =
        (o == once.end() ? 0 : o->second) + (p == load_per_event_.end() ? 0 : p->second) * events;
    c.per_event[k] = (last_load_delta_[k] - writers_share) / events;
  }
  return c;
}

void Bench::DbCostConfig(const std::string& build, const std::string& wakeup,
                         const std::string& ordering) {
  std::string db = o_.db.database + "_cost_" + build + "_" + wakeup + "_" + ordering;
  db_->Exec("CREATE DATABASE IF NOT EXISTS `" + db +
            "` CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci");
  db_->CreateOutbox(kWakeupTable, db);
  RelaySpec rs;
  rs.table = kWakeupTable;
  rs.database = db;
  rs.wakeup = wakeup;
  rs.ordering = ordering;
  if (build == "other") rs.relay_bin = o_.compare_relay_bin;
  Running relay = StartRelays(rs, 1, "dbcost-" + build + "-" + wakeup + "-" + ordering);
  SleepSeconds(s_.settle_seconds);
  for (size_t i = 0; i < s_.dbcost_rates.size(); ++i) {
    DbCostRun c = MeasureDbCost(rs, relay, i);
    c.build = build;
    c.wakeup = wakeup;
    c.ordering = ordering;
    c.binlog_up = wakeup == "binlog" && SumOverRelays(relay, "outbox_wakeup_binlog_up") >= 1;
    if (wakeup == "binlog" && !c.binlog_up)
      r_.notes.push_back(Fmt("dbcost %s %s %s at %.0f events/s: the stream was down at the end",
                             build.c_str(), wakeup.c_str(), ordering.c_str(), c.target_rate));
    Say(
        Fmt("dbcost: %-5s %-6s %-13s %5.0f events/s (%.1f achieved, %lld events): "
            "%.2f statements/event (SELECT %.2f, UPDATE %.2f, BEGIN %.2f, COMMIT %.2f), "
            "%.2f write commits/event; p50 %.1f p99 %.1f ms",
            build.c_str(), wakeup.c_str(), ordering.c_str(), c.target_rate, c.run.offered_rate,
            static_cast<long long>(c.run.written), c.per_event["Questions"],
            c.per_event["Com_select"], c.per_event["Com_update"], c.per_event["Com_begin"],
            c.per_event["Com_commit"], c.per_event["Binlog_commits"], c.run.p50_ms, c.run.p99_ms));
    r_.dbcost.push_back(std::move(c));
    SleepSeconds(1);
  }
  StopAll(&relay, "the dbcost stage");
  db_->Exec("DROP DATABASE `" + db + "`");
}

void Bench::StageDbCost() {
  if (!HaveLoadBinary("dbcost")) return;
  if (!BinlogOn())
    r_.notes.push_back(
        "dbcost: the server's binary log is off: no Binlog_commits, and wakeup: binlog polls");
  CalibrateLoad(8);  // before any relay runs
  // Builds alternate per configuration: no build always goes first.
  int k = 0;
  for (const std::string wakeup : {"binlog", "poll"}) {
    for (const std::string ordering : {"per_aggregate", "none"}) {
      std::vector<std::string> builds = {"this"};
      if (Comparing()) builds.insert(k % 2 ? builds.begin() : builds.end(), "other");
      for (const std::string& build : builds) DbCostConfig(build, wakeup, ordering);
      ++k;
    }
  }
}

}  // namespace bench
}  // namespace outbox
