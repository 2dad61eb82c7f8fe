// The fleet stage's targets and table (report.h).
#include <algorithm>
#include <numeric>
#include <sstream>

#include "report.h"
#include "util.h"

namespace outbox {
namespace bench {
namespace {

// "a / b / c" of per-relay figures.
template <typename T>
std::string PerRelay(const std::vector<T>& v, const char* fmt) {
  std::string out;
  for (const T& x : v) out += (out.empty() ? "" : " / ") + Fmt(fmt, static_cast<double>(x));
  return out.empty() ? "-" : out;
}

double Max(const std::vector<double>& v) {
  return v.empty() ? 0 : *std::max_element(v.begin(), v.end());
}

}  // namespace

std::string Report::RunLine() const {
  auto it = r_.machine.find("command");
  return "Run of " + RunDate() +
         (it == r_.machine.end() || it->second.empty() ? std::string() : ": `" + it->second + "`") +
         ", load average (1/5/15 min) before, after: " + LoadAverages(r_.load_before) + "; " +
         LoadAverages(r_.load_after) + ".";
}

const FleetRun* Report::FindFleet(const std::string& mode) const {
  for (const FleetRun& f : r_.fleet)
    if (f.mode == mode) return &f;
  return nullptr;
}

void Report::FleetTargets(std::vector<Target>* t) const {
  const FleetRun* f = FindFleet("fleet");
  const FleetRun* a = FindFleet("every relay");
  if (!f || !a) return;
  const std::string name = Fmt("%d relays over %d databases", f->relays, f->services);
  const double conn =
      a->connections > 0 ? static_cast<double>(f->connections) / static_cast<double>(a->connections)
                         : 0;
  t->push_back({name + ", fleet vs every relay serving all: connections",
                Fmt("%lld vs %lld (%s)", static_cast<long long>(f->connections),
                    static_cast<long long>(a->connections), Pct(conn).c_str()),
                "<= 40%", PassMiss(a->connections > 0, conn <= 0.4), ""});
  const double st =
      a->idle.statements_per_s > 0 ? f->idle.statements_per_s / a->idle.statements_per_s : 0;
  t->push_back({name + ", fleet vs every relay serving all: idle statements/s",
                Fmt("%.0f vs %.0f (%s)", f->idle.statements_per_s, a->idle.statements_per_s,
                    Pct(st).c_str()),
                "<= 40%", PassMiss(a->idle.statements_per_s > 0, st <= 0.4), ""});
  const double bound = 2.0 * s_.fleet_session_timeout_ms / 1000 + 2;
  const double p50 = Median(f->takeover_s);
  t->push_back({name + ", kill -9 of a member -> its services publish again, p50 / max (mock)",
                f->takeover_s.empty() ? "-" : Fmt("%.1f / %.1f s", p50, Max(f->takeover_s)),
                Fmt("p50 <= %.0f s", bound), PassMiss(!f->takeover_s.empty(), p50 <= bound), ""});
}

std::string Report::FleetTable() const {
  if (r_.fleet.empty()) return "Not measured in this run.\n";
  const FleetRun* a = FindFleet("every relay");
  const FleetRun* f = FindFleet("fleet");
  std::ostringstream s;
  auto row = [&](const std::string& what, auto get) {
    s << "| " << what << " | " << (a ? get(*a) : "-") << " | " << (f ? get(*f) : "-") << " |\n";
  };
  s << RunLine()
    << "\n\n| | every relay serves every database | `fleet:` (one owner per database) |\n"
       "|---|---|---|\n";
  row("relays x databases", [](const FleetRun& r) { return Fmt("%d x %d", r.relays, r.services); });
  row("shards (partitions of the fleet topic)",
      [](const FleetRun& r) { return r.shards ? std::to_string(r.shards) : std::string("-"); });
  row("start -> ready (fleet: every database owned once)",
      [](const FleetRun& r) { return Fmt("%.1f s", r.startup_s); });
  row("database connections, idle, all relays",
      [](const FleetRun& r) { return std::to_string(static_cast<long long>(r.connections)); });
  row("idle statements/s, all relays",
      [](const FleetRun& r) { return Fmt("%.0f", r.idle.statements_per_s); });
  row("databases served, per relay", [](const FleetRun& r) { return PerRelay(r.owned, "%.0f"); });
  row("threads, per relay", [](const FleetRun& r) { return PerRelay(r.threads, "%.0f"); });
  row("RSS, per relay (MiB)", [](const FleetRun& r) { return PerRelay(r.rss_mib, "%.1f"); });
  row("idle statements/s per service a relay runs", [](const FleetRun& r) {
    // Without a fleet every relay runs every service; with one, one relay.
    const int runs = r.shards > 0 ? r.services : r.relays * r.services;
    return Fmt("%.1f", r.idle.statements_per_s / runs);
  });
  row("idle CPU: all relays; the database server", [](const FleetRun& r) {
    return Fmt("%.0f; %s ms/s", r.idle.cpu_ms_per_s,
               r.db_cpu_ms_per_s > 0 ? Fmt("%.0f", r.db_cpu_ms_per_s).c_str() : "-");
  });
  FleetKillRows(row);
  // The stage's targets here too: a fleet-only run writes only this part.
  std::vector<Target> targets;
  FleetTargets(&targets);
  s << "\n" << TargetTable(targets);
  return s.str();
}

template <typename Row>
void Report::FleetKillRows(Row& row) const {
  row("kills (kill -9 of one member, restarted after)", [](const FleetRun& r) {
    return r.moved.empty() ? std::string("-") : std::to_string(r.moved.size());
  });
  row("databases moved per kill", [](const FleetRun& r) { return PerRelay(r.moved, "%.0f"); });
  row("kill -> a new event of each moved database published: p50 / max (samples)",
      [](const FleetRun& r) {
        return r.takeover_s.empty() ? std::string("-")
                                    : Fmt("%.1f / %.1f s (%zu)", Median(r.takeover_s),
                                          Max(r.takeover_s), r.takeover_s.size());
      });
  row("restart -> every database owned once again, per kill",
      [](const FleetRun& r) { return PerRelay(r.rejoin_s, "%.1f s"); });
}

}  // namespace bench
}  // namespace outbox
