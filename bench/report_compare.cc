// The report's comparison of two builds (report.h, --compare-relay): per
// rate and wake-up mode this build's median p50 and p99 against the other
// build's range over the same alternating runs, per drain configuration the
// two median rates, and a verdict for each row.
#include <algorithm>
#include <set>
#include <sstream>
#include <tuple>

#include "report.h"
#include "util.h"

namespace outbox {
namespace bench {

namespace {

// A drain at least this share of the other build's median rate passes.
constexpr double kDrainShare = 0.95;

double Max(const std::vector<double>& v) {
  return v.empty() ? 0 : *std::max_element(v.begin(), v.end());
}

// "7.5-9.0" (or "7.5" for a single run).
template <typename Format>
std::string Range(const std::vector<double>& v, Format format) {
  if (v.empty()) return "-";
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return *lo == *hi ? format(*lo) : format(*lo) + "-" + format(*hi);
}

std::string Ms(double v) { return Fmt("%.1f", v); }

std::string DrainName(const Drain& d) {
  const bool wakeup = d.stage == "wakeup";
  return "drain of " + Thousands(static_cast<double>(d.events)) + " events (" + d.workload + "), " +
         (wakeup ? "wakeup " + d.mode + ", default ordering, 1 relay"
                 : "ordering " + d.mode + ", " + std::to_string(d.relays) +
                       (d.relays == 1 ? " relay" : " relays")) +
         Fmt(", batch %d", d.batch) + (d.table_state == "empty" ? "" : ", " + d.table_state);
}

}  // namespace

void Report::AddLatencyComparisons(std::vector<CompareRow>* rows) const {
  std::set<double> rates;
  for (const WakeupRun& w : r_.wakeup) rates.insert(w.target_rate);
  for (double rate : rates) {
    for (const std::string mode : {"poll", "binlog"}) {
      const WakeupRun* now = FindWakeup(mode, rate);
      const WakeupRun* old = FindWakeup(mode + kOldSuffix, rate);
      if (now == nullptr || old == nullptr) continue;
      const double p50 = Median(now->slice_p50_ms), p99 = Median(now->slice_p99_ms);
      // Inside the other build's range, or better (below it).
      const bool ok = p50 <= Max(old->slice_p50_ms) && p99 <= Max(old->slice_p99_ms);
      rows->push_back(
          {Thousands(rate) + " events/s, wakeup " + mode + ": insert -> broker p50 / p99, ms",
           Fmt("%.1f / %.1f", p50, p99),
           Range(old->slice_p50_ms, Ms) + " / " + Range(old->slice_p99_ms, Ms),
           PassMiss(!old->slice_p50_ms.empty(), ok)});
    }
  }
}

void Report::AddDrainComparisons(std::vector<CompareRow>* rows) const {
  std::vector<std::tuple<std::string, std::string, std::string, int, int, std::string>> keys;
  for (const Drain& d : r_.drains) {
    if (d.stage != "drain" && d.stage != "wakeup") continue;
    auto k = std::make_tuple(d.stage, d.workload, d.mode, d.relays, d.batch, d.table_state);
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
  }
  for (const auto& [stage, workload, mode, relays, batch, state] : keys) {
    const auto old = Find(stage + kOldSuffix, workload, mode, relays, batch, state);
    if (old.empty()) continue;
    const auto now = Find(stage, workload, mode, relays, batch, state);
    std::vector<double> old_rates;
    for (const Drain* d : old) old_rates.push_back(d->rate);
    const double n = MedianRate(stage, workload, mode, relays, batch, state);
    const double o = Median(old_rates);
    rows->push_back({DrainName(*now.front()) + ": events/s",
                     Thousands(n) + " = " + Pct(o > 0 ? n / o : 0) + " of the other's median",
                     Thousands(o) + " median (" + Range(old_rates, Thousands) + ")",
                     PassMiss(o > 0, n >= kDrainShare * o)});
  }
}

std::vector<Report::CompareRow> Report::CompareRows() const {
  std::vector<CompareRow> rows;
  AddLatencyComparisons(&rows);
  AddDrainComparisons(&rows);
  return rows;
}

std::string Report::CompareTable() const {
  if (o_.compare_relay_bin.empty())
    return "Not part of this run: `outbox-bench --compare-relay OTHER/outbox-relay` writes this "
           "part (above).\n";
  const auto& m = r_.machine;
  auto get = [&](const char* k) {
    auto it = m.find(k);
    return it == m.end() ? std::string("?") : it->second;
  };
  std::ostringstream s;
  const std::string command = get("command");
  s << "Run of " << RunDate() << (command.empty() ? std::string() : ": `" + command + "`") << ", "
    << o_.runs << (o_.runs == 1 ? " run" : " runs")
    << " per build, load average (1/5/15 min) before, after: " << LoadAverages(r_.load_before)
    << "; " << LoadAverages(r_.load_after) << ". This build: " << get("relay")
    << "; the other: " << get("compare_relay") << ".\n\n";
  s << "| what | this build: median of the runs | the other build: range of the runs | "
       "verdict |\n|---|---|---|---|\n";
  const std::vector<CompareRow> rows = CompareRows();
  int pass = 0;
  for (const CompareRow& r : rows) {
    s << "| " << r.what << " | " << r.now << " | " << r.before << " | " << r.verdict << " |\n";
    pass += r.verdict == "PASS" ? 1 : 0;
  }
  s << "\n"
    << (rows.empty() ? std::string("Nothing to compare: run the wakeup or drain stage.")
                     : Fmt("%d of %zu rows PASS.", pass, rows.size()))
    << "\n";
  return s.str();
}

}  // namespace bench
}  // namespace outbox
