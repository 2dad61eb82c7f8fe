#pragma once

// The benchmark's driver: one MariaDB, one mock broker, relays and writers as
// processes it starts and stops. Each stage is a method, in its own file:
//   bench.cc           setup, relay processes, the stage table, Run()
//   stage_drain.cc     drain, sweep, scale (drains of a prepared backlog)
//   stage_latency.cc   latency, and the measured load runs that wakeup and
//                      services share
//   stage_idle.cc      idle (and the idle window the other stages reuse)
//   stage_wakeup.cc    wakeup: poll vs binlog over a rate sweep
//   stage_services.cc  services: one relay serving 100 databases
//   stage_fleet.cc     fleet: relays sharing 300 databases through a fleet:
//                      block, against every relay serving every database
//   stage_dbcost.cc    dbcost: the relay's statements and write commits per
//                      event at everyday rates, each wakeup mode and ordering
//   stage_formats.cc   formats: drain rate with value_format bytes,
//                      json_schema and avro, against a Schema Registry
// Not thread-safe: one instance, driven by main().

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "db.h"
#include "kafka_clock.h"
#include "stages.h"
#include "util.h"

namespace outbox::bench {

inline constexpr int kPartitions = 4;
inline constexpr const char* kMainTable = "t_outbox";
inline constexpr const char* kBigTable = "t_big";
inline constexpr const char* kLatencyTable = "t_latency";
inline constexpr const char* kWakeupTable = "t_wakeup";
inline constexpr const char* kLatencyTopic = "outbox.event.Lat";
inline constexpr const char* kProbeTopic = "outbox.bench.probe";
inline constexpr const char* kFleetTopic = "outbox.bench.fleet";

// Progress on stderr.
void Say(const std::string& s);

// `run`'s sample count and quantiles (consumed, CreateTime, commit ->
// CreateTime) from `s`: one run's samples or several pooled.
void SetQuantiles(const LatencySamples& s, LatencyRun* run);

struct RelaySpec {
  std::string table = kMainTable;
  std::string ordering;  // empty: the default (per_aggregate), key left out
  int batch = 0;         // 0: the default, key left out
  // >1: services svc0..svcN-1, on tables idle_0.. of the bench database, or
  // on `table` in databases <database_prefix><i> when database_prefix is set.
  int services = 1;
  std::string database_prefix;
  std::string database;   // one service: its database; empty: the bench database
  std::string wakeup;     // empty: the default (poll), key left out
  std::string relay_bin;  // empty: Options::relay_bin
  // Non-empty: a fleet: block with this topic (group outbox-bench-fleet).
  std::string fleet_topic;
  int fleet_session_timeout_ms = 0;  // 0: the default, key left out
  // Non-empty: kafka.schema_registry.url, and the service's value_format
  // (bytes | json_schema | avro; the formats stage's subjects).
  std::string registry_url;
  std::string value_format;
};

// The service keys for value format `format` (bytes | json_schema | avro),
// with the subjects the formats stage registers (stage_formats.cc).
std::string FormatYaml(const std::string& format);

struct Running {
  std::vector<Child> procs;
  std::vector<int> ports;
  std::vector<std::string> configs;  // per relay, for a restart
  std::vector<std::string> logs;
  // wakeup: binlog only: every service's stream reported up
  // (outbox_wakeup_binlog_up) before StartRelays returned.
  bool binlog_up = false;
};

// A paced load of single-row autocommit INSERTs by outbox-load.
struct LoadSpec {
  std::string table;
  double rate = 0;     // events/s in total
  double seconds = 0;  // planned length (outbox-load's --duration caps it)
  int writers = 8;
  std::string database;  // empty: the bench database
  // > 0: after the load, wait until every event was consumed and this long
  // more before the closing status read (the dbcost stage counts the last
  // events' settles too).
  double tail_seconds = 0;
};

struct DrainSpec {
  std::string stage;
  std::string mode;      // recorded as Drain::mode: db | none | per_aggregate | poll | binlog
  std::string ordering;  // the relays' ordering; empty: the default
  std::string wakeup;    // the relays' wakeup; empty: the default (poll)
  std::string tpl;
  int64_t events = 0;
  int batch = 500;
  int relays = 1;
  bool big = false;  // on t_big, above its SENT rows
  bool sample_rss = false;
  int rep = 0;
  std::string relay_bin;  // empty: Options::relay_bin
  // The formats stage: the relays' value format and registry (RelaySpec).
  std::string value_format;
  std::string registry_url;
};

class Bench {
 public:
  Bench(Options o, Sizes s) : o_(std::move(o)), s_(std::move(s)) {}

  int Run();

 private:
  // --- setup (bench.cc)
  void StartBroker();
  void Machine();
  // `bin version`'s output on one line.
  std::string RelayVersion(const std::string& bin);
  bool Want(const std::string& stage) const;
  void PurgeBinlogs();
  bool Comparing() const { return !o_.compare_relay_bin.empty(); }
  // --- relays (bench.cc)
  std::string WriteConfig(const RelaySpec& spec, int http_port);
  std::string ServiceYaml(const RelaySpec& spec, int i) const;
  Running StartRelays(const RelaySpec& spec, int count, const std::string& tag);
  void WaitReady(Running* r, const std::string& tag, double timeout_s);
  bool WaitBinlogUp(const Running& r, int services, double timeout_s);
  double Published(const Running& r);
  double SumOverRelays(const Running& r, const std::string& metric);
  void StopAll(Running* r, const std::string& what);
  // --- drains (stage_drain.cc)
  DrainSpec MakeDrain(const std::string& stage, const std::string& mode, int64_t events, int batch,
                      int rep) const;
  Drain RunDrain(const DrainSpec& spec);
  void ResetFor(const DrainSpec& spec, Drain* d);
  double WaitPublished(const DrainSpec& spec, Running& relays, double t0);
  void FinishDrain(const DrainSpec& spec, const std::string& table, int64_t offset, Running& relays,
                   Drain* d);
  // `spec`, and with --compare-relay the other build's twin, in an order
  // that alternates with spec.rep (no build always goes first).
  void RunDrainCompared(const DrainSpec& spec);
  void StageDrain();
  void StageSweep();
  void StageScale();
  // --- measured load runs (stage_latency.cc)
  void CalibrateLoad(int writers);
  // `samples` (optional) gets the run's per-event latencies appended.
  LatencyRun MeasureLoad(const LoadSpec& spec, const Running& relay, int rep,
                         LatencySamples* samples);
  std::vector<std::string> LoadArgv(const LoadSpec& spec, const std::string& json,
                                    const std::string& aggregate_type);
  // `commits`: the payload's ts_us -> when that INSERT's commit returned
  // (unix us), where known.
  void CollectLatency(TimingConsumer& consumer, int64_t start_us,
                      const std::unordered_map<int64_t, int64_t>& commits, LatencyRun* run,
                      LatencySamples* samples);
  void StageLatency();
  // --- idle (stage_idle.cc)
  // Questions (and Com_*) over `seconds` with the given relays running;
  // `out` gets the rates, the benchmark's own probes subtracted.
  double IdleWindow(std::vector<Child>* procs, double seconds, Idle* out);
  void StageIdle();
  // --- wakeup and services (stage_wakeup.cc, stage_services.cc)
  bool BinlogOn();
  // Whether the outbox-load binary is there; if not, notes (and says) that
  // `stage` is not measured.
  bool HaveLoadBinary(const std::string& stage);
  void StageWakeup();
  void WakeupSweep();
  std::vector<std::string> WakeupModes() const;
  // The modes in the order of the k-th slice (and drain repetition k + 1).
  std::vector<std::string> SliceOrder(int k) const;
  // Slices of each rate per mode: with --compare-relay each is one of the
  // --runs runs the builds are compared over.
  int WakeupSliceCount() const;
  std::string WakeupDatabase(const std::string& mode) const;
  Running StartWakeupRelay(const std::string& mode);
  void WakeupIdle(const std::string& mode, Running* relay, double others_per_s);
  void WakeupRate(size_t i, std::map<std::string, Running>& relays);
  void StageServices();
  ServicesRun MeasureServices(const std::string& mode, const std::vector<std::string>& dbs);
  LatencyRun ServicesLoad(const Running& relay, const std::vector<std::string>& dbs,
                          int64_t base_connections, ServicesRun* out);
  int64_t ThreadsConnected();
  // Databases <database><suffix>0..n-1, each with an empty outbox table.
  std::vector<std::string> CreateServiceDatabases(const std::string& stage,
                                                  const std::string& suffix, int n);
  // --- dbcost (stage_dbcost.cc)
  void StageDbCost();
  void DbCostConfig(const std::string& build, const std::string& wakeup,
                    const std::string& ordering);
  DbCostRun MeasureDbCost(const RelaySpec& spec, const Running& relay, size_t rate_index);
  // --- formats (stage_formats.cc)
  void StageFormats();
  // Starts the registry with the OrderPaid schemas registered; its URL.
  std::string StartRegistry();
  // The registry's API requests so far (-1: it did not answer).
  int64_t RegistryRequests();
  // --- fleet (stage_fleet.cc)
  void StageFleet();
  FleetRun MeasureFleet(bool fleet, const std::vector<std::string>& dbs);
  // The idle window: statements, connections, CPU; threads, RSS and
  // services of each relay.
  void FleetIdle(Running* relays, int64_t base_connections, FleetRun* out);
  // service name -> how many of the relays report outbox_service_owned 1.
  std::map<std::string, int> Owners(const Running& r);
  // Every one of `services` owned by exactly one relay (and, when `member`
  // is not -1, some of them by that relay); false on timeout.
  bool WaitOwnedOnce(const Running& r, int services, double timeout_s, int member = -1);
  void Takeover(int kill, Running* r, const std::vector<std::string>& dbs, FleetRun* out);
  // Restarts `member` after a kill and waits until it owns services again.
  void Rejoin(int kill, Running* r, size_t member, FleetRun* out);
  // Seconds from `t0` until each `ids` row of `dbs` is SENT (-1: not by the timeout).
  std::vector<double> AwaitSent(const std::vector<std::string>& dbs, int64_t id, double t0,
                                double timeout_s);

  Options o_;
  Sizes s_;
  Results r_;
  std::unique_ptr<Db> db_;
  Child broker_;
  std::string bootstrap_;
  int config_seq_ = 0;
  int topic_seq_ = 0;  // MeasureLoad's topics
  std::string main_tpl_, cost_tpl_;
  int64_t big_next_id_ = 0;     // the next big-table run's ids start above this
  int64_t next_aggregate_ = 1;  // outbox-load's next first aggregate id
  Child registry_;              // the formats stage's Schema Registry
  int registry_port_ = 0;
  // Statements a load run adds besides its INSERTs (outbox-load's connection
  // setup, our two status probes), by writer count: CalibrateLoad.
  std::map<int, double> load_overhead_;
  // The same for every global status counter (the dbcost stage), with the
  // writers' one INSERT and one binlog commit per event taken out.
  std::map<int, std::map<std::string, double>> load_overhead_status_;
  std::map<std::string, double> load_per_event_;  // per event written, whatever the writers
  // The last load run's global status deltas (all counters) and its window.
  std::map<std::string, double> last_load_delta_;
  double last_load_window_s_ = 0;
};

}  // namespace outbox::bench
