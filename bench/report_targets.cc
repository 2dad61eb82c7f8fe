// The report's targets table (report.h): each target of docs/BENCHMARKS.md
// with its value and PASS/MISS, stage by stage; the wakeup and services
// targets are in report_wakeup.cc.
#include <algorithm>
#include <sstream>

#include "report.h"
#include "util.h"

namespace outbox {
namespace bench {

std::vector<Report::Target> Report::Targets() const {
  std::vector<Target> t;
  DrainTargets(&t);
  LatencyTargets(&t);
  IdleTargets(&t);
  ScaleTargets(&t);
  WakeupTargets(&t);
  ServicesTargets(&t);
  FleetTargets(&t);
  FormatsTargets(&t);
  return t;
}

void Report::DrainTargets(std::vector<Target>* out) const {
  auto& t = *out;
  const int b = s_.default_batch;
  const std::string w = WorkloadName(s_.main_aggregates, s_.events_per_aggregate);
  const std::string cw = WorkloadName(s_.cost_aggregates, s_.events_per_aggregate);
  const double db = MedianRate("drain", w, "db", 0, b);
  const double none1 = MedianRate("drain", w, "none", 1, b);
  const double pa1 = MedianRate("drain", w, "per_aggregate", 1, b);
  const double none3 = MedianRate("drain", w, "none", 3, b);
  const double pa3 = MedianRate("drain", w, "per_aggregate", 3, b);
  const double cnone = MedianRate("drain", cw, "none", 1, b);
  const double cpa = MedianRate("drain", cw, "per_aggregate", 1, b);
  const std::string events =
      Thousands(static_cast<double>(s_.main_aggregates) * s_.events_per_aggregate);

  t.push_back(
      {"database limit: in-server drain, batch " + std::to_string(b) + ", " + events + " events",
       Thousands(db) + " events/s", "(reference)", db > 0 ? "-" : "n/a",
       "median of the stored procedure's runs"});
  t.push_back({"relay, ordering none, 1 relay",
               Thousands(none1) + " events/s = " + Pct(db > 0 ? none1 / db : 0) + " of the limit",
               ">= 90% of the limit", PassMiss(db > 0 && none1 > 0, none1 >= 0.9 * db),
               "median drain rate / median database limit"});
  t.push_back({"relay, per_aggregate, 1 relay",
               Thousands(pa1) + " events/s = " + Pct(none1 > 0 ? pa1 / none1 : 0) + " of none",
               ">= 80% of none", PassMiss(none1 > 0 && pa1 > 0, pa1 >= 0.8 * none1), ""});
  t.push_back(
      {"relay, none, 3 relays",
       Thousands(none3) + " events/s = " + Pct(none1 > 0 ? none3 / none1 : 0) + " of 1 relay",
       ">= 1 relay", PassMiss(none1 > 0 && none3 > 0, none3 >= none1), ""});
  t.push_back({"relay, per_aggregate, 3 relays",
               Thousands(pa3) + " events/s = " + Pct(pa1 > 0 ? pa3 / pa1 : 0) + " of 1 relay",
               ">= 1 relay", PassMiss(pa1 > 0 && pa3 > 0, pa3 >= pa1), ""});
  t.push_back({"per_aggregate / none on " + Thousands(static_cast<double>(s_.cost_aggregates)) +
                   " aggregates x " + std::to_string(s_.events_per_aggregate) + " (ordering cost)",
               Thousands(cpa) + " / " + Thousands(cnone) +
                   " events/s = " + Pct(cnone > 0 ? cpa / cnone : 0),
               ">= 80%", PassMiss(cnone > 0 && cpa > 0, cpa >= 0.8 * cnone), ""});
}

void Report::LatencyTargets(std::vector<Target>* out) const {
  auto& t = *out;
  std::vector<double> p50, p99;
  double mx = 0;
  for (const auto& l : r_.latency) {
    p50.push_back(l.p50_ms);
    p99.push_back(l.p99_ms);
    mx = std::max(mx, l.max_ms);
  }
  const bool lat = !r_.latency.empty();
  const std::string rate = Thousands(s_.latency_rate) + " events/s";
  t.push_back({"latency insert -> broker, p50, at " + rate, lat ? Fmt("%.1f ms", Median(p50)) : "-",
               "<= 20 ms", PassMiss(lat, Median(p50) <= 20),
               "upper bound: insert -> received by a consumer (median of runs)"});
  t.push_back({"latency insert -> broker, p99, at " + rate, lat ? Fmt("%.1f ms", Median(p99)) : "-",
               "<= 100 ms", PassMiss(lat, Median(p99) <= 100), ""});
  t.push_back({"latency insert -> broker, max", lat ? Fmt("%.1f ms", mx) : "-", "(reported)",
               lat ? "-" : "n/a", ""});
}

void Report::IdleTargets(std::vector<Target>* out) const {
  auto& t = *out;
  for (const Idle& i : r_.idle) {
    t.push_back({"idle statements/s per service, " + i.label, Fmt("%.2f", i.per_service), "<= 15",
                 PassMiss(true, i.per_service <= 15), "Questions delta minus our probes"});
  }
  for (const Idle& i : r_.idle) {
    double per = i.cpu_ms_per_s / std::max(1, i.services);
    t.push_back({"idle CPU per service, " + i.label,
                 Fmt("%.2f ms/s (%.2f%% of a core)", per, per / 10), "near zero: <= 10 ms/s",
                 PassMiss(true, per <= 10), ""});
  }
  for (const Idle& i : r_.idle) {
    if (i.services != 10) continue;
    t.push_back({"RSS with 10 idle services", Fmt("%.1f MiB (VmHWM)", i.hwm_mib), "<= 64 MiB",
                 PassMiss(true, i.hwm_mib <= 64), ""});
  }
}

void Report::ScaleTargets(std::vector<Target>* out) const {
  auto& t = *out;
  const int b = s_.default_batch;
  const std::string w = WorkloadName(s_.main_aggregates, s_.events_per_aggregate);
  for (const char* mode : {"per_aggregate", "none"}) {
    double empty = MedianRate("scale", w, mode, 1, b, "empty");
    double big = MedianRate("scale", w, mode, 1, b, std::to_string(s_.sent_rows) + " SENT");
    bool m = empty > 0 && big > 0;
    t.push_back(
        {"drain cost of " + Thousands(static_cast<double>(s_.sent_rows)) + " SENT rows, " + mode,
         m ? Fmt("%s vs %s events/s on an empty table: cost %.1f%%", Thousands(big).c_str(),
                 Thousands(empty).c_str(), 100 * (1 - big / empty))
           : "-",
         "<= 10%", PassMiss(m, m && big >= 0.9 * empty), ""});
  }
  std::vector<double> base_rss;
  for (const Drain* d : Find("drain", w, "per_aggregate", 1, b))
    base_rss.push_back(d->relay_peak_rss_mib);
  double backlog_rss = 0;
  int64_t backlog_events = 0;
  for (const Drain& d : r_.drains)
    if (d.stage == "backlog") {
      backlog_rss = d.relay_peak_rss_mib;
      backlog_events = d.events;
    }
  if (backlog_rss > 0 && !base_rss.empty()) {
    double base = Median(base_rss);
    t.push_back({"RSS draining " + Thousands(static_cast<double>(backlog_events)) + " vs " +
                     Thousands(static_cast<double>(s_.main_aggregates) * s_.events_per_aggregate) +
                     " events",
                 Fmt("%.1f vs %.1f MiB peak", backlog_rss, base), "bounded: <= 1.15x",
                 PassMiss(true, backlog_rss <= 1.15 * base), ""});
  }
}

std::string Report::TargetTable(const std::vector<Target>& targets) {
  std::ostringstream s;
  s << "| measurement | value | target | result |\n|---|---|---|---|\n";
  for (const Target& t : targets)
    s << "| " << t.what << " | " << t.value << " | " << t.target << " | " << t.result << " |\n";
  return s.str();
}

std::string Report::Table() const { return TargetTable(Targets()); }

}  // namespace bench
}  // namespace outbox
