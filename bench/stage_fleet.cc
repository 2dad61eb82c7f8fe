// The fleet stage (bench.h): relays sharing many databases through a
// `fleet:` block (Kafka's group protocol gives each service one owner)
// against the same number of relays each serving every database: the
// connections, idle statements, threads and RSS of both; then, in the
// fleet, kill -9 of one member at a time and the time until each of its
// services publishes a new event from another member.
#include <algorithm>
#include <sstream>

#include "bench.h"

namespace outbox {
namespace bench {
namespace {

// The `service` label of each sample of `metric` in a Prometheus text body
// whose value is `value`.
std::vector<std::string> ServicesWhere(const std::string& body, const std::string& metric,
                                       double value) {
  std::vector<std::string> out;
  std::istringstream in(body);
  std::string line;
  const std::string head = metric + "{";
  while (std::getline(in, line)) {
    if (line.compare(0, head.size(), head) != 0) continue;
    const size_t s = line.find("service=\"");
    const size_t close = line.rfind('}');
    if (s == std::string::npos || close == std::string::npos) continue;
    const size_t e = line.find('"', s + 9);
    if (std::stod(line.substr(close + 1)) == value) out.push_back(line.substr(s + 9, e - s - 9));
  }
  return out;
}

int ServiceIndex(const std::string& name) { return std::stoi(name.substr(3)); }  // "svcN"

// The services the relay behind `port` owns (none when it does not answer).
std::vector<std::string> OwnedBy(int port) {
  return ServicesWhere(HttpGet(port, "/metrics").value_or(""), "outbox_service_owned", 1);
}

void InsertEvent(Db* db, const std::string& database, int64_t id) {
  const std::string n = std::to_string(id);
  db->Exec("INSERT INTO `" + database + "`.`" + kMainTable +
           "` (id, aggregate_type, aggregate_id, event_type, event_key, payload, status,"
           " retry_count, next_retry_at, created_at, updated_at) VALUES (" +
           n + ", 'Lat', " + n + ", 'Moved', 'Moved:" + n +
           "', '{}', 'NEW', 0, NOW(), NOW(), NOW())");
}

}  // namespace

std::map<std::string, int> Bench::Owners(const Running& r) {
  std::map<std::string, int> owners;
  for (int port : r.ports)
    for (const std::string& s : OwnedBy(port)) ++owners[s];
  return owners;
}

bool Bench::WaitOwnedOnce(const Running& r, int services, double timeout_s, int member) {
  const double deadline = MonoSeconds() + timeout_s;
  while (MonoSeconds() < deadline) {
    auto owners = Owners(r);
    const bool once =
        std::all_of(owners.begin(), owners.end(), [](const auto& o) { return o.second == 1; });
    auto body =
        member < 0 ? std::nullopt : HttpGet(r.ports[static_cast<size_t>(member)], "/metrics");
    const bool joined =
        member < 0 || (body && !ServicesWhere(*body, "outbox_service_owned", 1).empty());
    if (once && joined && static_cast<int>(owners.size()) == services) return true;
    SleepSeconds(0.2);
  }
  return false;
}

std::vector<double> Bench::AwaitSent(const std::vector<std::string>& dbs, int64_t id, double t0,
                                     double timeout_s) {
  std::vector<double> at(dbs.size(), -1);
  size_t left = dbs.size();
  while (left > 0 && MonoSeconds() < t0 + timeout_s) {
    // One statement per round: the rows of every database still waiting.
    std::string sql;
    for (size_t i = 0; i < dbs.size(); ++i) {
      if (at[i] >= 0) continue;
      sql += std::string(sql.empty() ? "" : " UNION ALL ") + "SELECT " + std::to_string(i) +
             " AS i FROM `" + dbs[i] + "`.`" + kMainTable + "` WHERE id = " + std::to_string(id) +
             " AND status = 'SENT'";
    }
    const double now = MonoSeconds();
    for (const std::string& row : db_->QueryColumn(sql)) {
      at[static_cast<size_t>(std::stoll(row))] = now - t0;
      --left;
    }
    SleepSeconds(0.05);
  }
  return at;
}

void Bench::Takeover(int kill, Running* r, const std::vector<std::string>& dbs, FleetRun* out) {
  const size_t victim = static_cast<size_t>(kill) % r->procs.size();
  std::vector<std::string> moved;
  for (const std::string& s : OwnedBy(r->ports[victim]))
    moved.push_back(dbs.at(static_cast<size_t>(ServiceIndex(s))));
  r->procs[victim].Kill();
  const double t0 = MonoSeconds();
  // One new event per moved service, right after the kill.
  const int64_t id = 1000000 + kill;
  for (const std::string& db : moved) InsertEvent(db_.get(), db, id);
  const double timeout = 2.0 * s_.fleet_session_timeout_ms / 1000 + 60;
  std::vector<double> at = AwaitSent(moved, id, t0, timeout);
  for (double s : at)
    if (s >= 0) out->takeover_s.push_back(s);
  const auto missed = std::count(at.begin(), at.end(), -1.0);
  if (missed > 0)
    r_.notes.push_back(Fmt("fleet: kill %d: %zd of %zu moved services published nothing in %.0f s",
                           kill + 1, missed, moved.size(), timeout));
  out->moved.push_back(static_cast<int>(moved.size()));
  Rejoin(kill, r, victim, out);
  Say(
      Fmt("fleet: kill %d of relay %zu: %zu services moved, the last published after %.1f s; "
          "rejoined in %.1f s",
          kill + 1, victim, moved.size(), at.empty() ? 0 : *std::max_element(at.begin(), at.end()),
          out->rejoin_s.back()));
}

void Bench::Rejoin(int kill, Running* r, size_t member, FleetRun* out) {
  const double t0 = MonoSeconds();
  r->procs[member] = Child({o_.relay_bin, "run", "--config", r->configs[member]}, r->logs[member]);
  // Rejoined: the restarted member owns services again (the group gave it
  // shards back) and every service has one owner.
  const bool once = WaitOwnedOnce(*r, out->services, 120, static_cast<int>(member));
  out->rejoin_s.push_back(once ? MonoSeconds() - t0 : -1);
  if (!once)
    r_.notes.push_back(Fmt("fleet: kill %d: ownership not settled after a restart", kill + 1));
}

void Bench::FleetIdle(Running* relays, int64_t base_connections, FleetRun* out) {
  const double db0 = ProcessCpuSeconds(o_.mysqld_pid).value_or(0), w0 = MonoSeconds();
  IdleWindow(&relays->procs, s_.wakeup_idle_seconds, &out->idle);
  if (o_.mysqld_pid > 0)
    out->db_cpu_ms_per_s =
        1000 * (ProcessCpuSeconds(o_.mysqld_pid).value_or(0) - db0) / (MonoSeconds() - w0);
  out->connections = ThreadsConnected() - base_connections;
  for (size_t i = 0; i < relays->procs.size(); ++i) {
    const pid_t pid = relays->procs[i].pid();
    out->threads.push_back(static_cast<int64_t>(ProcessStatusNumber(pid, "Threads").value_or(0)));
    out->rss_mib.push_back(ProcessStatusMiB(pid, "VmRSS").value_or(0));
    out->owned.push_back(out->shards > 0 ? static_cast<int>(OwnedBy(relays->ports[i]).size())
                                         : out->services);
  }
}

FleetRun Bench::MeasureFleet(bool fleet, const std::vector<std::string>& dbs) {
  FleetRun out;
  out.mode = fleet ? "fleet" : "every relay";
  out.relays = s_.fleet_relays;
  out.services = static_cast<int>(dbs.size());
  out.shards = fleet ? s_.fleet_shards : 0;
  const int64_t base = ThreadsConnected();
  RelaySpec rs;
  rs.services = out.services;
  rs.database_prefix = o_.db.database + "_fleet";
  if (fleet) rs.fleet_topic = kFleetTopic;
  if (fleet) rs.fleet_session_timeout_ms = s_.fleet_session_timeout_ms;
  const double t0 = MonoSeconds();
  Running relays = StartRelays(rs, out.relays, fleet ? "fleet" : "fleet-all");
  if (fleet && !WaitOwnedOnce(relays, out.services, 180))
    r_.notes.push_back("fleet: the services were not each owned once 180 s after the start");
  out.startup_s = MonoSeconds() - t0;
  SleepSeconds(s_.settle_seconds);
  out.idle.label =
      Fmt("%d services over %d relays, %s", out.services, out.relays, out.mode.c_str());
  FleetIdle(&relays, base, &out);
  if (fleet)
    for (int k = 0; k < s_.fleet_kills; ++k) Takeover(k, &relays, dbs, &out);
  StopAll(&relays, "the fleet stage");
  Say(
      Fmt("fleet stage, %s: %d services, %d relays, ready in %.1f s; idle: %lld connections, %.1f "
          "statements/s",
          out.mode.c_str(), out.services, out.relays, out.startup_s,
          static_cast<long long>(out.connections), out.idle.statements_per_s));
  return out;
}

void Bench::StageFleet() {
  const std::vector<std::string> dbs = CreateServiceDatabases("fleet", "_fleet", s_.fleet_services);
  r_.fleet.push_back(MeasureFleet(false, dbs));
  r_.fleet.push_back(MeasureFleet(true, dbs));
  for (const auto& d : dbs) db_->Exec("DROP DATABASE `" + d + "`");
}

}  // namespace bench
}  // namespace outbox
