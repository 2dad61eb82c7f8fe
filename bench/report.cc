#include "report.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "util.h"

namespace outbox {
namespace bench {

std::string Thousands(double v) {
  long long n = std::llround(v);
  std::string s = std::to_string(n < 0 ? -n : n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return (n < 0 ? "-" : "") + s;
}

std::string Pct(double ratio) { return Fmt("%.1f%%", 100 * ratio); }

std::string PassMiss(bool measured, bool ok) { return !measured ? "n/a" : ok ? "PASS" : "MISS"; }

namespace {

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

std::string Report::RunDate() const {
  std::time_t when = static_cast<std::time_t>(r_.started_unix);
  char date[64];
  std::strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", std::gmtime(&when));
  return date;
}

std::string Report::Machine() const {
  const auto& m = r_.machine;
  auto get = [&](const char* k) {
    auto it = m.find(k);
    return it == m.end() ? std::string("?") : it->second;
  };
  std::ostringstream s;
  s << "| | |\n|---|---|\n";
  s << "| date | " << RunDate() << " |\n";
  s << "| machine | " << get("nproc") << " CPUs (`nproc`), " << get("cpu") << ", " << get("ram")
    << " RAM, " << get("kernel") << " |\n";
  s << "| database | MariaDB " << get("mariadb") << ", buffer pool " << get("buffer_pool")
    << ", innodb_flush_log_at_trx_commit=" << get("flush_log_at_trx_commit") << ", binary log "
    << get("binlog") << " |\n";
  s << "| broker | outbox-mock-broker (librdkafka " << get("librdkafka")
    << " mock cluster), 1 broker, 4 partitions, its own process |\n";
  s << "| relay | " << get("relay");
  if (m.count("compare_relay")) s << "; compared with " << get("compare_relay");
  if (m.count("kafka_properties")) s << ", kafka.properties " << get("kafka_properties");
  s << " |\n";
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
  const LatencySamples& l = r_.latency_samples;
  for (double v : l.consumed) ++hist[static_cast<int>(std::floor(v))].first;
  for (double v : l.created) ++hist[static_cast<int>(std::floor(v))].second;
  std::ostringstream lh;
  lh << "# ms consumed created (counts per 1 ms bin)\n";
  for (const auto& [ms, c] : hist) lh << ms << " " << c.first << " " << c.second << "\n";
  WriteFile(o_.out_dir + "/latency_hist.dat", lh.str());
  std::ostringstream lq;
  lq << Fmt("p50=%.3f\np99=%.3f\nmax=%.3f\n", Quantile(l.consumed, 0.5), Quantile(l.consumed, 0.99),
            Quantile(l.consumed, 1));
  WriteFile(o_.out_dir + "/latency_quantiles.txt", lq.str());

  std::ostringstream rs;
  rs << "# seconds published rss_mib\n";
  for (const RssPoint& p : r_.rss_series)
    rs << Fmt("%.2f %lld %.2f\n", p.t, static_cast<long long>(p.published), p.rss_mib);
  WriteFile(o_.out_dir + "/rss.dat", rs.str());
  WriteWakeupData();
}

std::string LoadAverages(const std::string& loadavg) {
  std::string out;
  size_t p = 0;
  for (int i = 0; i < 3 && p < loadavg.size(); ++i) {
    const size_t e = std::min(loadavg.find(' ', p), loadavg.size());
    out += (i ? " " : "") + loadavg.substr(p, e - p);
    p = e + 1;
  }
  return out;
}

namespace {

// [begin, end) of the part NAME in `doc`: the lines "<!-- NAME: begin -->"
// and "<!-- NAME: end -->" included; npos if absent.
std::pair<size_t, size_t> Part(const std::string& doc, const std::string& name) {
  const std::string begin = "<!-- " + name + ": begin -->", end = "<!-- " + name + ": end -->";
  const size_t b = doc.find(begin);
  const size_t e = b == std::string::npos ? b : doc.find(end, b);
  if (e == std::string::npos) return {std::string::npos, std::string::npos};
  return {b, e + end.size()};
}

}  // namespace

bool Report::WritePart(const std::string& rendered, const std::string& name) const {
  const auto [rb, re] = Part(rendered, name);
  std::string doc = ReadFile(o_.doc_path);
  const auto [db, de] = Part(doc, name);
  if (rb == std::string::npos || db == std::string::npos) {
    std::cerr << "outbox-bench: " << o_.doc_path << " or its template has no " << name
              << " part (<!-- " << name << ": begin --> ... end); the report is in " << o_.out_dir
              << "/BENCHMARKS.md only\n";
    return false;
  }
  doc.replace(db, de - db, rendered.substr(rb, re - rb));
  WriteFile(o_.doc_path, doc);
  return true;
}

std::string Report::Render() const {
  std::string tpl = o_.doc_template.empty() ? "" : ReadFile(o_.doc_template);
  if (tpl.empty())
    tpl =
        "# Benchmarks\n\n{{MACHINE}}\n\n{{TARGETS}}\n\n{{DRAINS}}\n\n{{SWEEP}}\n\n{{LATENCY}}"
        "\n\n{{IDLE}}\n\n{{SCALE}}\n\n{{WAKEUP}}\n\n{{SERVICES}}\n\n{{FLEET}}\n\n{{DBCOST}}"
        "\n\n{{FORMATS}}\n\n{{COMPARE}}"
        "\n\n{{RUNS}}\n\n{{NOTES}}\n";
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
  doc = Replace(doc, "{{WAKEUP}}", WakeupTable());
  doc = Replace(doc, "{{SERVICES}}", ServicesTable());
  doc = Replace(doc, "{{FLEET}}", FleetTable());
  doc = Replace(doc, "{{DBCOST}}", DbCostTable());
  doc = Replace(doc, "{{FORMATS}}", FormatsTable());
  doc = Replace(doc, "{{COMPARE}}", CompareTable());
  doc = Replace(doc, "{{RUNS}}", RunsTable());
  doc = Replace(doc, "{{NOTES}}", notes);
  doc = Replace(doc, "{{FIGURES}}", o_.figures_rel.empty() ? "." : o_.figures_rel);
  doc = Replace(doc, "{{RUNS_N}}", std::to_string(o_.runs));
  return doc;
}

void Report::WriteFiles() const {
  WriteFile(o_.out_dir + "/results.json", Json());
  WriteData();
  const std::string doc = Render();
  WriteFile(o_.out_dir + "/BENCHMARKS.md", doc);
  if (o_.doc_path.empty()) return;
  // A comparison of two builds, and a run of the fleet, dbcost or formats
  // stage alone, write their own part of the doc: the full run's figures
  // stay (the whole report of this run is in out_dir).
  // The dbcost stage alone writes its part, with or without a comparison
  // (its table has both builds' rows).
  if (o_.stages == std::vector<std::string>{"dbcost"})
    (void)WritePart(doc, "dbcost");
  else if (o_.stages == std::vector<std::string>{"formats"})
    (void)WritePart(doc, "formats");
  else if (!o_.compare_relay_bin.empty())
    (void)WritePart(doc, "compare");
  else if (o_.stages == std::vector<std::string>{"fleet"})
    (void)WritePart(doc, "fleet");
  else
    WriteFile(o_.doc_path, doc);
}

}  // namespace bench
}  // namespace outbox
