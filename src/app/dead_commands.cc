#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>

#include "app/commands.h"
#include "common/log.h"
#include "common/text.h"
#include "common/time_format.h"
#include "common/trace_context.h"
#include "outbox/outbox_admin.h"

namespace outbox {

namespace {

// The row's trace id when its traceparent column holds a valid one, else "".
std::string TraceId(const DeadRow& d) {
  if (!d.traceparent) return "";
  const TraceparentCheck trace = CheckTraceparent(*d.traceparent);
  return trace.valid ? std::string(trace.trace_id) : "";
}

nlohmann::json ToJson(const DeadRow& d) {
  nlohmann::json j = {{"id", d.id},
                      {"aggregate_type", d.aggregate.type},
                      {"aggregate_id", d.aggregate.id},
                      {"event_type", d.event_type},
                      {"event_key", d.event_key},
                      {"retry_count", d.retry_count},
                      {"created_at", FormatRfc3339Utc(d.created_at_unix)},
                      {"age_seconds", d.age_s}};
  j["last_error"] = d.last_error ? nlohmann::json(*d.last_error) : nlohmann::json(nullptr);
  const std::string trace_id = TraceId(d);
  j["trace_id"] = trace_id.empty() ? nlohmann::json(nullptr) : nlohmann::json(trace_id);
  return j;
}

// Columns may hold bytes that are not UTF-8 (a VARBINARY event_type, say):
// dump() would throw and abort the command, after a replay had committed and
// before its audit lines. Such bytes become U+FFFD.
std::string Dump(const nlohmann::json& j) {
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string Age(int64_t s) {
  if (s < 120) return std::to_string(s) + "s";
  if (s < 7200) return std::to_string(s / 60) + "m";
  if (s < 172800) return std::to_string(s / 3600) + "h";
  return std::to_string(s / 86400) + "d";
}

void PrintTable(const std::vector<DeadRow>& rows) {
  std::printf("%-20s %-32s %-24s %7s %6s  %s\n", "ID", "AGGREGATE", "EVENT_TYPE", "RETRIES", "AGE",
              "LAST_ERROR");
  // Columns are written by anyone: OneLine keeps each row on its own line and
  // escape sequences off the terminal.
  for (const auto& d : rows) {
    std::string agg = OneLine(d.aggregate.type) + "/" + std::to_string(d.aggregate.id);
    std::printf("%-20lld %-32s %-24s %7d %6s  %s\n", static_cast<long long>(d.id), agg.c_str(),
                OneLine(d.event_type).c_str(), d.retry_count, Age(d.age_s).c_str(),
                d.last_error ? OneLine(*d.last_error).c_str() : "-");
  }
}

// Who replayed, for the audit line: $USER, else the name of the process'
// user (a container or `kubectl exec` often has no $USER), and the user who
// ran sudo when that is someone else (else empty).
struct AuditUser {
  std::string user;
  std::string sudo_user;
};

AuditUser CurrentAuditUser() {
  AuditUser who;
  const char* env_user = std::getenv("USER");
  who.user = env_user ? env_user : "";
  if (who.user.empty()) {
    const struct passwd* pw = ::getpwuid(::geteuid());
    who.user = pw ? pw->pw_name : "uid:" + std::to_string(::geteuid());
  }
  const char* sudo_user = std::getenv("SUDO_USER");
  if (sudo_user && *sudo_user && who.user != sudo_user) who.sudo_user = sudo_user;
  return who;
}

// One audit line per replayed row, written whatever log.level says (LogAudit).
void AuditReplay(const ServiceConfig& service, const std::vector<DeadRow>& changed) {
  if (changed.empty()) return;
  const AuditUser user = CurrentAuditUser();
  for (const auto& d : changed) {
    std::vector<LogField> fields = {{"service", service.name},
                                    {"outbox_id", d.id},
                                    {"aggregate_type", d.aggregate.type},
                                    {"aggregate_id", d.aggregate.id},
                                    {"event_type", d.event_type},
                                    {"user", user.user}};
    if (!user.sudo_user.empty()) fields.emplace_back("sudo_user", user.sudo_user);
    if (const std::string trace_id = TraceId(d); !trace_id.empty())
      fields.emplace_back("trace_id", trace_id);
    LogAudit("audit: dead replay", fields);
  }
}

// The rows as a JSON array.
nlohmann::json JsonRows(const std::vector<DeadRow>& rows) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& d : rows) arr.push_back(ToJson(d));
  return arr;
}

// A failed statement of a dead command: said on stderr with its service.
int Failed(const ServiceConfig& service, const Status& s) {
  std::cerr << "service " << service.name << ": " << s.message() << "\n";
  return kExitFailure;
}

}  // namespace

int RunDeadList(const ServiceConfig& service, int limit, bool json) {
  std::vector<DeadRow> rows;
  Status s = ListDead(service.mysql, limit, &rows);
  if (!s.ok()) return Failed(service, s);
  if (json) {
    std::cout << Dump(JsonRows(rows)) << "\n";
  } else {
    PrintTable(rows);
    std::cout << rows.size() << " DEAD row(s)"
              << (static_cast<int>(rows.size()) == limit ? " (limit reached)" : "") << "\n";
  }
  return kExitOk;
}

int RunDeadReplay(const ServiceConfig& service, std::vector<int64_t> ids, bool all,
                  const std::optional<std::string>& event_type, bool dry_run, bool json) {
  // `--id 7 --id 7` is one row: count it once when reporting ids that were not DEAD.
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  DeadSelector sel{ids, event_type, all};
  std::vector<DeadRow> changed;
  Status s = ReplayDead(service.mysql, sel, dry_run, &changed);
  if (!s.ok()) return Failed(service, s);
  if (json) {
    std::cout << Dump(nlohmann::json{{"dry_run", dry_run}, {"replayed", JsonRows(changed)}})
              << "\n";
  } else {
    PrintTable(changed);
    std::cout << (dry_run ? "would replay " : "replayed ") << changed.size()
              << " DEAD row(s) -> NEW\n";
  }
  if (!dry_run) AuditReplay(service, changed);
  if (!ids.empty() && changed.size() < ids.size())
    std::cerr << (ids.size() - changed.size()) << " of the given id(s) "
              << (dry_run ? "are" : "were") << " not DEAD (already replayed, or no such row)\n";
  return kExitOk;
}

}  // namespace outbox
