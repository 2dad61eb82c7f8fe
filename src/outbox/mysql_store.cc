#include "outbox/mysql_store.h"

#include <cppconn/statement.h>

#include "common/log.h"
#include "outbox/mysql_store_factory.h"
#include "outbox/mysql_store_sql.h"

namespace outbox {

using mysql_sql::JsonAsText;
using mysql_sql::kDeadlineSql;

OutboxStorePtr NewMysqlStore(MysqlConfig config, ClockPtr clock) {
  return std::make_unique<MysqlStore>(std::move(config), std::move(clock));
}

MysqlStore::MysqlStore(MysqlConfig config, ClockPtr clock)
    : clock_(std::move(clock)), conn_(std::move(config)), table_(conn_.QualifiedTable()) {}

SessionInfo MysqlStore::Session() const {
  MutexLock lock(&session_mu_);
  return session_;
}

namespace {

// A demoted primary, or a replica that mysql.host still points at: every
// claim would fail with 1290. Refused, so readiness and the log say why and
// the caller's backoff retries until mysql.host leads to a primary.
Status ReadOnlyRefusal(const MysqlConnection& conn) {
  std::string switches;
  for (const auto& v : conn.server().read_only) switches += (switches.empty() ? "" : ", ") + v;
  return Status::Unavailable(
      "connected to a read-only server at " + conn.config().host + ":" +
      std::to_string(conn.config().port) + " (server " + conn.server().identity + ", " + switches +
      " ON): the relay needs a writable primary; it reconnects through mysql.host with backoff "
      "until a failover completes");
}

}  // namespace

Status MysqlStore::Connect() {
  if (conn_.connected()) return Status::Ok();
  Status s = conn_.Connect();
  if (!s.ok()) return s;
  // A new session's first batch claim scans from the start (DESIGN.md,
  // "Claim scheduling": a reconnect is a new pass).
  resume_ = ResumePoint{};
  if (!conn_.server().read_only.empty()) {
    Status refused = ReadOnlyRefusal(conn_);
    conn_.Close();
    return refused;
  }
  s = InspectTable(conn_, &schema_);
  if (!s.ok()) return s;
  if (!schema_.table_exists) {
    conn_.Close();
    return Status::Schema("table " + conn_.TableName() +
                          " does not exist (or the relay user cannot see it)");
  }
  if (!schema_.missing_columns.empty()) {
    std::string cols;
    for (const auto& m : schema_.missing_columns) cols += (cols.empty() ? "" : ", ") + m;
    conn_.Close();
    return Status::Schema("table " + conn_.TableName() + " is missing column(s): " + cols);
  }
  // Only sessions on a writable primary count: the identity changes from one
  // primary to the next, never to the read-only server in between.
  role_checked_at_ = clock_->Now();  // the connect just read the switches
  MutexLock lock(&session_mu_);
  ++session_.connects;
  session_.server_identity = conn_.server().identity;
  return Status::Ok();
}

void MysqlStore::Exec(const std::string& sql) {
  std::unique_ptr<sql::Statement> st(conn_.raw()->createStatement());
  st->execute(sql);
}

void MysqlStore::Begin() {
  Exec("START TRANSACTION");
  in_txn_ = true;
}

void MysqlStore::Rollback() {
  Exec("ROLLBACK");
  in_txn_ = false;
}

void MysqlStore::DropStaleSession() {
  // Idle connections are what wait_timeout, proxies and firewalls close; a
  // ping (one round trip, only after a second of idleness) finds out before
  // a statement fails and the service is reported down for a moment.
  constexpr auto kIdleBeforePing = std::chrono::seconds(1);
  // A failover demotes the server under open sessions, and a session that
  // only reads (a pass's scan, the gauges) never gets the read-only answer a
  // write gets: it would keep reading the old primary's frozen table. So at
  // most once a second, between transactions, a session asks the server
  // whether it is still writable; that question is the idle ping too.
  constexpr auto kRoleCheckEvery = std::chrono::seconds(1);
  const Clock::TimePoint now = clock_->Now();
  if (conn_.connected() && !in_txn_ &&
      (now - last_used_ > kIdleBeforePing || now - role_checked_at_ >= kRoleCheckEvery)) {
    role_checked_at_ = now;
    if (!conn_.StillWritable()) {
      // Gone (closed while idle) or demoted: the Connect() below opens a new
      // session through mysql.host, and refuses it if that is read-only.
      LogDebug("session closed or its server turned read-only; reconnecting",
               {{"table", conn_.TableName()}});
      conn_.Close();
    }
  }
}

void MysqlStore::RecoverFrom(const SqlError& err) {
  if (IsConnectionError(err) || NeedsFreshSession(err) || IsReadOnlyError(err)) {
    // Reconnecting re-inspects the table, so a dropped or altered table or
    // a new GRANT is picked up; without it a stale column list would fail
    // every statement forever. A read-only answer means this session is on
    // a demoted primary (a failover moved mysql.host, while open sessions
    // stay where they were): only a new connection can reach the new one.
    conn_.Close();
  } else if (in_txn_) {
    try {
      Exec("ROLLBACK");
    } catch (const sql::SQLException&) {
      conn_.Close();
    }
  }
  in_txn_ = false;
}

Status MysqlStore::Run(const char* what, const std::function<void()>& fn) {
  DropStaleSession();
  struct Touch {
    Clock& clock;
    Clock::TimePoint* at;
    ~Touch() { *at = clock.Now(); }
  } touch{*clock_, &last_used_};
  if (!conn_.connected()) {
    Status s = Connect();
    if (!s.ok()) return s;
  }
  try {
    fn();
    return Status::Ok();
  } catch (const sql::SQLException& e) {
    const SqlError err = SqlErrorOf(e);
    RecoverFrom(err);
    return SqlErrorStatus(std::string(what) + " on " + conn_.TableName(), err);
  }
}

std::string MysqlStore::SelectColumns(bool due_bodies_only) const {
  // The head read takes every unsent row, most of them other claims' rows:
  // their bodies stay on the server.
  const auto body = [&](const std::string& column, bool is_json) {
    const std::string text = JsonAsText(column, is_json);
    return due_bodies_only ? "IF(next_retry_at <= NOW(), " + text + ", NULL)" : text;
  };
  std::string cols = "id, aggregate_type, aggregate_id, event_type, event_key, ";
  cols += body("payload", schema_.payload_is_json);
  cols += ", retry_count, UNIX_TIMESTAMP(created_at), status, ";
  cols += schema_.has_topic ? "topic, " : "NULL, ";
  cols += schema_.has_headers ? body("headers", schema_.headers_is_json) : "NULL";
  cols += schema_.has_aggregate_version ? ", aggregate_version" : ", NULL";
  cols += schema_.has_traceparent ? ", traceparent" : ", NULL";
  cols += schema_.has_tracestate ? ", tracestate, " : ", NULL, ";
  // The lease token (the lease's end), computed once per statement on the
  // database clock.
  cols += kDeadlineSql;
  // The row's age on the database clock. TIMESTAMPDIFF works on DATETIME
  // values outside TIMESTAMP's range (UNIX_TIMESTAMP gives NULL or 0 there),
  // and both operands are in the session's zone, so the zone cancels out.
  cols += ", TIMESTAMPDIFF(MICROSECOND, created_at, NOW(6))";
  cols += schema_.has_schema_id ? ", schema_id" : ", NULL";
  return cols;
}

OutboxRow MysqlStore::ReadRow(sql::ResultSet* rs, std::string* lease_token) const {
  OutboxRow r;
  r.id = rs->getInt64(1);
  r.aggregate.type = rs->getString(2);
  r.aggregate.id = rs->getInt64(3);
  r.event_type = rs->getString(4);
  r.event_key = rs->getString(5);
  if (!rs->isNull(6)) r.payload = rs->getString(6);
  r.retry_count = rs->getInt(7);
  r.created_at_unix = rs->isNull(8) ? 0 : static_cast<int64_t>(rs->getDouble(8));
  r.reclaimed = rs->getString(9) == "SENDING";
  if (!rs->isNull(10)) r.topic = rs->getString(10);
  if (!rs->isNull(11)) r.headers = rs->getString(11);
  if (!rs->isNull(12)) r.aggregate_version = rs->getInt64(12);
  if (!rs->isNull(13)) r.traceparent = rs->getString(13);
  if (!rs->isNull(14)) r.tracestate = rs->getString(14);
  *lease_token = rs->getString(15);
  r.age_at_claim_us = rs->isNull(16) ? 0 : rs->getInt64(16);
  if (!rs->isNull(17)) r.schema_id = rs->getInt(17);
  return r;
}

void MysqlStore::ReadRows(sql::ResultSet* rs, ClaimedBatch* out, std::string* next_retry_at) const {
  while (rs->next()) {
    if (next_retry_at) *next_retry_at = rs->getString(kRowColumns + 1);
    OutboxRow r = ReadRow(rs, &out->lease_token);
    if (r.reclaimed) ++out->reclaimed;
    out->rows.push_back(std::move(r));
  }
}

Status MysqlStore::HasDue(bool include_expired, bool* due) {
  return Run("probe", [&] {
    auto* ps = conn_.Prepare("SELECT 1 FROM " + table_ + " WHERE status " +
                             (include_expired ? "IN ('NEW', 'SENDING')" : "= 'NEW'") +
                             " AND next_retry_at <= NOW() LIMIT 1");
    std::unique_ptr<sql::ResultSet> rs(ps->executeQuery());
    *due = rs->next();
  });
}

}  // namespace outbox
