// Measured load runs (outbox-load writing, our consumer timing each event
// through the broker) and the latency stage (bench.h).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "bench.h"

namespace outbox {
namespace bench {

void SetQuantiles(const LatencySamples& s, LatencyRun* run) {
  run->measured = static_cast<int64_t>(s.consumed.size());
  run->p50_ms = Quantile(s.consumed, 0.5);
  run->p99_ms = Quantile(s.consumed, 0.99);
  run->max_ms = Quantile(s.consumed, 1);
  // When the relay handed each message to librdkafka (ms resolution): what
  // of the latency is the relay's and what the broker's and consumer's.
  run->create_p50_ms = Quantile(s.created, 0.5);
  run->create_p99_ms = Quantile(s.created, 0.99);
  run->create_max_ms = Quantile(s.created, 1);
  // From the writer's commit: the relay's part without the disk's.
  run->commit_create_p50_ms = Quantile(s.commit_created, 0.5);
  run->commit_create_p99_ms = Quantile(s.commit_created, 0.99);
}

std::vector<std::string> Bench::LoadArgv(const LoadSpec& spec, const std::string& json,
                                         const std::string& aggregate_type) {
  const int64_t planned = static_cast<int64_t>(spec.rate * spec.seconds);
  const int64_t aggregates =
      std::max<int64_t>(1, (planned + s_.events_per_aggregate - 1) / s_.events_per_aggregate);
  std::vector<std::string> argv = {
      o_.load_bin, "--host", o_.db.host, "--port", std::to_string(o_.db.port), "--user", o_.db.user,
      "--database", spec.database.empty() ? o_.db.database : spec.database, "--table", spec.table,
      "--aggregates", std::to_string(aggregates), "--events",
      std::to_string(s_.events_per_aggregate), "--first-aggregate-id",
      std::to_string(next_aggregate_), "--aggregate-types", aggregate_type, "--writers",
      std::to_string(spec.writers), "--rate", Fmt("%.0f", spec.rate),
      // Writers that cannot keep up stop on time
      // rather than stretch the run.
      "--duration", Fmt("%.0f", spec.seconds + 1), "--json", json, "--commit-times", "--quiet"};
  if (!o_.db.password.empty()) {
    argv.push_back("--password");
    argv.push_back(o_.db.password);
  }
  next_aggregate_ += aggregates;
  return argv;
}

namespace {

// Global status deltas of a run: st1 - st0 for every counter st1 has.
std::map<std::string, double> Delta(const std::map<std::string, double>& st0,
                                    const std::map<std::string, double>& st1) {
  std::map<std::string, double> d;
  for (const auto& [k, v] : st1) {
    auto it = st0.find(k);
    d[k] = v - (it == st0.end() ? 0 : it->second);
  }
  return d;
}

}  // namespace

void Bench::CalibrateLoad(int writers) {
  if (load_overhead_.count(writers)) return;
  // The same probes and load process as a measured run, on a table no relay
  // serves, at two lengths: what a run adds per event (the writers' INSERT
  // and its commit) and what it adds once (connection setup, our probes).
  const std::string table = "t_calibrate";
  db_->CreateOutbox(table);
  std::map<std::string, double> delta[2];
  double written[2] = {0, 0};
  for (int i = 0; i < 2; ++i) {
    LoadSpec spec{table, 200, 0.5 * (i + 1), writers, ""};
    std::string json = o_.out_dir + "/load-calibrate.json";
    std::remove(json.c_str());
    std::vector<std::string> argv = LoadArgv(spec, json, "Lat");
    const int64_t before = db_->QueryInt("SELECT COUNT(*) FROM " + table);
    auto st0 = db_->GlobalStatus();
    Child load(argv, o_.out_dir + "/load.log");
    int rc = load.Wait(60);
    auto st1 = db_->GlobalStatus();
    if (rc != 0) throw std::runtime_error("outbox-load failed; see " + o_.out_dir + "/load.log");
    written[i] = static_cast<double>(db_->QueryInt("SELECT COUNT(*) FROM " + table) - before);
    delta[i] = Delta(st0, st1);
  }
  std::map<std::string, double>& once = load_overhead_status_[writers];
  for (const auto& [k, d1] : delta[1]) {
    const double d0 = delta[0][k];
    // Per event by the difference of the two runs, rounded: counters move
    // by whole statements.
    const double per = std::round((d1 - d0) / std::max(1.0, written[1] - written[0]));
    once[k] = d0 - per * written[0];
    load_per_event_[k] = per;
  }
  load_overhead_[writers] = once["Questions"];
  db_->Exec("DROP TABLE " + table);
  Say(Fmt("load calibration: %d writers add %.0f statements per run besides their %.0f per event",
          writers, load_overhead_[writers], load_per_event_["Questions"]));
}

void Bench::CollectLatency(TimingConsumer& consumer, int64_t start_us,
                           const std::unordered_map<int64_t, int64_t>& commits, LatencyRun* run,
                           LatencySamples* samples) {
  double deadline = MonoSeconds() + 60;
  while (consumer.count() < static_cast<size_t>(run->written) && MonoSeconds() < deadline)
    SleepSeconds(0.05);
  std::vector<Received> got = consumer.Take();
  if (got.size() < static_cast<size_t>(run->written))
    r_.notes.push_back(Fmt("load run %d: consumed %zu of %lld events", run->rep, got.size(),
                           static_cast<long long>(run->written)));
  // The first second is warm-up (the relay wakes from idle polling).
  LatencySamples s;
  for (const Received& m : got) {
    if (m.ts_us <= 0 || m.ts_us < start_us + 1000000) continue;
    s.consumed.push_back(static_cast<double>(m.recv_us - m.ts_us) / 1000.0);
    s.created.push_back(static_cast<double>(m.create_ms * 1000 - m.ts_us) / 1000.0);
    auto c = commits.find(m.ts_us);
    if (c != commits.end() && c->second > 0)
      s.commit_created.push_back(static_cast<double>(m.create_ms * 1000 - c->second) / 1000.0);
  }
  SetQuantiles(s, run);
  if (!samples) return;
  auto append = [](std::vector<double>* to, const std::vector<double>& from) {
    to->insert(to->end(), from.begin(), from.end());
  };
  append(&samples->consumed, s.consumed);
  append(&samples->created, s.created);
  append(&samples->commit_created, s.commit_created);
}

LatencyRun Bench::MeasureLoad(const LoadSpec& spec, const Running& relay, int rep,
                              LatencySamples* samples) {
  if (!load_overhead_.count(spec.writers))  // with a relay running it would count the relay's
    throw std::logic_error("MeasureLoad: CalibrateLoad first, before the relay starts");
  // A topic of its own (CreateTopic): the relay publishes to
  // outbox.event.<aggregate type>.
  const std::string type = "Lat" + std::to_string(++topic_seq_);
  CreateTopic(bootstrap_, "outbox.event." + type);
  TimingConsumer consumer(bootstrap_, "outbox.event." + type, kPartitions);
  SleepSeconds(0.5);
  std::string json = o_.out_dir + "/load-" + std::to_string(rep) + ".json";
  std::remove(json.c_str());
  std::vector<std::string> argv = LoadArgv(spec, json, type);
  const pid_t pid = relay.procs.at(0).pid();
  double cpu0 = ProcessCpuSeconds(pid).value_or(0);
  auto st0 = db_->GlobalStatus();
  double w0 = MonoSeconds();
  const int64_t start_us = WallMicros();
  Child load(argv, o_.out_dir + "/load.log");
  int rc = load.Wait(spec.seconds * 3 + 60);
  if (rc != 0) throw std::runtime_error("outbox-load failed; see " + o_.out_dir + "/load.log");
  nlohmann::json j = nlohmann::json::parse(ReadFile(json));
  if (spec.tail_seconds > 0) {
    // Every event consumed, then the tail: the last settles are in the window.
    const double deadline = MonoSeconds() + 60;
    while (consumer.count() < j.value("events", size_t{0}) && MonoSeconds() < deadline)
      SleepSeconds(0.02);
    SleepSeconds(spec.tail_seconds);
  }
  double w1 = MonoSeconds();
  double cpu1 = ProcessCpuSeconds(pid).value_or(0);
  auto st1 = db_->GlobalStatus();
  last_load_delta_ = Delta(st0, st1);
  last_load_window_s_ = w1 - w0;
  LatencyRun run;
  run.rep = rep;
  run.written = j.value("events", int64_t{0});
  run.offered_rate = j.value("events_per_second", 0.0);
  run.writer_max_lag_ms = j.value("max_lag_ms", 0.0);
  run.insert_p50_ms = j.value("insert_p50_ms", 0.0);
  run.insert_p99_ms = j.value("insert_p99_ms", 0.0);
  run.relay_cpu_pct = 100.0 * (cpu1 - cpu0) / (w1 - w0);
  run.relay_statements_per_s = (st1["Questions"] - st0["Questions"] -
                                static_cast<double>(run.written) - load_overhead_[spec.writers]) /
                               (w1 - w0);
  std::unordered_map<int64_t, int64_t> commits;  // ts_us -> commit returned
  for (const auto& c : j.value("commit_times", nlohmann::json::array())) {
    // Two writers may start in the same microsecond: such events are not split.
    auto [it, fresh] = commits.emplace(c.at(0).get<int64_t>(), c.at(1).get<int64_t>());
    if (!fresh) it->second = 0;
  }
  CollectLatency(consumer, start_us, commits, &run, samples);
  return run;
}

void Bench::StageLatency() {
  if (!HaveLoadBinary("latency")) return;
  db_->CreateOutbox(kLatencyTable);
  // How late our consumer sees a message after the broker acknowledged it.
  Say("latency: probing the consumer's own delay");
  ProbeResult probe =
      ProbeConsumerDelay(bootstrap_, kProbeTopic, kPartitions, o_.quick ? 200 : 2000, 500);
  r_.probe_ack_ms = probe.ack_ms;
  r_.probe_late_ms = probe.recv_late_ms;
  CalibrateLoad(8);

  RelaySpec rs;  // the default config: only the table is named
  rs.table = kLatencyTable;
  Running relay = StartRelays(rs, 1, "latency");
  SleepSeconds(1);
  for (int rep = 1; rep <= s_.latency_runs; ++rep) {
    LoadSpec spec{kLatencyTable, s_.latency_rate, s_.latency_seconds, 8, ""};
    LatencyRun run = MeasureLoad(spec, relay, rep, &r_.latency_samples);
    r_.latency.push_back(run);
    Say(
        Fmt("latency run %d: %lld events at %.0f/s (writer max lag %.1f ms): insert->consumed "
            "p50 %.1f p99 %.1f max %.1f ms; insert->CreateTime p50 %.1f p99 %.1f ms; relay CPU "
            "%.1f%%, %.0f statements/s",
            rep, static_cast<long long>(run.written), run.offered_rate, run.writer_max_lag_ms,
            run.p50_ms, run.p99_ms, run.max_ms, run.create_p50_ms, run.create_p99_ms,
            run.relay_cpu_pct, run.relay_statements_per_s));
  }
  StopAll(&relay, "the latency stage");
}

}  // namespace bench
}  // namespace outbox
