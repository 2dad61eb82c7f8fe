#include "soak/soak.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <random>
#include <thread>

#include "soak/soak_world.h"
#include "support/wait.h"

namespace outbox::soak {

using namespace std::chrono_literals;
using SteadyClock = std::chrono::steady_clock;

namespace {
// Every fault with its description and how it is done to the world: the one
// list of them. holds_writes: the writes hold still while it is done (it
// stops the primary or moves it: a service's writes fail then, and a writer
// that went on writing to a demoted server as root would put rows where no
// relay will look).
struct FaultName {
  Fault fault;
  const char* name;
  bool holds_writes;
  void (*inject)(World&);
};
constexpr FaultName kFaults[] = {
    {Fault::kKill9, "kill -9 of the relay", false, [](World& w) { w.Kill9(); }},
    {Fault::kDbRestart, "database restart", true, [](World& w) { w.DbRestart(); }},
    {Fault::kDbFreeze, "database freeze (SIGSTOP 15 s)", true, [](World& w) { w.DbFreeze(15s); }},
    {Fault::kBrokerDown, "broker down (20 s)", false, [](World& w) { w.BrokerDown(20s); }},
    {Fault::kFailover, "failover", true, [](World& w) { w.Failover(); }},
    {Fault::kBlackhole, "blackhole to the database (20 s)", false,
     [](World& w) { w.Blackhole(20s); }}};

const FaultName& Find(Fault f) {
  for (const FaultName& n : kFaults)
    if (n.fault == f) return n;
  return kFaults[0];  // not reached: every Fault is in kFaults
}
}  // namespace

const char* ToString(Fault f) { return Find(f).name; }

std::vector<Fault> DrawFaults(uint64_t seed, int count) {
  std::mt19937_64 rng(seed);
  std::vector<Fault> all;
  for (const FaultName& n : kFaults) all.push_back(n.fault);
  std::vector<Fault> out = all;
  std::shuffle(out.begin(), out.end(), rng);
  std::uniform_int_distribution<size_t> pick(0, all.size() - 1);
  while (static_cast<int>(out.size()) < count) out.push_back(all[pick(rng)]);
  out.resize(static_cast<size_t>(std::max(count, 0)));
  return out;
}

nlohmann::json ToJson(const FaultRecord& r) {
  return {{"fault", ToString(r.fault)},
          {"start_s", r.start},
          {"end_s", r.end},
          {"recovered_s", r.recovered},
          {"backlog_before", r.backlog_before},
          {"duplicates", r.duplicates}};
}

nlohmann::json ToJson(const Sample& s) {
  return {{"t", s.t},
          {"rss_kb", s.rss_kb},
          {"fds", s.fds},
          {"threads", s.threads},
          {"db_connections", s.db_connections},
          {"backlog", s.backlog}};
}

namespace {

class Soak {
 public:
  explicit Soak(World* world) : w_(*world), start_(SteadyClock::now()) {}

  double Now() const { return std::chrono::duration<double>(SteadyClock::now() - start_).count(); }

  // Keeps the writers going and samples every 10 s until `until` (seconds).
  void Steady(double until) {
    while (Now() < until) {
      if (!w_.WritersRunning()) w_.StartWriters(10);
      if (Now() >= next_sample_) {
        samples_.push_back(w_.TakeSample(Now()));
        // Every 10 s on the clock; a fault that blocked this loop leaves a
        // gap rather than a burst of catch-up samples.
        next_sample_ = 10 * (std::floor(Now() / 10) + 1);
      }
      std::this_thread::sleep_for(200ms);
    }
  }

  void Inject(Fault f) {
    FaultRecord r;
    r.fault = f;
    if (Find(f).holds_writes) w_.WaitWriters();
    r.backlog_before = w_.Backlog();
    r.start = Now();
    std::cout << "soak: t=" << static_cast<int>(r.start) << " s: " << ToString(f) << std::endl;
    Find(f).inject(w_);
    r.end = Now();
    // Back to the level before: within 20% or 50 rows of it (the steady
    // backlog moves with the writers' bursts).
    const int64_t level = std::max<int64_t>(r.backlog_before + 50, r.backlog_before * 6 / 5);
    while (Now() < r.end + 300) {
      if (!w_.WritersRunning()) w_.StartWriters(10);
      if (w_.Backlog() <= level) {
        r.recovered = Now() - r.end;
        break;
      }
      std::this_thread::sleep_for(500ms);
    }
    for (int i = 0; i < 2; ++i) r.max_id_at_end[i] = w_.MaxId(i);
    faults_.push_back(r);
  }

  std::vector<Sample> samples_;
  std::vector<FaultRecord> faults_;

 private:
  World& w_;
  const SteadyClock::time_point start_;
  double next_sample_ = 0;
};

// Duplicates of one service, from outbox-check's samples ("ID xN"), each
// counted against the first fault that ended after the row was written.
void AttributeDuplicates(const nlohmann::json& report, int service,
                         std::vector<FaultRecord>* faults) {
  if (!report.contains("samples") || !report["samples"].contains("duplicates")) return;
  for (const auto& d : report["samples"]["duplicates"]) {
    const std::string s = d.get<std::string>();
    const int64_t id = std::atoll(s.c_str());
    const int64_t copies = std::atoll(s.c_str() + s.find('x') + 1) - 1;
    for (FaultRecord& f : *faults)
      if (id <= f.max_id_at_end[service]) {
        f.duplicates += copies;
        break;
      }
  }
}

}  // namespace

int Run(const Options& o) {
  const uint64_t seed = o.seed ? o.seed : std::random_device{}();
  std::cout << "soak: seed " << seed << " (replay with --seed " << seed << "), " << o.minutes
            << " min, a fault every " << o.fault_every_s << " s" << std::endl;
  Options opts = o;
  opts.seed = seed;
  const std::string dir = testing::ScratchDir("soak");
  World world(opts, dir);
  if (!world.ok()) {
    std::cerr << "soak: could not set up (see " << dir << ")" << std::endl;
    return 2;
  }
  std::cout << "soak: logs in " << dir << std::endl;
  Soak soak(&world);
  const double end = opts.minutes * 60;
  const int count = std::max(1, static_cast<int>(end / opts.fault_every_s) - 1);
  const std::vector<Fault> plan = DrawFaults(seed, count);
  for (size_t i = 0; i < plan.size(); ++i) {
    soak.Steady(opts.fault_every_s * static_cast<double>(i + 1));
    soak.Inject(plan[i]);
  }
  soak.Steady(end);
  const bool drained = world.Drain(std::chrono::seconds(180));
  nlohmann::json report = {{"seed", seed},
                           {"minutes", opts.minutes},
                           {"rate_per_service", opts.rate},
                           {"fault_every_s", opts.fault_every_s},
                           {"written", world.written()},
                           {"drained", drained}};
  int64_t lost = 0, order = 0, dups = 0, deleted = 0;
  for (int i = 0; i < 2; ++i) {
    testing::CheckResult c = world.Check(i, "final");
    std::cout << c.output << std::endl;
    const auto& r = c.report;
    if (!r.is_object()) {
      std::cerr << "soak: outbox-check gave no report for " << kServices[i].name << " (exit "
                << c.exit_code << ", -1: timed out or killed; see " << world.dir() << ")"
                << std::endl;
      return 2;
    }
    lost += r["lost"].get<int64_t>();
    order += r["order_violations"].get<int64_t>() + r["split_aggregates"].get<int64_t>() +
             r["overtaken"].get<int64_t>();
    dups += r["duplicate_copies"].get<int64_t>();
    // Messages the mock cluster deleted before the check read them count as
    // lost and prove nothing: the run has too few partitions (Partitions).
    deleted += r.value("deleted_by_retention", int64_t{0});
    report["verdict_" + kServices[i].name] = r["verdict"];
    report["rows_" + kServices[i].name] = r["rows"];
    AttributeDuplicates(r, i, &soak.faults_);
  }
  report["lost"] = lost;
  report["order_violations"] = order;
  report["duplicates"] = dups;
  report["deleted_by_retention"] = deleted;
  for (const FaultRecord& f : soak.faults_) report["faults"].push_back(ToJson(f));
  for (const Sample& s : soak.samples_) report["samples"].push_back(ToJson(s));
  std::cout << "soak: " << report["written"] << " events, lost " << lost << ", order violations "
            << order << ", duplicates " << dups << std::endl;
  if (!opts.out_json.empty()) std::ofstream(opts.out_json) << report.dump(1) << "\n";
  if (!opts.report_dir.empty()) WriteReport(report, opts.report_dir);
  if (deleted > 0)
    std::cerr << "soak: the broker deleted " << deleted
              << " messages before the check read them: not judged" << std::endl;
  return lost == 0 && order == 0 && drained && deleted == 0 ? 0 : 1;
}

}  // namespace outbox::soak
