#pragma once

// outbox-soak: an hour (or a few minutes) of steady load with a fault every
// few minutes (scripts/soak, docs/RELIABILITY.md "Soak"). One relay process
// with two services on a GTID primary/replica pair of MariaDB behind a
// TcpProxy (one service polls, one is woken by the binlog; both
// per_aggregate), librdkafka's mock cluster in this process, outbox-load as
// the writers and outbox-check as the judge.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace outbox::soak {

struct Options {
  double minutes = 60;
  uint64_t seed = 0;  // 0: drawn from the clock (and printed)
  double fault_every_s = 180;
  double rate = 100;  // events/s per service
  int64_t lease_ms = 5000;
  std::string out_json;  // figures and samples, for the report
  // Where WriteReport puts soak.md (a section for docs/RELIABILITY.md),
  // soak.dat and faults.dat (for tests/soak/soak.gp); "" for none.
  std::string report_dir;
  std::string report_from;  // outbox-soak --report-from: only WriteReport
};

// The faults the soak draws from.
enum class Fault { kKill9, kDbRestart, kDbFreeze, kBrokerDown, kFailover, kBlackhole };
const char* ToString(Fault f);

// The sequence of faults for a seed: the six kinds once each in a shuffled
// order, then drawn at random. The same seed gives the same sequence.
std::vector<Fault> DrawFaults(uint64_t seed, int count);

// One resource sample of the relay process and the databases.
struct Sample {
  double t = 0;  // seconds since the start
  int64_t rss_kb = 0, fds = 0, threads = 0, db_connections = 0, backlog = 0;
};

// What happened around one fault.
struct FaultRecord {
  Fault fault;
  double start = 0, end = 0;  // seconds since the start
  double recovered = -1;      // backlog back to its level before; -1: never
  int64_t backlog_before = 0;
  int64_t max_id_at_end[2] = {0, 0};  // per service: attributes duplicates
  int64_t duplicates = 0;
};

// Runs the soak; returns the process exit code (0: 0 lost, 0 order
// violations and flat resources).
int Run(const Options& options);

// The report of a run (Run's JSON) as soak.md, soak.dat and faults.dat in
// `dir`.
void WriteReport(const nlohmann::json& report, const std::string& dir);

nlohmann::json ToJson(const FaultRecord& r);
nlohmann::json ToJson(const Sample& s);

}  // namespace outbox::soak
