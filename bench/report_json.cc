// results.json (report.h): every record of the run, the targets and notes.
#include <nlohmann/json.hpp>

#include "report.h"

namespace outbox {
namespace bench {

// results.json's records: every field of the structs (stages.h).
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Drain, stage, workload, mode, table_state, relays, batch, rep,
                                   events, seconds, rate, relay_cpu_s, db_cpu_s, broker_cpu_s,
                                   relay_peak_rss_mib, fsyncs, questions, purge_wait_s,
                                   registry_requests)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(LatencyRun, rep, written, measured, offered_rate,
                                   writer_max_lag_ms, p50_ms, p99_ms, max_ms, create_p50_ms,
                                   create_p99_ms, create_max_ms, commit_create_p50_ms,
                                   commit_create_p99_ms, relay_cpu_pct, relay_statements_per_s)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Idle, label, services, mode, seconds, statements_per_s,
                                   per_service, com_per_s, cpu_ms_per_s, rss_mib, hwm_mib)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(WakeupRun, mode, target_rate, run, slice_p50_ms, slice_p99_ms,
                                   binlog_up)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ServicesRun, mode, services, binlog_up, startup_s, threads_idle,
                                   threads_load, connections_idle, connections_load,
                                   replication_connections, idle, load)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(FleetRun, mode, relays, services, shards, startup_s, connections,
                                   idle, db_cpu_ms_per_s, threads, rss_mib, owned, takeover_s,
                                   moved, rejoin_s)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(DbCostRun, build, wakeup, ordering, target_rate, run, window_s,
                                   per_event, binlog_up)

std::string Report::Json() const {
  nlohmann::json j;
  j["machine"] = r_.machine;
  j["seconds"] = r_.seconds;
  j["stage_seconds"] = r_.stage_seconds;
  j["quick"] = o_.quick;
  j["load_before"] = r_.load_before;
  j["load_after"] = r_.load_after;
  j["drains"] = r_.drains;
  j["latency"] = r_.latency;
  j["idle"] = r_.idle;
  j["wakeup"] = r_.wakeup;
  j["wakeup_idle"] = r_.wakeup_idle;
  j["services"] = r_.services;
  j["fleet"] = r_.fleet;
  j["dbcost"] = r_.dbcost;
  for (const Target& t : Targets())
    j["targets"].push_back(
        {{"what", t.what}, {"value", t.value}, {"target", t.target}, {"result", t.result}});
  for (const CompareRow& c : CompareRows())
    j["compare"].push_back({{"what", c.what},
                            {"this_build", c.now},
                            {"other_build", c.before},
                            {"result", c.verdict}});
  j["notes"] = r_.notes;
  return j.dump(2) + "\n";
}

}  // namespace bench
}  // namespace outbox
