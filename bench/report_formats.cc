// The report's part for the formats stage (report.h): drain rate and relay
// CPU per event with value_format bytes, json_schema and avro, and each
// schema format's rate against bytes' with its goal.
#include <sstream>

#include "report.h"
#include "util.h"

namespace outbox {
namespace bench {

namespace {

// A schema format keeps at least this share of bytes' drain rate (issue #47).
constexpr double kFormatGoal = 0.8;

const char* const kFormats[] = {"bytes", "json_schema", "avro"};

}  // namespace

std::vector<const Drain*> Report::FormatDrains(const std::string& format) const {
  std::vector<const Drain*> out;
  for (const Drain& d : r_.drains)
    if (d.stage == "formats" && d.mode == format) out.push_back(&d);
  return out;
}

double Report::FormatRate(const std::string& format) const {
  std::vector<double> v;
  for (const Drain* d : FormatDrains(format)) v.push_back(d->rate);
  return Median(v);
}

void Report::FormatsTargets(std::vector<Target>* t) const {
  const double bytes = FormatRate("bytes");
  for (const char* format : {"json_schema", "avro"}) {
    const double rate = FormatRate(format);
    if (bytes <= 0 || rate <= 0) continue;
    t->push_back({std::string("drain, value_format ") + format + " vs bytes (OrderPaid, medians)",
                  Thousands(rate) + " vs " + Thousands(bytes) + " events/s = " + Pct(rate / bytes),
                  ">= 80% of bytes", PassMiss(true, rate >= kFormatGoal * bytes),
                  "median drain rate / median drain rate of bytes, same run"});
  }
}

std::string Report::FormatsTable() const {
  const double bytes = FormatRate("bytes");
  if (bytes <= 0) return "Not measured in this run.\n";
  std::ostringstream s;
  s << RunLine()
    << Fmt(" %d %s per format, %s events each.", o_.runs, o_.runs == 1 ? "run" : "runs",
           Thousands(static_cast<double>(FormatDrains("bytes").front()->events)).c_str())
    << "\n\n"
    << "| value_format | median events/s | runs (events/s) | of bytes | goal | relay CPU "
       "per event (median) | registry requests per drain |\n"
       "|---|---|---|---|---|---|---|\n";
  for (const char* format : kFormats) {
    std::vector<double> cpu;
    std::string runs, requests;
    for (const Drain* d : FormatDrains(format)) {
      runs += (runs.empty() ? "" : ", ") + Thousands(d->rate);
      cpu.push_back(d->relay_cpu_s * 1e6 / static_cast<double>(d->events));
      requests +=
          (requests.empty() ? "" : ", ") +
          (d->registry_requests < 0 ? std::string("?") : std::to_string(d->registry_requests));
    }
    const double rate = FormatRate(format);
    const bool is_bytes = std::string(format) == "bytes";
    s << "| " << format << " | " << Thousands(rate) << " | " << runs << " | "
      << (is_bytes ? std::string("-") : Pct(rate / bytes)) << " | "
      << (is_bytes ? std::string("(reference)")
                   : std::string(">= 80%: ") + PassMiss(true, rate >= kFormatGoal * bytes))
      << " | " << Fmt("%.1f µs", Median(cpu)) << " | " << requests << " |\n";
  }
  s << "\nEach run side by side (events/s, in the order drained; avro and json_schema as a "
       "share of the same run's bytes):\n\n"
       "| run | drains | json_schema / bytes | avro / bytes |\n|---|---|---|---|\n";
  for (int rep = 1; rep <= o_.runs; ++rep) {
    std::string order;
    double rate[3] = {0, 0, 0};
    for (const Drain& d : r_.drains) {
      if (d.stage != "formats" || d.rep != rep) continue;
      order += (order.empty() ? "" : ", ") + d.mode + " " + Thousands(d.rate);
      for (int i = 0; i < 3; ++i)
        if (d.mode == kFormats[i]) rate[i] = d.rate;
    }
    if (order.empty() || rate[0] <= 0) continue;
    s << "| " << rep << " | " << order << " | " << Pct(rate[1] / rate[0]) << " | "
      << Pct(rate[2] / rate[0]) << " |\n";
  }
  return s.str();
}

}  // namespace bench
}  // namespace outbox
