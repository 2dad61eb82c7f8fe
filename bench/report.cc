#include "report.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "util.h"

namespace outbox::bench {

namespace {

std::string Thousands(double v) {
  long long n = std::llround(v);
  std::string s = std::to_string(n < 0 ? -n : n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return (n < 0 ? "-" : "") + s;
}

std::string Pct(double ratio) { return Fmt("%.1f%%", 100 * ratio); }

std::string PassMiss(bool measured, bool ok) { return !measured ? "n/a" : ok ? "PASS" : "MISS"; }

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size()))
    s.replace(p, from.size(), to);
  return s;
}

}  // namespace

std::vector<const Drain*> Report::Find(const std::string& stage, const std::string& workload,
                                       const std::string& mode, int relays, int batch,
                                       const std::string& state) const {
  std::vector<const Drain*> out;
  for (const Drain& d : r_.drains) {
    if (d.stage == stage && d.workload == workload && d.mode == mode &&
        (relays < 0 || d.relays == relays) && d.batch == batch && d.table_state == state)
      out.push_back(&d);
  }
  return out;
}

double Report::MedianRate(const std::string& stage, const std::string& workload,
                          const std::string& mode, int relays, int batch,
                          const std::string& state) const {
  std::vector<double> v;
  for (const Drain* d : Find(stage, workload, mode, relays, batch, state)) v.push_back(d->rate);
  return Median(v);
}

std::vector<Report::Target> Report::Targets() const {
  std::vector<Target> t;
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
                   " aggregates x " + std::to_string(s_.events_per_aggregate) + " (issue 4)",
               Thousands(cpa) + " / " + Thousands(cnone) +
                   " events/s = " + Pct(cnone > 0 ? cpa / cnone : 0),
               ">= 80%", PassMiss(cnone > 0 && cpa > 0, cpa >= 0.8 * cnone), ""});

  std::vector<double> p50, p99, create50;
  double mx = 0;
  for (const auto& l : r_.latency) {
    p50.push_back(l.p50_ms);
    p99.push_back(l.p99_ms);
    create50.push_back(l.create_p50_ms);
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
  for (const Idle& i : r_.idle) {
    if (i.services != 10) continue;
    t.push_back({"RSS with 10 idle services", Fmt("%.1f MiB (VmHWM)", i.hwm_mib), "<= 64 MiB",
                 PassMiss(true, i.hwm_mib <= 64), ""});
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
                     events + " events",
                 Fmt("%.1f vs %.1f MiB peak", backlog_rss, base), "bounded: <= 1.15x",
                 PassMiss(true, backlog_rss <= 1.15 * base), ""});
  }
  return t;
}

std::string Report::Table() const {
  std::ostringstream s;
  s << "| measurement | value | target | result |\n|---|---|---|---|\n";
  for (const Target& t : Targets())
    s << "| " << t.what << " | " << t.value << " | " << t.target << " | " << t.result << " |\n";
  return s.str();
}

std::string Report::Machine() const {
  const auto& m = r_.machine;
  auto get = [&](const char* k) {
    auto it = m.find(k);
    return it == m.end() ? std::string("?") : it->second;
  };
  std::ostringstream s;
  std::time_t when = static_cast<std::time_t>(r_.started_unix);
  char date[64];
  std::strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", std::gmtime(&when));
  s << "| | |\n|---|---|\n";
  s << "| date | " << date << " |\n";
  s << "| machine | " << get("nproc") << " CPUs (`nproc`), " << get("cpu") << ", " << get("ram")
    << " RAM, " << get("kernel") << " |\n";
  s << "| database | MariaDB " << get("mariadb") << ", buffer pool " << get("buffer_pool")
    << ", innodb_flush_log_at_trx_commit=" << get("flush_log_at_trx_commit") << " |\n";
  s << "| broker | outbox-mock-broker (librdkafka " << get("librdkafka")
    << " mock cluster), 1 broker, 4 partitions, its own process |\n";
  s << "| relay | " << get("relay") << ", commit " << get("commit") << " |\n";
  s << "| command | `" << get("command") << "` |\n";
  s << "| duration | " << Fmt("%.1f min", r_.seconds / 60) << " |\n";
  s << "| load average (1/5/15 min) before, after | " << r_.load_before << "; " << r_.load_after
    << " |\n";
  return s.str();
}

std::string Report::DrainTable() const {
  // One row per (stage drain) configuration: median and every run.
  std::ostringstream s;
  s << "| workload | mode | relays | batch | median events/s | runs (events/s) | CPU s per "
       "100k events: database / relays / broker | fsyncs per batch | peak RSS |\n"
       "|---|---|---|---|---|---|---|---|---|\n";
  std::vector<std::tuple<std::string, std::string, int>> keys;
  for (const Drain& d : r_.drains) {
    if (d.stage != "drain") continue;
    auto k = std::make_tuple(d.workload, d.mode, d.relays);
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
  }
  for (const auto& [w, mode, relays] : keys) {
    auto ds = Find("drain", w, mode, relays, s_.default_batch);
    std::vector<double> rate, dbc, rc, bc, fs, rss;
    std::string runs;
    for (const Drain* d : ds) {
      rate.push_back(d->rate);
      double per = 100000.0 / static_cast<double>(d->events);
      dbc.push_back(d->db_cpu_s * per);
      rc.push_back(d->relay_cpu_s * per);
      bc.push_back(d->broker_cpu_s * per);
      fs.push_back(d->fsyncs / (static_cast<double>(d->events) / s_.default_batch));
      rss.push_back(d->relay_peak_rss_mib);
      runs += (runs.empty() ? "" : ", ") + Thousands(d->rate);
    }
    s << "| " << w << " | " << (mode == "db" ? "in-server procedure" : mode) << " | "
      << (relays ? std::to_string(relays) : "-") << " | " << s_.default_batch << " | "
      << Thousands(Median(rate)) << " | " << runs << " | "
      << Fmt("%.2f / %.2f / %.2f", Median(dbc), Median(rc), Median(bc)) << " | "
      << Fmt("%.1f", Median(fs)) << " | "
      << (mode == "db" ? std::string("-") : Fmt("%.1f MiB", Median(rss))) << " |\n";
  }
  return s.str();
}

std::string Report::SweepTable() const {
  const std::string w = WorkloadName(s_.main_aggregates, s_.events_per_aggregate);
  std::set<int> batches;
  for (const Drain& d : r_.drains)
    if ((d.stage == "sweep" || d.stage == "drain") && d.workload == w && d.relays <= 1)
      batches.insert(d.batch);
  std::ostringstream s;
  s << "| batch_size | database limit | none | per_aggregate | none / limit | per_aggregate / "
       "none |\n|---|---|---|---|---|---|\n";
  for (int b : batches) {
    auto rate = [&](const char* mode) {
      std::vector<double> v;
      for (const char* st : {"sweep", "drain"})
        for (const Drain* d : Find(st, w, mode, std::string(mode) == "db" ? 0 : 1, b))
          v.push_back(d->rate);
      return Median(v);
    };
    double db = rate("db"), none = rate("none"), pa = rate("per_aggregate");
    s << "| " << b << " | " << Thousands(db) << " | " << Thousands(none) << " | " << Thousands(pa)
      << " | " << (db > 0 ? Pct(none / db) : "-") << " | " << (none > 0 ? Pct(pa / none) : "-")
      << " |\n";
  }
  return s.str();
}

std::string Report::LatencyTable() const {
  std::ostringstream s;
  if (r_.latency.empty()) return "Not measured in this run.\n";
  s << "| run | events written | offered rate | writers' max lag | measured | insert -> "
       "consumed p50 / p99 / max | insert -> CreateTime p50 / p99 / max | relay CPU | relay "
       "statements/s |\n"
       "|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& l : r_.latency) {
    s << "| " << l.rep << " | " << Thousands(static_cast<double>(l.written)) << " | "
      << Fmt("%.0f/s", l.offered_rate) << " | " << Fmt("%.1f ms", l.writer_max_lag_ms) << " | "
      << Thousands(static_cast<double>(l.measured)) << " | "
      << Fmt("%.1f / %.1f / %.1f ms", l.p50_ms, l.p99_ms, l.max_ms) << " | "
      << Fmt("%.1f / %.1f / %.1f ms", l.create_p50_ms, l.create_p99_ms, l.create_max_ms) << " | "
      << Fmt("%.1f%%", l.relay_cpu_pct) << " | " << Fmt("%.0f", l.relay_statements_per_s) << " |\n";
  }
  s << "\nConsumer calibration (our own idempotent producer, same settings as the relay's, "
    << r_.probe_ack_ms.size() << " probes at 500/s): produce -> ack "
    << Fmt("p50 %.1f / p99 %.1f ms", Quantile(r_.probe_ack_ms, 0.5),
           Quantile(r_.probe_ack_ms, 0.99))
    << "; consumer's receive time minus the delivery report's time "
    << Fmt("p50 %.1f / p99 %.1f / max %.1f ms", Quantile(r_.probe_late_ms, 0.5),
           Quantile(r_.probe_late_ms, 0.99), Quantile(r_.probe_late_ms, 1))
    << " (negative: the consumer saw the message before the producer's delivery report "
       "was served). The upper bound is therefore within a few milliseconds of the "
       "acknowledgement.\n";
  return s.str();
}

std::string Report::IdleTable() const {
  std::ostringstream s;
  if (r_.idle.empty()) return "Not measured in this run.\n";
  s << "| configuration | window | statements/s (relay) | per service | breakdown (per s) | "
       "CPU | RSS (peak) |\n|---|---|---|---|---|---|---|\n";
  for (const Idle& i : r_.idle) {
    std::string br;
    for (const auto& [k, v] : i.com_per_s) {
      if (k == "Com_show_status") continue;  // our probes
      br += (br.empty() ? "" : ", ") + k.substr(4) + Fmt(" %.2f", v);
    }
    s << "| " << i.label << " | " << Fmt("%.0f s", i.seconds) << " | "
      << Fmt("%.2f", i.statements_per_s) << " | " << Fmt("%.2f", i.per_service) << " | " << br
      << " | " << Fmt("%.2f ms/s", i.cpu_ms_per_s) << " | "
      << Fmt("%.1f MiB (%.1f)", i.rss_mib, i.hwm_mib) << " |\n";
  }
  s << "\nOur own probes (two `SHOW GLOBAL STATUS` per window) were measured with no relay "
       "running and subtracted: "
    << Fmt("%.0f", r_.idle_baseline_questions) << " statements per window.\n";
  return s.str();
}

std::string Report::ScaleTable() const {
  std::ostringstream s;
  const std::string w = WorkloadName(s_.main_aggregates, s_.events_per_aggregate);
  const std::string big = std::to_string(s_.sent_rows) + " SENT";
  bool any = false;
  for (const Drain& d : r_.drains) any = any || d.stage == "scale" || d.stage == "backlog";
  if (!any) return "Not measured in this run.\n";
  s << "| mode | table before the backlog | median events/s | runs |\n|---|---|---|---|\n";
  for (const char* mode : {"per_aggregate", "none"}) {
    for (const std::string& st : {std::string("empty"), big}) {
      auto ds = Find("scale", w, mode, 1, s_.default_batch, st);
      if (ds.empty()) continue;
      std::vector<double> v;
      std::string runs;
      for (const Drain* d : ds) {
        v.push_back(d->rate);
        runs += (runs.empty() ? "" : ", ") + Thousands(d->rate);
      }
      s << "| " << mode << " | "
        << (st == "empty" ? "empty" : Thousands(s_.sent_rows) + " SENT rows") << " | "
        << Thousands(Median(v)) << " | " << runs << " |\n";
    }
  }
  s << Fmt(
      "\nBuilding the %s SENT rows took %.0f s. Each run on that table adds its backlog "
      "above the rows of the runs before it (which are SENT by then), so the k-th run "
      "starts with %s + (k-1) x %s SENT rows.\n",
      Thousands(static_cast<double>(s_.sent_rows)).c_str(), r_.big_table_build_s,
      Thousands(static_cast<double>(s_.sent_rows)).c_str(),
      Thousands(static_cast<double>(s_.main_aggregates) * s_.events_per_aggregate).c_str());
  for (const Drain& d : r_.drains) {
    if (d.stage != "backlog") continue;
    double max_rss = 0, late_rss = 0;
    for (const RssPoint& p : r_.rss_series) {
      max_rss = std::max(max_rss, p.rss_mib);
      if (p.published >= d.events / 2) late_rss = std::max(late_rss, p.rss_mib);
    }
    s << Fmt(
        "\nDraining a backlog of %s events (per_aggregate, batch %d, one relay): %s "
        "events/s, peak RSS (VmHWM) %.1f MiB; sampled VmRSS max %.1f MiB, max in the second "
        "half of the drain %.1f MiB.\n",
        Thousands(static_cast<double>(d.events)).c_str(), d.batch, Thousands(d.rate).c_str(),
        d.relay_peak_rss_mib, max_rss, late_rss);
  }
  return s.str();
}

std::string Report::RunsTable() const {
  std::ostringstream s;
  s << "| stage | workload | mode | relays | batch | table | events/s | seconds | CPU s db / relay "
       "/ broker | fsyncs | statements | purge wait |\n"
       "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const Drain& d : r_.drains) {
    s << "| " << d.stage << " | " << d.workload << " | " << d.mode << " | " << d.relays << " | "
      << d.batch << " | " << d.table_state << " | " << Thousands(d.rate) << " | "
      << Fmt("%.2f", d.seconds) << " | "
      << Fmt("%.1f / %.1f / %.1f", d.db_cpu_s, d.relay_cpu_s, d.broker_cpu_s) << " | "
      << Thousands(d.fsyncs) << " | " << Thousands(d.questions) << " | "
      << Fmt("%.1f s", d.purge_wait_s) << " |\n";
  }
  return s.str();
}

std::string Report::Json() const {
  nlohmann::json j;
  j["machine"] = r_.machine;
  j["seconds"] = r_.seconds;
  j["quick"] = o_.quick;
  j["load_before"] = r_.load_before;
  j["load_after"] = r_.load_after;
  for (const Drain& d : r_.drains)
    j["drains"].push_back({{"stage", d.stage},
                           {"workload", d.workload},
                           {"mode", d.mode},
                           {"table_state", d.table_state},
                           {"relays", d.relays},
                           {"batch", d.batch},
                           {"rep", d.rep},
                           {"events", d.events},
                           {"seconds", d.seconds},
                           {"rate", d.rate},
                           {"relay_cpu_s", d.relay_cpu_s},
                           {"db_cpu_s", d.db_cpu_s},
                           {"broker_cpu_s", d.broker_cpu_s},
                           {"relay_peak_rss_mib", d.relay_peak_rss_mib},
                           {"fsyncs", d.fsyncs},
                           {"questions", d.questions}});
  for (const auto& l : r_.latency)
    j["latency"].push_back({{"rep", l.rep},
                            {"written", l.written},
                            {"measured", l.measured},
                            {"offered_rate", l.offered_rate},
                            {"writer_max_lag_ms", l.writer_max_lag_ms},
                            {"p50_ms", l.p50_ms},
                            {"p99_ms", l.p99_ms},
                            {"max_ms", l.max_ms},
                            {"create_p50_ms", l.create_p50_ms},
                            {"create_p99_ms", l.create_p99_ms},
                            {"create_max_ms", l.create_max_ms},
                            {"relay_cpu_pct", l.relay_cpu_pct},
                            {"relay_statements_per_s", l.relay_statements_per_s}});
  for (const Idle& i : r_.idle)
    j["idle"].push_back({{"label", i.label},
                         {"services", i.services},
                         {"statements_per_s", i.statements_per_s},
                         {"per_service", i.per_service},
                         {"com_per_s", i.com_per_s},
                         {"cpu_ms_per_s", i.cpu_ms_per_s},
                         {"rss_mib", i.rss_mib},
                         {"hwm_mib", i.hwm_mib}});
  for (const Target& t : Targets())
    j["targets"].push_back(
        {{"what", t.what}, {"value", t.value}, {"target", t.target}, {"result", t.result}});
  j["notes"] = r_.notes;
  return j.dump(2) + "\n";
}

void Report::WriteData() const {
  const std::string w = WorkloadName(s_.main_aggregates, s_.events_per_aggregate);
  // Throughput by batch size: batch, db, none, per_aggregate (medians).
  std::set<int> batches;
  for (const Drain& d : r_.drains)
    if ((d.stage == "sweep" || d.stage == "drain") && d.workload == w && d.relays <= 1)
      batches.insert(d.batch);
  std::ostringstream sw;
  sw << "# batch db none per_aggregate (events/s, medians)\n";
  for (int b : batches) {
    sw << b;
    for (const char* mode : {"db", "none", "per_aggregate"}) {
      std::vector<double> v;
      for (const char* st : {"sweep", "drain"})
        for (const Drain* d : Find(st, w, mode, std::string(mode) == "db" ? 0 : 1, b))
          v.push_back(d->rate);
      sw << " " << (v.empty() ? std::string("NaN") : Fmt("%.0f", Median(v)));
    }
    sw << "\n";
  }
  WriteFile(o_.out_dir + "/throughput.dat", sw.str());

  // Headline bars: label, median rate.
  std::ostringstream hb;
  hb << "# label rate\n";
  const int b = s_.default_batch;
  auto bar = [&](const std::string& label, const std::string& wl, const std::string& mode,
                 int relays) {
    hb << "\"" << label << "\" " << Fmt("%.0f", MedianRate("drain", wl, mode, relays, b)) << "\n";
  };
  const std::string cw = WorkloadName(s_.cost_aggregates, s_.events_per_aggregate);
  bar("database limit", w, "db", 0);
  bar("none, 1 relay", w, "none", 1);
  bar("none, 3 relays", w, "none", 3);
  bar("per_aggregate, 1 relay", w, "per_aggregate", 1);
  bar("per_aggregate, 3 relays", w, "per_aggregate", 3);
  WriteFile(o_.out_dir + "/headline.dat", hb.str());

  // Latency histograms, 1 ms bins: bin_start consumed_count created_count.
  std::map<int, std::pair<int, int>> hist;
  for (double v : r_.latency_samples_ms) ++hist[static_cast<int>(std::floor(v))].first;
  for (double v : r_.latency_create_samples_ms) ++hist[static_cast<int>(std::floor(v))].second;
  std::ostringstream lh;
  lh << "# ms consumed created (counts per 1 ms bin)\n";
  for (const auto& [ms, c] : hist) lh << ms << " " << c.first << " " << c.second << "\n";
  WriteFile(o_.out_dir + "/latency_hist.dat", lh.str());
  std::ostringstream lq;
  lq << Fmt("p50=%.3f\np99=%.3f\nmax=%.3f\n", Quantile(r_.latency_samples_ms, 0.5),
            Quantile(r_.latency_samples_ms, 0.99), Quantile(r_.latency_samples_ms, 1));
  WriteFile(o_.out_dir + "/latency_quantiles.txt", lq.str());

  std::ostringstream rs;
  rs << "# seconds published rss_mib\n";
  for (const RssPoint& p : r_.rss_series)
    rs << Fmt("%.2f %lld %.2f\n", p.t, static_cast<long long>(p.published), p.rss_mib);
  WriteFile(o_.out_dir + "/rss.dat", rs.str());
}

void Report::WriteFiles() const {
  WriteFile(o_.out_dir + "/results.json", Json());
  WriteData();
  std::string tpl = o_.doc_template.empty() ? "" : ReadFile(o_.doc_template);
  if (tpl.empty())
    tpl =
        "# Benchmarks\n\n{{MACHINE}}\n\n{{TARGETS}}\n\n{{DRAINS}}\n\n{{SWEEP}}\n\n{{LATENCY}}"
        "\n\n{{IDLE}}\n\n{{SCALE}}\n\n{{RUNS}}\n\n{{NOTES}}\n";
  std::string notes;
  for (const auto& n : r_.notes) notes += "- " + n + "\n";
  if (notes.empty()) notes = "None.\n";
  std::string doc = tpl;
  doc = Replace(doc, "{{MACHINE}}", Machine());
  doc = Replace(doc, "{{TARGETS}}", Table());
  doc = Replace(doc, "{{DRAINS}}", DrainTable());
  doc = Replace(doc, "{{SWEEP}}", SweepTable());
  doc = Replace(doc, "{{LATENCY}}", LatencyTable());
  doc = Replace(doc, "{{IDLE}}", IdleTable());
  doc = Replace(doc, "{{SCALE}}", ScaleTable());
  doc = Replace(doc, "{{RUNS}}", RunsTable());
  doc = Replace(doc, "{{NOTES}}", notes);
  doc = Replace(doc, "{{FIGURES}}", o_.figures_rel.empty() ? "." : o_.figures_rel);
  doc = Replace(doc, "{{RUNS_N}}", std::to_string(o_.runs));
  WriteFile(o_.out_dir + "/BENCHMARKS.md", doc);
  if (!o_.doc_path.empty()) WriteFile(o_.doc_path, doc);
}

}  // namespace outbox::bench
