#include <cmath>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "soak/soak.h"

namespace outbox::soak {

namespace {

std::string Fixed(double v, int digits) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(digits) << v;
  return o.str();
}

// RSS after minute 5 within 5% of its value then (a kill -9 starts a new,
// smaller process: only growth counts).
std::string RssVerdict(const nlohmann::json& samples, bool* flat) {
  double at5 = -1, peak = 0;
  for (const auto& s : samples) {
    const double t = s["t"].get<double>(), rss = s["rss_kb"].get<double>() / 1024;
    if (t >= 300 && at5 < 0) at5 = rss;
    if (t >= 300) peak = std::max(peak, rss);
  }
  if (at5 <= 0) {
    *flat = true;
    return "the run was shorter than 5 minutes: RSS not judged";
  }
  *flat = peak <= at5 * 1.05;
  return "RSS at minute 5 " + Fixed(at5, 1) + " MiB, highest after it " + Fixed(peak, 1) +
         " MiB (" + (*flat ? "within" : "MORE than") + " 5%)";
}

}  // namespace

void WriteReport(const nlohmann::json& r, const std::string& dir) {
  std::ofstream dat(dir + "/soak.dat");
  dat << "# t_min rss_mib fds threads db_connections backlog\n";
  for (const auto& s : r["samples"])
    dat << Fixed(s["t"].get<double>() / 60, 3) << " " << Fixed(s["rss_kb"].get<double>() / 1024, 1)
        << " " << s["fds"] << " " << s["threads"] << " " << s["db_connections"] << " "
        << s["backlog"] << "\n";
  std::ofstream faults(dir + "/faults.dat");
  faults << "# start_min end_min label\n";
  int n = 0;
  for (const auto& f : r["faults"])
    faults << Fixed(f["start_s"].get<double>() / 60, 3) << " "
           << Fixed(f["end_s"].get<double>() / 60, 3) << " " << ++n << "\n";

  bool flat = false;
  const std::string rss = RssVerdict(r["samples"], &flat);
  std::ofstream md(dir + "/soak.md");
  md << "Seed " << r["seed"] << " (`scripts/soak --minutes " << r["minutes"] << " --seed "
     << r["seed"] << "` replays the same faults), " << r["minutes"] << " minutes, "
     << r["rate_per_service"] << " events/s per service, two services (`wakeup: poll` and "
     << "`wakeup: binlog`, both `per_aggregate`) in one relay process.\n\n"
     << "- events written: " << r["written"] << "; lost: **" << r["lost"]
     << "**; order violations: **" << r["order_violations"] << "**; duplicates: " << r["duplicates"]
     << "; backlog drained at the end: " << (r["drained"] ? "yes" : "NO") << "\n- " << rss << "\n\n"
     << "| # | fault | at (min) | lasted (s) | recovery (s) | duplicates | FDs, threads, "
        "connections back to baseline |\n|---|---|---|---|---|---|---|\n";
  n = 0;
  for (const auto& f : r["faults"]) {
    const double rec = f["recovered_s"].get<double>();
    md << "| " << ++n << " | " << f["fault"].get<std::string>() << " | "
       << Fixed(f["start_s"].get<double>() / 60, 1) << " | "
       << Fixed(f["end_s"].get<double>() - f["start_s"].get<double>(), 0) << " | "
       << (rec < 0 ? std::string("not within 300 s") : Fixed(rec, 1)) << " | " << f["duplicates"]
       << " | " << (f["resources_back"] ? "yes" : "no") << " |\n";
  }
}

}  // namespace outbox::soak
