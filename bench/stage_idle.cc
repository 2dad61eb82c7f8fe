// The idle stage and the idle window the wakeup and services stages reuse
// (bench.h).
#include "bench.h"

namespace outbox {
namespace bench {

double Bench::IdleWindow(std::vector<Child>* procs, double seconds, Idle* out) {
  static const std::vector<std::string> kCom = {
      "Com_select",       "Com_update",     "Com_begin",          "Com_commit",
      "Com_rollback",     "Com_insert",     "Com_delete",         "Com_stmt_execute",
      "Com_stmt_prepare", "Com_set_option", "Com_admin_commands", "Com_show_status"};
  auto s0 = db_->GlobalStatus();
  std::vector<double> c0;
  if (procs)
    for (auto& p : *procs) c0.push_back(ProcessCpuSeconds(p.pid()).value_or(0));
  double t0 = MonoSeconds();
  SleepSeconds(seconds);
  double t1 = MonoSeconds();
  auto s1 = db_->GlobalStatus();
  double q = s1["Questions"] - s0["Questions"];
  if (out) {
    out->seconds = t1 - t0;
    out->statements_per_s = (q - r_.idle_baseline_questions) / out->seconds;
    for (const auto& k : kCom) {
      double v = (s1[k] - s0[k]) / out->seconds;
      if (v > 0) out->com_per_s[k] = v;
    }
    double cpu = 0;
    for (size_t i = 0; procs && i < procs->size(); ++i)
      cpu += ProcessCpuSeconds((*procs)[i].pid()).value_or(0) - c0[i];
    out->cpu_ms_per_s = 1000 * cpu / out->seconds;
    if (procs && !procs->empty()) {
      out->rss_mib = ProcessStatusMiB((*procs)[0].pid(), "VmRSS").value_or(0);
      out->hwm_mib = ProcessStatusMiB((*procs)[0].pid(), "VmHWM").value_or(0);
    }
  }
  return q;
}

void Bench::StageIdle() {
  // Our own probes, over a window of the same length with no relay running.
  r_.idle_baseline_questions = IdleWindow(nullptr, s_.idle_seconds, nullptr);
  Say(Fmt("idle: baseline (our probes only): %.0f statements per %.0f s window",
          r_.idle_baseline_questions, s_.idle_seconds));

  auto measure = [&](const std::string& label, const RelaySpec& spec, const std::string& mode) {
    db_->Exec(std::string("TRUNCATE TABLE ") + kMainTable);
    Running relay = StartRelays(spec, 1, "idle");
    // Past the first gauge refresh and connection setup: the steady idle state.
    SleepSeconds(o_.quick ? 1 : 6);
    Idle idle;
    idle.label = label;
    idle.services = spec.services;
    idle.mode = mode;
    IdleWindow(&relay.procs, s_.idle_seconds, &idle);
    idle.per_service = idle.statements_per_s / spec.services;
    StopAll(&relay, "the idle stage");
    Say(
        Fmt("idle: %-28s %.2f statements/s (%.2f per service), CPU %.2f ms/s, RSS %.1f MiB "
            "(peak %.1f)",
            label.c_str(), idle.statements_per_s, idle.per_service, idle.cpu_ms_per_s, idle.rss_mib,
            idle.hwm_mib));
    r_.idle.push_back(idle);
  };
  RelaySpec pa;
  measure("1 service, per_aggregate", pa, "per_aggregate");
  RelaySpec none;
  none.ordering = "none";
  measure("1 service, none", none, "none");
  for (int i = 0; i < 10; ++i) db_->CreateOutbox("idle_" + std::to_string(i));
  RelaySpec ten;
  ten.services = 10;
  measure("10 services, per_aggregate", ten, "per_aggregate");
}

}  // namespace bench
}  // namespace outbox
