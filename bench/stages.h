#pragma once

// The benchmark's stages and what they record. bench/main.cc runs them;
// bench/report.cc turns the records into the table, BENCHMARKS.md and the
// figures' data files.

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "db.h"
#include "util.h"

namespace outbox::bench {

// --compare-relay: the other build's drains are stage "<stage>-old", its
// wakeup relays mode "<mode>-old".
inline constexpr const char* kOldSuffix = "-old";

struct Options {
  DbParams db;
  pid_t mysqld_pid = -1;  // for the database's CPU time; -1: not measured
  std::string relay_bin;
  // --compare-relay: another outbox-relay build (usually the previous one),
  // run beside this one in the same alternating runs: the wakeup stage's
  // modes "poll-old" and "binlog-old", the drain stages' "drain-old" and
  // "wakeup-old" (bench/report_compare.cc judges new against old).
  std::string compare_relay_bin;
  std::string broker_bin;
  std::string load_bin;
  std::string out_dir;
  std::string doc_path;      // BENCHMARKS.md to write; empty: out_dir only
  std::string doc_template;  // bench/BENCHMARKS.md.in
  std::string figures_rel;   // path of the figures relative to doc_path's folder
  std::string command;       // how the run was started, for the doc
  std::string commit;        // git commit of the relay measured
  bool quick = false;
  // KEY=VALUE librdkafka producer properties every relay gets under
  // kafka.properties (e.g. linger.ms=1), recorded in the report.
  std::vector<std::string> kafka_properties;
  int runs = 3;        // repetitions of the headline drains (medians reported)
  int sweep_runs = 1;  // repetitions of each batch-size sweep point
  std::vector<std::string> stages = {"drain",  "sweep",    "latency", "idle",   "scale",
                                     "wakeup", "services", "fleet",   "dbcost", "formats"};
  // The source tree, for the formats stage: its Schema Registry
  // (tests/support/test_registry.py, run by Debian's /usr/bin/python3) and
  // the schemas it registers (bench/schemas/).
  std::string source_dir;
  // Drain stage configurations, MODE:RELAYS[:WORKLOAD] with WORKLOAD main or
  // cost; the default is the full set.
  std::vector<std::string> drain_set = {"db:0",
                                        "none:1",
                                        "per_aggregate:1",
                                        "none:3",
                                        "per_aggregate:3",
                                        "none:1:cost",
                                        "per_aggregate:1:cost"};
};

// Workload sizes (aggregates x events each); --quick shrinks them.
struct Sizes {
  int64_t main_aggregates = 50000;  // x4 = 200,000 events
  int64_t cost_aggregates = 25000;  // x4 = 100,000 events (the ordering cost's workload)
  int64_t big_aggregates = 250000;  // x4 = 1,000,000 events (RSS while draining)
  int64_t sent_rows = 2000000;      // SENT history for the scale run
  int events_per_aggregate = 4;
  double latency_seconds = 20;  // per latency run
  int latency_runs = 3;
  double latency_rate = 1000;  // events/s offered
  double idle_seconds = 15;    // idle measurement window
  std::vector<int> sweep_batches = {100, 250, 1000, 2000};
  int default_batch = 500;  // the relay's default batch_size
  // wakeup stage: offered rates (events/s) and the seconds of load at each
  // (longer at low rates, for samples: 1 event/s for 90 s gives 90).
  std::vector<double> wakeup_rates = {1, 10, 100, 1000, 10000};
  std::vector<double> wakeup_seconds = {90, 30, 30, 30, 15};
  // Each rate's load is split into this many slices per mode, the modes
  // alternating (stage_wakeup.cc).
  int wakeup_slices = 3;
  // Idle window of the wakeup and services stages: covers one safety poll
  // (every 30 s with wakeup: binlog).
  double wakeup_idle_seconds = 30;
  // Wait after a relay is ready before an idle window: past the first gauge
  // refresh and binlog's polling after batches (poll_interval_ms +
  // gauge_interval_ms + 1 s, docs/CONFIG.md "wakeup: binlog").
  double settle_seconds = 8;
  int services = 100;        // services stage: databases served by one relay
  double services_rate = 1;  // events/s per service during its load
  double services_seconds = 30;
  // fleet stage: relays sharing databases through a fleet: block against
  // the same number of relays each serving every database.
  int fleet_services = 300;
  int fleet_relays = 3;
  int fleet_shards = 60;                 // partitions of the fleet topic (virtual shards)
  int fleet_kills = 5;                   // kill -9 of a member, one at a time
  int fleet_session_timeout_ms = 10000;  // the relay's default
  // dbcost stage: offered rates (events/s per service) and seconds of load
  // at each (at least ~300 events at the lowest rate, for the per-event
  // figures and the p99).
  std::vector<double> dbcost_rates = {10, 100, 1000};
  std::vector<double> dbcost_seconds = {30, 15, 10};
  // After the load, until the last events' settles are counted.
  double dbcost_tail_seconds = 2;
  // formats stage: the OrderPaid backlog drained with each value format.
  int64_t formats_aggregates = 50000;  // x4 = 200,000 events
};

struct Drain {
  // drain | sweep | scale | backlog | wakeup | formats; with --compare-relay
  // the other build's runs are "drain-old" and "wakeup-old"
  std::string stage;
  std::string workload;               // e.g. "50000x4"
  std::string mode;                   // db | none | per_aggregate; formats: the value format
  std::string table_state = "empty";  // empty | "2000000 SENT"
  int relays = 0;                     // 0 for the in-server procedure
  int batch = 0;
  int rep = 0;
  int64_t events = 0;
  double seconds = 0;
  double rate = 0;
  double relay_cpu_s = 0;  // all relay processes together
  double db_cpu_s = 0;
  double broker_cpu_s = 0;
  double relay_peak_rss_mib = 0;  // max VmHWM over the relays
  double fsyncs = 0;              // Innodb_data_fsyncs delta
  double questions = 0;           // Questions delta
  double purge_wait_s = 0;
  // formats: the registry's API requests during the drain (-1: not counted)
  int64_t registry_requests = -1;
};

struct RssPoint {
  double t = 0;
  int64_t published = 0;
  double rss_mib = 0;
};

// A load run's latencies, one per event after the warm-up, ms.
struct LatencySamples {
  std::vector<double> consumed;        // insert -> consumed
  std::vector<double> created;         // insert -> CreateTime
  std::vector<double> commit_created;  // the writer's commit returned -> CreateTime (when known)
};

struct LatencyRun {
  int rep = 0;
  int64_t written = 0;
  int64_t measured = 0;  // samples after the warm-up
  double offered_rate = 0;
  double writer_max_lag_ms = 0;
  double p50_ms = 0, p99_ms = 0, max_ms = 0;                       // insert -> consumed
  double create_p50_ms = 0, create_p99_ms = 0, create_max_ms = 0;  // insert -> CreateTime
  // The writer's commit returned -> CreateTime (outbox-load --commit-times):
  // the relay's own share, once the event exists. CreateTime has ms
  // resolution and the row is visible just before the writer hears of its
  // commit, so a value can be below 0 by up to a millisecond.
  double commit_create_p50_ms = 0, commit_create_p99_ms = 0;
  // The writers' own INSERT, its commit included (outbox-load): the floor
  // under insert -> consumed, the database's share alone.
  double insert_p50_ms = 0, insert_p99_ms = 0;
  double relay_cpu_pct = 0;
  double relay_statements_per_s = 0;  // Questions/s minus the writers' one INSERT per event
};

struct Idle {
  std::string label;  // e.g. "1 service, per_aggregate"
  int services = 0;
  std::string mode;
  double seconds = 0;
  double statements_per_s = 0;  // whole relay, own probes subtracted
  double per_service = 0;
  std::map<std::string, double> com_per_s;  // Com_* breakdown
  double cpu_ms_per_s = 0;
  double rss_mib = 0;
  double hwm_mib = 0;
};

// One point of the wakeup stage's rate sweep.
struct WakeupRun {
  std::string mode;        // poll | binlog; with --compare-relay also poll-old | binlog-old
  double target_rate = 0;  // events/s asked of the writers
  LatencyRun run;          // run.offered_rate: the rate the writers achieved; quantiles
                           // over the slices' samples pooled
  // Each slice's own p50 and p99 (a slice is one run of the comparison).
  std::vector<double> slice_p50_ms;
  std::vector<double> slice_p99_ms;
  bool binlog_up = false;  // binlog only: outbox_wakeup_binlog_up at the end of the run
};

// One relay serving many services (one database each) in one wakeup mode.
struct ServicesRun {
  std::string mode;  // poll | binlog
  int services = 0;
  bool binlog_up = false;                              // every service's stream was up after start
  double startup_s = 0;                                // process start -> /readyz 200
  int64_t threads_idle = 0, threads_load = 0;          // /proc/PID/status Threads
  int64_t connections_idle = 0, connections_load = 0;  // Threads_connected above ours
  int64_t replication_connections = 0;                 // "Binlog Dump" in the process list
  Idle idle;
  LatencyRun load;  // services_rate per service, all services at once
};

// Relays serving the same databases with and without a fleet: block
// (stage_fleet.cc).
struct FleetRun {
  std::string mode;  // fleet | every relay
  int relays = 0;
  int services = 0;
  int shards = 0;                // fleet only: partitions of the fleet topic
  double startup_s = 0;          // start -> every relay ready (fleet: every service owned once)
  int64_t connections = 0;       // idle: Threads_connected above the benchmark's own
  Idle idle;                     // all relays together
  double db_cpu_ms_per_s = 0;    // the server's CPU over the idle window (0: not measured)
  std::vector<int64_t> threads;  // per relay, idle
  std::vector<double> rss_mib;   // per relay, idle
  std::vector<int> owned;        // per relay: services it serves
  // fleet only, over all kills: kill -9 of a member -> the first publish
  // (SENT) of an event inserted right after the kill, per moved service.
  std::vector<double> takeover_s;
  std::vector<int> moved;        // per kill: services of the killed member
  std::vector<double> rejoin_s;  // per kill: restart -> every service owned once again
};

// The dbcost stage: one relay alone on the server, one service, one paced
// load; what the relay cost the database per event (global status deltas,
// the writers' own INSERT and commit and the benchmark's probes
// subtracted), beside the same run's latency.
struct DbCostRun {
  std::string build = "this";  // this | other (--compare-relay)
  std::string wakeup;          // poll | binlog
  std::string ordering;        // per_aggregate | none
  double target_rate = 0;      // events/s asked of the writers
  LatencyRun run;              // the run's latency and rate
  double window_s = 0;         // load + tail
  // Relay's share of each counter over the window (Questions, Binlog_commits,
  // Com_select, ...), per event written.
  std::map<std::string, double> per_event;
  bool binlog_up = false;  // binlog only: the stream was up at the end
};

struct Results {
  std::vector<Drain> drains;
  std::vector<LatencyRun> latency;
  LatencySamples latency_samples;  // pooled over the latency stage's runs
  std::vector<double> probe_ack_ms, probe_late_ms;
  std::vector<Idle> idle;
  double idle_baseline_questions = 0;  // our own probes over one window
  std::vector<RssPoint> rss_series;
  int64_t rss_series_events = 0;
  double big_table_build_s = 0;
  std::map<std::string, std::string> machine;  // key -> value for the doc
  double started_unix = 0, seconds = 0;
  std::map<std::string, double> stage_seconds;  // how long each stage ran
  std::string load_before, load_after;
  std::vector<WakeupRun> wakeup;
  std::vector<Idle> wakeup_idle;  // one service per mode, after settling
  std::vector<ServicesRun> services;
  std::vector<FleetRun> fleet;
  std::vector<DbCostRun> dbcost;
  std::vector<std::string> notes;  // anything that went wrong or was skipped
};

std::string WorkloadName(int64_t aggregates, int per_aggregate);

}  // namespace outbox::bench
