// The report's part for the wakeup and services stages (report.h): the
// wake-up latency targets, the side-by-side tables and wakeup.dat for bench/plots.gp.
#include <algorithm>
#include <set>
#include <sstream>

#include "report.h"
#include "util.h"

namespace outbox {
namespace bench {

namespace {

// "1.0 / 2.0" with a dash for a side that was not measured.
std::string Pair(const char* fmt, bool has_a, double a, bool has_b, double b) {
  return (has_a ? Fmt(fmt, a) : std::string("-")) + " / " +
         (has_b ? Fmt(fmt, b) : std::string("-"));
}

}  // namespace

const WakeupRun* Report::FindWakeup(const std::string& mode, double rate) const {
  for (const WakeupRun& w : r_.wakeup)
    if (w.mode == mode && w.target_rate == rate) return &w;
  return nullptr;
}

const ServicesRun* Report::FindServices(const std::string& mode) const {
  for (const ServicesRun& s : r_.services)
    if (s.mode == mode) return &s;
  return nullptr;
}

const Idle* Report::FindWakeupIdle(const std::string& mode) const {
  for (const Idle& i : r_.wakeup_idle)
    if (i.mode == mode) return &i;
  return nullptr;
}

void Report::WakeupTargets(std::vector<Target>* t) const {
  if (r_.wakeup.empty()) return;
  double p50 = 0, p99 = 0;
  std::string p50s, p99s, own_p99s, rates;
  bool low = false;
  for (const WakeupRun& w : r_.wakeup) {
    if (w.mode != "binlog" || w.target_rate > 100) continue;
    low = true;
    p50 = std::max(p50, w.run.p50_ms);
    p99 = std::max(p99, w.run.p99_ms);
    const char* sep = rates.empty() ? "" : " / ";
    p50s += sep + Fmt("%.1f", w.run.p50_ms);
    p99s += sep + Fmt("%.1f", w.run.p99_ms);
    own_p99s += sep + Fmt("%.1f", w.run.commit_create_p99_ms);
    rates += sep + Thousands(w.target_rate);
  }
  const std::string at = " ms at " + rates + " events/s";
  t->push_back({"wakeup binlog: p50 insert -> broker, 1-100 events/s", low ? p50s + at : "-",
                "<= 10 ms at each rate", PassMiss(low, p50 <= 10),
                "upper bound (insert -> consumer), one service, slices pooled"});
  // The relay's own share beside it: a miss may be the writer's commit.
  t->push_back(
      {"wakeup binlog: p99 insert -> broker, 1-100 events/s",
       low ? p99s + at + " (the relay's share, commit -> CreateTime: " + own_p99s + ")" : "-",
       "<= 25 ms at each rate", PassMiss(low, p99 <= 25), ""});
  const WakeupRun* bp = FindWakeup("binlog", 1000);
  const WakeupRun* pp = FindWakeup("poll", 1000);
  const bool both = bp && pp;
  t->push_back(
      {"wakeup binlog vs poll at 1,000 events/s, p50 / p99",
       both ? Fmt("%.1f / %.1f vs %.1f / %.1f ms", bp->run.p50_ms, bp->run.p99_ms, pp->run.p50_ms,
                  pp->run.p99_ms)
            : "-",
       "no worse than poll",
       PassMiss(both, both && bp->run.p99_ms <= pp->run.p99_ms && bp->run.p50_ms <= pp->run.p50_ms),
       ""});
  const std::string w = WorkloadName(s_.main_aggregates, s_.events_per_aggregate);
  const double db = MedianRate("wakeup", w, "binlog", 1, s_.default_batch);
  const double dp = MedianRate("wakeup", w, "poll", 1, s_.default_batch);
  t->push_back({Fmt("drain, wakeup binlog vs poll (medians of %d)", o_.runs),
                Thousands(db) + " vs " + Thousands(dp) + " events/s = " + Pct(dp > 0 ? db / dp : 0),
                ">= 95% of poll", PassMiss(db > 0 && dp > 0, db >= 0.95 * dp), ""});
  for (const char* mode : {"binlog", "poll"}) {
    const Idle* i = FindWakeupIdle(mode);
    if (!i) continue;
    const bool binlog = std::string(mode) == "binlog";
    t->push_back({std::string("idle statements/s, 1 service, wakeup ") + mode,
                  Fmt("%.2f", i->statements_per_s), binlog ? "<= 3" : "(reference)",
                  binlog ? PassMiss(true, i->statements_per_s <= 3) : "-",
                  "gauges included (default gauge_interval_ms)"});
  }
}

void Report::ServicesTargets(std::vector<Target>* t) const {
  const ServicesRun* b = FindServices("binlog");
  const ServicesRun* p = FindServices("poll");
  if (!b && !p) return;
  const int n = b ? b->services : p->services;
  const std::string name = Fmt("%d services, one relay", n);
  t->push_back(
      {name + ", wakeup binlog: p99 at " + Fmt("%.0f", s_.services_rate) + " event/s per service",
       b ? Fmt("%.1f ms (poll: %s)", b->load.p99_ms,
               p ? Fmt("%.1f ms", p->load.p99_ms).c_str() : "-")
         : "-",
       "<= 50 ms", PassMiss(b != nullptr, b && b->load.p99_ms <= 50), ""});
  t->push_back({name + ", wakeup binlog: idle statements/s in total",
                b ? Fmt("%.0f (poll: %s)", b->idle.statements_per_s,
                        p ? Fmt("%.0f", p->idle.statements_per_s).c_str() : "-")
                  : "-",
                "<= 300", PassMiss(b != nullptr, b && b->idle.statements_per_s <= 300), ""});
  t->push_back({name + ", wakeup binlog: replication connections",
                b ? std::to_string(b->replication_connections) : "-", "1 per server",
                PassMiss(b != nullptr, b && b->replication_connections == 1), ""});
  t->push_back({name + ": relay threads / connections when idle, binlog; poll",
                Pair("%.0f", b != nullptr, b ? static_cast<double>(b->threads_idle) : 0,
                     b != nullptr, b ? static_cast<double>(b->connections_idle) : 0) +
                    "; " +
                    Pair("%.0f", p != nullptr, p ? static_cast<double>(p->threads_idle) : 0,
                         p != nullptr, p ? static_cast<double>(p->connections_idle) : 0),
                "(reported)", "-", ""});
}

std::string Report::WakeupTable() const {
  if (r_.wakeup.empty()) return "Not measured in this run.\n";
  std::set<double> rates;
  for (const WakeupRun& w : r_.wakeup) rates.insert(w.target_rate);
  std::ostringstream s;
  s << "| offered events/s | achieved, poll / binlog | samples | p50 ms, poll / binlog | p99 ms, "
       "poll / binlog | max ms, poll / binlog | writers' INSERT ms: p50, poll / binlog; p99 | "
       "commit -> relay's produce ms: p50, poll / binlog; p99 | "
       "relay statements/s, poll / binlog | relay CPU %, poll / binlog |\n"
       "|---|---|---|---|---|---|---|---|---|---|\n";
  for (double rate : rates) {
    const WakeupRun* p = FindWakeup("poll", rate);
    const WakeupRun* b = FindWakeup("binlog", rate);
    auto pair = [&](const char* fmt, double LatencyRun::*f) {
      return Pair(fmt, p != nullptr, p ? p->run.*f : 0, b != nullptr, b ? b->run.*f : 0);
    };
    const double ps = p ? static_cast<double>(p->run.measured) : 0;
    const double bs = b ? static_cast<double>(b->run.measured) : 0;
    s << "| " << Thousands(rate) << " | " << pair("%.1f", &LatencyRun::offered_rate) << " | "
      << Pair("%.0f", p != nullptr, ps, b != nullptr, bs)
      << (std::max(ps, bs) < 100 ? " (p99 = max)" : "") << " | "
      << pair("%.1f", &LatencyRun::p50_ms) << " | " << pair("%.1f", &LatencyRun::p99_ms) << " | "
      << pair("%.1f", &LatencyRun::max_ms) << " | " << pair("%.1f", &LatencyRun::insert_p50_ms)
      << "; " << pair("%.1f", &LatencyRun::insert_p99_ms) << " | "
      << pair("%.1f", &LatencyRun::commit_create_p50_ms) << "; "
      << pair("%.1f", &LatencyRun::commit_create_p99_ms) << " | "
      << pair("%.1f", &LatencyRun::relay_statements_per_s) << " | "
      << pair("%.1f", &LatencyRun::relay_cpu_pct) << " |\n";
  }
  return s.str() + "\n" + WakeupSlices() + WakeupExtraTable();
}

std::string Report::WakeupSlices() const {
  // Each slice's own p50: how far the disk drifted within a rate, for both
  // modes alike.
  std::string out;
  for (const WakeupRun& w : r_.wakeup) {
    if (w.slice_p50_ms.size() < 2) continue;
    std::string list;
    for (double v : w.slice_p50_ms) list += (list.empty() ? "" : ", ") + Fmt("%.1f", v);
    out += (out.empty() ? "" : "; ") + Thousands(w.target_rate) + "/s " + w.mode + " " + list;
  }
  return out.empty() ? "" : "p50 of each slice, ms: " + out + ".\n\n";
}

std::string Report::WakeupExtraTable() const {
  const Idle* ip = FindWakeupIdle("poll");
  const Idle* ib = FindWakeupIdle("binlog");
  const std::string w = WorkloadName(s_.main_aggregates, s_.events_per_aggregate);
  auto runs = [&](const char* mode) {
    std::string out;
    for (const Drain* d : Find("wakeup", w, mode, 1, s_.default_batch))
      out += (out.empty() ? "" : ", ") + Thousands(d->rate);
    return out.empty() ? std::string("-") : out;
  };
  const double dp = MedianRate("wakeup", w, "poll", 1, s_.default_batch);
  const double db = MedianRate("wakeup", w, "binlog", 1, s_.default_batch);
  std::ostringstream s;
  s << "| one service | wakeup: poll | wakeup: binlog | binlog / poll |\n|---|---|---|---|\n";
  s << "| idle statements/s | " << (ip ? Fmt("%.2f", ip->statements_per_s) : "-") << " | "
    << (ib ? Fmt("%.2f", ib->statements_per_s) : "-") << " | "
    << (ip && ib && ip->statements_per_s > 0 ? Pct(ib->statements_per_s / ip->statements_per_s)
                                             : "-")
    << " |\n";
  s << "| idle CPU | " << (ip ? Fmt("%.2f ms/s", ip->cpu_ms_per_s) : "-") << " | "
    << (ib ? Fmt("%.2f ms/s", ib->cpu_ms_per_s) : "-") << " | |\n";
  s << "| drain of " << Thousands(static_cast<double>(s_.main_aggregates) * s_.events_per_aggregate)
    << " events (" << w << ", batch " << s_.default_batch << "), median events/s | "
    << Thousands(dp) << " | " << Thousands(db) << " | " << (dp > 0 ? Pct(db / dp) : "-") << " |\n";
  s << "| drain runs (events/s) | " << runs("poll") << " | " << runs("binlog") << " | |\n";
  return s.str();
}

std::string Report::ServicesTable() const {
  if (r_.services.empty()) return "Not measured in this run.\n";
  const ServicesRun* p = FindServices("poll");
  const ServicesRun* b = FindServices("binlog");
  std::ostringstream s;
  auto row = [&](const std::string& what, auto get) {
    s << "| " << what << " | " << (p ? get(*p) : "-") << " | " << (b ? get(*b) : "-") << " |\n";
  };
  s << "| one relay process | wakeup: poll | wakeup: binlog |\n|---|---|---|\n";
  row("services (one database and t_outbox each)",
      [](const ServicesRun& r) { return std::to_string(r.services); });
  row("start -> ready", [](const ServicesRun& r) { return Fmt("%.1f s", r.startup_s); });
  row("threads (idle / under load)", [](const ServicesRun& r) {
    return Fmt("%lld / %lld", static_cast<long long>(r.threads_idle),
               static_cast<long long>(r.threads_load));
  });
  row("database connections (idle / under load)", [](const ServicesRun& r) {
    return Fmt("%lld / %lld", static_cast<long long>(r.connections_idle),
               static_cast<long long>(r.connections_load));
  });
  row("of which replication (Binlog Dump)",
      [](const ServicesRun& r) { return std::to_string(r.replication_connections); });
  row("idle statements/s in total (per service)", [](const ServicesRun& r) {
    return Fmt("%.1f (%.2f)", r.idle.statements_per_s, r.idle.per_service);
  });
  row("idle CPU, RSS", [](const ServicesRun& r) {
    return Fmt("%.1f ms/s, %.1f MiB", r.idle.cpu_ms_per_s, r.idle.rss_mib);
  });
  row("load: events/s in total (samples)", [](const ServicesRun& r) {
    return Fmt("%.1f (%lld)", r.load.offered_rate, static_cast<long long>(r.load.measured));
  });
  row("insert -> broker p50 / p99 / max", [](const ServicesRun& r) {
    return Fmt("%.1f / %.1f / %.1f ms", r.load.p50_ms, r.load.p99_ms, r.load.max_ms);
  });
  row("relay statements/s under load",
      [](const ServicesRun& r) { return Fmt("%.0f", r.load.relay_statements_per_s); });
  return s.str();
}

void Report::WriteWakeupData() const {
  // rate, then per mode (poll, binlog): p50 p99 max statements/s.
  std::set<double> rates;
  for (const WakeupRun& w : r_.wakeup) rates.insert(w.target_rate);
  std::ostringstream d;
  d << "# rate poll_p50 poll_p99 poll_max poll_stmts binlog_p50 binlog_p99 binlog_max "
       "binlog_stmts\n";
  for (double rate : rates) {
    d << Fmt("%.0f", rate);
    for (const char* mode : {"poll", "binlog"}) {
      const WakeupRun* w = FindWakeup(mode, rate);
      if (!w) {
        d << " NaN NaN NaN NaN";
        continue;
      }
      d << Fmt(" %.3f %.3f %.3f %.3f", w->run.p50_ms, w->run.p99_ms, w->run.max_ms,
               std::max(0.1, w->run.relay_statements_per_s));
    }
    d << "\n";
  }
  WriteFile(o_.out_dir + "/wakeup.dat", d.str());
}

}  // namespace bench
}  // namespace outbox
