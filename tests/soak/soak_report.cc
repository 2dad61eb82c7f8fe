#include <algorithm>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <string>
#include <vector>

#include "soak/soak.h"

namespace outbox::soak {

namespace {

std::string Fixed(double v, int digits) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(digits) << v;
  return o.str();
}

// RSS `settle` seconds into [since, until) and the highest after that, in
// MiB: flat when within 5%; at < 0 when the window holds no sample.
struct RssWindow {
  double at = -1, peak = 0;
};
RssWindow Rss(const nlohmann::json& samples, double since, double until, double settle) {
  RssWindow w;
  for (const auto& s : samples) {
    const double t = s["t"].get<double>(), rss = s["rss_kb"].get<double>() / 1024;
    if (t < since + settle || t >= until) continue;
    if (w.at < 0) w.at = rss;
    w.peak = std::max(w.peak, rss);
  }
  return w;
}

// RSS 5 minutes into each relay process within 5% of its highest after
// that. Every kill -9 starts a new process, whose RSS starts lower and warms
// up again, so each process is judged on its own; one that lived less than
// 6 minutes has no minute to judge.
std::string RssVerdict(const nlohmann::json& r, bool* flat) {
  std::vector<double> starts = {0};
  for (const auto& f : r["faults"])
    if (f["fault"].get<std::string>().rfind("kill -9", 0) == 0)
      starts.push_back(f["end_s"].get<double>());
  const double end = r["samples"].empty() ? 0 : r["samples"].back()["t"].get<double>() + 1;
  *flat = true;
  int judged = 0;
  double longest = 0;
  std::string worst;
  double worst_ratio = 0;
  for (size_t i = 0; i < starts.size(); ++i) {
    const double until = i + 1 < starts.size() ? starts[i + 1] : end;
    if (until - starts[i] < 360) continue;
    const RssWindow w = Rss(r["samples"], starts[i], until, 300);
    if (w.at <= 0) continue;
    ++judged;
    longest = std::max(longest, until - starts[i]);
    const double ratio = w.peak / w.at;
    if (ratio > 1.05) *flat = false;
    if (ratio >= worst_ratio) {
      worst_ratio = ratio;
      worst = "the process started at minute " + Fixed(starts[i] / 60, 1) + ": " + Fixed(w.at, 1) +
              " MiB at its minute 5, highest after it " + Fixed(w.peak, 1) + " MiB";
    }
  }
  if (judged == 0) return "no relay process lived 6 minutes: RSS not judged";
  return "RSS of " + std::to_string(judged) + " relay process(es) that lived 6 minutes or more " +
         "(the longest " + Fixed(longest / 60, 0) +
         " minutes): " + (*flat ? "each within" : "MORE than") +
         " 5% of its value at its minute 5 (the most: " + worst + ")";
}

// Whether FDs, threads and connections are back to their level before the
// fault (the last sample before it) in a sample within 60 s of the
// recovery: "yes", or what was still above it. After a kill -9 the level is
// a new process's, so "before" is its first steady sample instead.
std::string ResourcesBack(const nlohmann::json& samples, const nlohmann::json& f) {
  const double start = f["start_s"].get<double>(), end = f["end_s"].get<double>();
  const double from = end + std::max(0.0, f["recovered_s"].get<double>());
  const bool restarted = f["fault"].get<std::string>().rfind("kill -9", 0) == 0;
  const nlohmann::json* base = nullptr;
  for (const auto& s : samples) {
    const double t = s["t"].get<double>();
    if (!restarted && t < start) base = &s;
    if (restarted && !base && t >= end + 20) base = &s;
  }
  if (!base) return "no sample";
  std::string worst;
  for (const auto& s : samples) {
    const double t = s["t"].get<double>();
    if (t < from || t > from + 60) continue;
    std::string over;
    for (const char* k : {"fds", "threads", "db_connections"})
      if (s[k].get<int64_t>() > (*base)[k].get<int64_t>())
        over += std::string(over.empty() ? "" : ", ") + k + " " + s[k].dump() + " > " +
                (*base)[k].dump();
    if (over.empty()) return "yes";
    worst = over;
  }
  return worst.empty() ? "no sample" : "no: " + worst;
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
  const std::string rss = RssVerdict(r, &flat);
  std::ofstream md(dir + "/soak.md");
  const double every = r.contains("fault_every_s") ? r["fault_every_s"].get<double>() : 60;
  const std::string replay = "scripts/soak --minutes " + Fixed(r["minutes"].get<double>(), 0) +
                             " --fault-every " + Fixed(every, 0) + " --rate " +
                             Fixed(r["rate_per_service"].get<double>(), 0) + " --seed " +
                             r["seed"].dump();
  md << "Seed " << r["seed"] << " (`" << replay << "` replays the same faults), "
     << Fixed(r["minutes"].get<double>(), 0) << " minutes, "
     << Fixed(r["rate_per_service"].get<double>(), 0)
     << " events/s per service, two services (`wakeup: poll` and "
     << "`wakeup: binlog`, both `per_aggregate`) in one relay process.\n\n"
     << "- events written: " << r["written"] << "; lost: **" << r["lost"]
     << "**; order violations: **" << r["order_violations"] << "**; duplicates: " << r["duplicates"]
     << "; backlog drained at the end: " << (r["drained"] ? "yes" : "NO") << "\n- " << rss << "\n"
     << (r.value("deleted_by_retention", int64_t{0}) > 0
             ? "- **not judged**: the mock broker deleted " + r["deleted_by_retention"].dump() +
                   " messages before the check read them (the lost count includes them)\n"
             : std::string())
     << "\n"
     << "| # | fault | at (min) | lasted (s) | recovery (s) | duplicates | FDs, threads, "
        "connections back to baseline |\n|---|---|---|---|---|---|---|\n";
  n = 0;
  for (const auto& f : r["faults"]) {
    const double rec = f["recovered_s"].get<double>();
    md << "| " << ++n << " | " << f["fault"].get<std::string>() << " | "
       << Fixed(f["start_s"].get<double>() / 60, 1) << " | "
       << Fixed(f["end_s"].get<double>() - f["start_s"].get<double>(), 0) << " | "
       << (rec < 0 ? std::string("not within 300 s") : Fixed(rec, 1)) << " | " << f["duplicates"]
       << " | " << ResourcesBack(r["samples"], f) << " |\n";
  }
}

}  // namespace outbox::soak
