#pragma once

// Turns a run's records into the printed table, docs/BENCHMARKS.md (from
// bench/BENCHMARKS.md.in), results.json and the data files that
// bench/plots.gp draws.

#include <string>
#include <vector>

#include "stages.h"

namespace outbox::bench {

// 1234567 -> "1,234,567" (rounded).
std::string Thousands(double v);
// 0.953 -> "95.3%".
std::string Pct(double ratio);
// "/proc/loadavg"'s first three fields.
std::string LoadAverages(const std::string& loadavg);
// "n/a" when not measured, else "PASS" or "MISS".
std::string PassMiss(bool measured, bool ok);

class Report {
 public:
  Report(const Options& o, const Sizes& s, const Results& r) : o_(o), s_(s), r_(r) {}

  // The targets, PASS/MISS each, as a Markdown table (also printed).
  std::string Table() const;
  // results.json, *.dat in out_dir; the Markdown report at doc_path (or in
  // out_dir when no doc_path).
  void WriteFiles() const;

  struct Target {
    std::string what;
    std::string value;
    std::string target;
    std::string result;  // PASS | MISS | n/a
    std::string why;     // how the value was computed
  };
  std::vector<Target> Targets() const;
  // `targets` as a Markdown table.
  static std::string TargetTable(const std::vector<Target>& targets);

  // --compare-relay: this build against the other, one row per rate and
  // wake-up mode and per drain configuration (bench/report_compare.cc).
  struct CompareRow {
    std::string what;
    std::string now;      // this build: medians of the runs
    std::string before;   // the other build: ranges of the runs (and its median drain)
    std::string verdict;  // PASS | MISS | n/a
  };
  std::vector<CompareRow> CompareRows() const;
  // The rows as a Markdown table under a header naming both builds, and a
  // summary line (also printed). Empty when no other build was run.
  std::string CompareTable() const;

 private:
  // Median rate of the drains matching these fields (relays -1: any); 0 if none.
  double MedianRate(const std::string& stage, const std::string& workload, const std::string& mode,
                    int relays, int batch, const std::string& state = "empty") const;
  std::vector<const Drain*> Find(const std::string& stage, const std::string& workload,
                                 const std::string& mode, int relays, int batch,
                                 const std::string& state = "empty") const;
  void DrainTargets(std::vector<Target>* t) const;
  void LatencyTargets(std::vector<Target>* t) const;
  void IdleTargets(std::vector<Target>* t) const;
  void ScaleTargets(std::vector<Target>* t) const;
  // bench/report_wakeup.cc: the wakeup and services stages.
  void WakeupTargets(std::vector<Target>* t) const;
  void ServicesTargets(std::vector<Target>* t) const;
  // bench/report_fleet.cc
  void FleetTargets(std::vector<Target>* t) const;
  const FleetRun* FindFleet(const std::string& mode) const;
  std::string FleetTable() const;
  // bench/report_dbcost.cc
  std::string DbCostTable() const;
  // bench/report_formats.cc
  std::vector<const Drain*> FormatDrains(const std::string& format) const;
  double FormatRate(const std::string& format) const;  // median; 0 if not run
  void FormatsTargets(std::vector<Target>* t) const;
  std::string FormatsTable() const;
  // The kill rows of FleetTable; `row(what, get)` writes one.
  template <typename Row>
  void FleetKillRows(Row& row) const;
  const WakeupRun* FindWakeup(const std::string& mode, double rate) const;
  const ServicesRun* FindServices(const std::string& mode) const;
  const Idle* FindWakeupIdle(const std::string& mode) const;
  std::string WakeupTable() const;
  std::string WakeupSlices() const;
  std::string WakeupExtraTable() const;
  std::string ServicesTable() const;
  void WriteWakeupData() const;
  std::string Machine() const;
  std::string RunDate() const;  // "2026-01-31 12:00 UTC"
  // "Run of DATE: `command`, load average ... before, after: ...; ...."
  std::string RunLine() const;
  void AddLatencyComparisons(std::vector<CompareRow>* rows) const;
  void AddDrainComparisons(std::vector<CompareRow>* rows) const;
  // docs/BENCHMARKS.md with only its part `name` replaced (a comparison run
  // and a fleet, dbcost or formats run alone leave the full run's figures
  // alone); false if it has no such part.
  bool WritePart(const std::string& rendered, const std::string& name) const;
  std::string DrainTable() const;
  std::string SweepTable() const;
  std::string LatencyTable() const;
  std::string IdleTable() const;
  std::string ScaleTable() const;
  std::string RunsTable() const;
  std::string Json() const;
  // The whole report: the template with every part filled in.
  std::string Render() const;
  void WriteData() const;

  const Options& o_;
  const Sizes& s_;
  const Results& r_;
};

}  // namespace outbox::bench
