// The report's part for the dbcost stage (report.h): the relay's statements
// and write commits per event at everyday rates, beside the latency of the
// same run, with its targets.
#include <algorithm>
#include <sstream>
#include <tuple>
#include <vector>

#include "report.h"
#include "util.h"

namespace outbox {
namespace bench {

namespace {

double Get(const DbCostRun& c, const std::string& k) {
  auto it = c.per_event.find(k);
  return it == c.per_event.end() ? 0 : it->second;
}

// The targets: at most 3 statements and 1.2 write commits per event at 10 and
// 100 events/s (poll at 10 events/s: the commits only); p99 at most 25 ms at
// 10 and 1,000 events/s with wakeup: binlog.
std::string Verdict(const DbCostRun& c) {
  std::string v;
  auto add = [&v](const std::string& what, bool ok) {
    v += (v.empty() ? "" : ", ") + what + (ok ? " PASS" : " MISS");
  };
  const bool everyday = c.target_rate <= 100;
  if (everyday && !(c.wakeup == "poll" && c.target_rate < 100))
    add("statements", Get(c, "Questions") <= 3);
  if (everyday) add("commits", Get(c, "Binlog_commits") <= 1.2);
  if (c.wakeup == "binlog" && (c.target_rate == 10 || c.target_rate == 1000))
    add("p99", c.run.p99_ms <= 25);
  return v.empty() ? "-" : v;
}

}  // namespace

std::string Report::DbCostTable() const {
  if (r_.dbcost.empty()) return "Not measured in this run.\n";
  std::ostringstream s;
  s << RunLine() << "\n\n"
    << "| build | wakeup | ordering | events/s offered (achieved) | statements/event | write "
       "commits/event | SELECT | UPDATE | BEGIN | COMMIT | other | p50 / p99 ms | targets |\n"
       "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  // Each configuration and rate with both builds side by side.
  std::vector<const DbCostRun*> rows;
  for (const DbCostRun& c : r_.dbcost) rows.push_back(&c);
  std::stable_sort(rows.begin(), rows.end(), [](const DbCostRun* a, const DbCostRun* b) {
    return std::tie(a->wakeup, a->ordering, a->target_rate) <
           std::tie(b->wakeup, b->ordering, b->target_rate);
  });
  for (const DbCostRun* row : rows) {
    const DbCostRun& c = *row;
    const double q = Get(c, "Questions");
    const double other = q - Get(c, "Com_select") - Get(c, "Com_update") - Get(c, "Com_begin") -
                         Get(c, "Com_commit");
    s << "| " << (c.build == "this" ? "this" : "other") << " | " << c.wakeup << " | " << c.ordering
      << " | " << Thousands(c.target_rate) << " (" << Fmt("%.1f", c.run.offered_rate) << ") | "
      << Fmt("%.2f", q) << " | " << Fmt("%.2f", Get(c, "Binlog_commits")) << " | "
      << Fmt("%.2f", Get(c, "Com_select")) << " | " << Fmt("%.2f", Get(c, "Com_update")) << " | "
      << Fmt("%.2f", Get(c, "Com_begin")) << " | " << Fmt("%.2f", Get(c, "Com_commit")) << " | "
      << Fmt("%.2f", other) << " | " << Fmt("%.1f / %.1f", c.run.p50_ms, c.run.p99_ms) << " | "
      << Verdict(c) << " |\n";
  }
  return s.str();
}

}  // namespace bench
}  // namespace outbox
