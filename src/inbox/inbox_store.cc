#include "inbox/inbox_store.h"

#include <cppconn/datatype.h>
#include <cppconn/exception.h>
#include <cppconn/prepared_statement.h>
#include <cppconn/resultset.h>
#include <cppconn/statement.h>
#include <mysql_driver.h>

#include <algorithm>
#include <sstream>

#include "common/mysql_error.h"
#include "common/mysql_options.h"
#include "inbox/event.h"  // SetTraceContext
#include "inbox/version_check.h"

namespace outbox::inbox {

std::string DescribeSqlError(const sql::SQLException& e) {
  return "MySQL error " + std::to_string(e.getErrorCode()) + " (" + e.getSQLState() +
         "): " + e.what();
}

// The store's session options as the relay's store sets them
// (common/mysql_options.h), and the TLS settings in the library's own words.
sql::ConnectOptionsMap ConnectOptions(const DbConfig& db_) {
  sql::ConnectOptionsMap o;
  SetStoreSessionOptions(db_, &o);
  const std::string& m = db_.tls_mode;
  o["OPT_SSL_MODE"] = m == "disabled"          ? sql::SSL_MODE_DISABLED
                      : m == "required"        ? sql::SSL_MODE_REQUIRED
                      : m == "verify_ca"       ? sql::SSL_MODE_VERIFY_CA
                      : m == "verify_identity" ? sql::SSL_MODE_VERIFY_IDENTITY
                                               : sql::SSL_MODE_PREFERRED;
  if (!db_.tls_ca.empty()) o["sslCA"] = sql::SQLString(db_.tls_ca);
  if (!db_.tls_cert.empty()) o["sslCert"] = sql::SQLString(db_.tls_cert);
  if (!db_.tls_key.empty()) o["sslKey"] = sql::SQLString(db_.tls_key);
  return o;
}

namespace {

// Errors caused by this event's values, which no retry can fix (the
// consumer validates lengths first; these are the safety net). Everything
// else — a lost connection, a deadlock, a lock wait timeout, a read-only
// server, a missing grant or table — is the database's failure: the event
// waits for it, and is never dead-lettered because of it.
bool IsDataError(int code) {
  for (MysqlError e :
       {MysqlError::kBadNull, MysqlError::kOutOfRange, MysqlError::kTruncatedWrongValue,
        MysqlError::kIncorrectString, MysqlError::kDataTooLong})
    if (IsMysqlError(code, e)) return true;
  return false;
}

// The duplicate that means "already processed": uk_consumer_event, and only
// it. MariaDB names the key 'uk_consumer_event', MySQL 8 't_inbox.uk_consumer_event'.
// A duplicate PRIMARY KEY (an id collision) is an ordinary failure: retried
// with a new id.
bool IsInboxDuplicate(const sql::SQLException& e) {
  return IsMysqlError(e.getErrorCode(), MysqlError::kDupEntry) &&
         std::string(e.what()).find("uk_consumer_event'") != std::string::npos;
}

}  // namespace

InboxStore::InboxStore(DbConfig db, std::string consumer, VersionCheck check, Handler& handler,
                       bool use_inbox)
    : db_(std::move(db)),
      consumer_(std::move(consumer)),
      check_(check),
      use_inbox_(use_inbox),
      handler_(handler),
      statement_cap_(static_cast<size_t>(std::max(1, db_.statement_cache))) {}

InboxStore::~InboxStore() { Close(); }

void InboxStore::Close() {
  for (auto* st : {&insert_inbox_, &lock_aggregate_, &read_aggregate_, &applied_aggregate_,
                   &stale_aggregate_, &park_gap_, &next_parked_, &delete_parked_, &inbox_row_})
    st->reset();
  handler_statements_.clear();
  recent_.clear();
  if (!conn_) return;
  try {
    conn_->close();
  } catch (const sql::SQLException&) {
    // closing a broken connection fails; it is gone either way
  }
  conn_.reset();
}

namespace {

// The statements of one connection, prepared once: each Apply is then a few
// round trips and a COMMIT, no parsing.
constexpr const char* kInsertInbox =
    "INSERT INTO t_inbox (id, event_key, event_type, consumer, processed_at) "
    "VALUES (UUID_SHORT() & 0x7FFFFFFFFFFFFFFF, ?, ?, ?, NOW())";
// newer and strict: the version check's state of the aggregate for this
// consumer (sql/t_inbox_aggregate.sql), created if new and locked (the
// duplicate-key update takes its exclusive lock) until COMMIT, so that two
// consumers holding events of one aggregate during a rebalance decide one
// after the other, each on the other's outcome. The library's own table:
// the handler never has to keep it.
constexpr const char* kLockAggregate =
    "INSERT INTO t_inbox_aggregate (consumer, aggregate_type, aggregate_id, updated_at) "
    "VALUES (?, ?, ?, NOW()) ON DUPLICATE KEY UPDATE last_version = last_version";
constexpr const char* kReadAggregate =
    "SELECT last_version, last_outbox_id FROM t_inbox_aggregate "
    "WHERE consumer = ? AND aggregate_type = ? AND aggregate_id = ?";
constexpr const char* kAppliedAggregate =
    "UPDATE t_inbox_aggregate SET last_version = GREATEST(last_version, ?), "
    "last_outbox_id = GREATEST(last_outbox_id, ?), updated_at = NOW() "
    "WHERE consumer = ? AND aggregate_type = ? AND aggregate_id = ?";
constexpr const char* kStaleAggregate =
    "UPDATE t_inbox_aggregate SET stale = stale + 1, updated_at = NOW() "
    "WHERE consumer = ? AND aggregate_type = ? AND aggregate_id = ?";
// Idempotent per source offset (uk_parked_source): a message parked again
// after a crash before its offset commit changes nothing.
constexpr const char* kPark =
    "INSERT INTO t_inbox_parked (consumer, reason, detail, source_topic, source_partition, "
    "source_offset, event_key, event_type, aggregate_type, aggregate_id, aggregate_version, "
    "outbox_id, message_key, headers, payload, parked_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NOW()) "
    "ON DUPLICATE KEY UPDATE detail = VALUES(detail)";
// idx_parked_aggregate finds the next version of one aggregate.
constexpr const char* kNextParked =
    "SELECT id, event_key, event_type, outbox_id, payload, source_topic, source_partition, "
    "source_offset, message_key, headers FROM t_inbox_parked "
    "WHERE consumer = ? AND aggregate_type = ? AND aggregate_id = ? AND aggregate_version = ? "
    "AND reason = 'version_gap' ORDER BY id LIMIT 1 FOR UPDATE";
constexpr const char* kDeleteParked = "DELETE FROM t_inbox_parked WHERE id = ?";
// uk_consumer_event: the event's inbox row as this transaction sees it
// (its own insert, not yet committed).
constexpr const char* kInboxRow = "SELECT 1 FROM t_inbox WHERE consumer = ? AND event_key = ?";

}  // namespace

bool InboxStore::Connect(std::string* error) {
  if (conn_) return true;
  sql::ConnectOptionsMap o = ConnectOptions(db_);
  try {
    conn_.reset(sql::mysql::get_mysql_driver_instance()->connect(o));
    std::unique_ptr<sql::Statement> st(conn_->createStatement());
    // READ COMMITTED: the unique-key check of the inbox insert takes no gap
    // locks, so consumers inserting neighbouring keys do not deadlock.
    st->execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED");
    // Autocommit off for good: the first statement of each Apply starts its
    // transaction, COMMIT or ROLLBACK ends it. No BEGIN round trip.
    conn_->setAutoCommit(false);
    insert_inbox_.reset(conn_->prepareStatement(kInsertInbox));
    lock_aggregate_.reset(conn_->prepareStatement(kLockAggregate));
    read_aggregate_.reset(conn_->prepareStatement(kReadAggregate));
    applied_aggregate_.reset(conn_->prepareStatement(kAppliedAggregate));
    stale_aggregate_.reset(conn_->prepareStatement(kStaleAggregate));
    park_gap_.reset(conn_->prepareStatement(kPark));
    next_parked_.reset(conn_->prepareStatement(kNextParked));
    delete_parked_.reset(conn_->prepareStatement(kDeleteParked));
    inbox_row_.reset(conn_->prepareStatement(kInboxRow));
  } catch (const sql::SQLException& e) {
    Close();
    connect_error_ = e.getErrorCode();
    *error = "cannot connect to " + db_.user + "@" + db_.host + ":" + std::to_string(db_.port) +
             "/" + db_.database + ": " + DescribeSqlError(e);
    return false;
  }
  return true;
}

ApplyResult InboxStore::Fail(const std::string& what, int code, std::string* error) {
  *error = what;
  const bool data = IsDataError(code);
  try {
    conn_->rollback();
  } catch (const sql::SQLException&) {
    Close();  // the connection is broken; the server rolls the transaction back
  }
  if (!data) Close();  // reconnect next time: the session may be the problem
  return data ? ApplyResult::kRejected : ApplyResult::kUnavailable;
}

namespace {

// "name: value" lines (ParkGap, HeaderLines) back into headers.
std::vector<std::pair<std::string, std::string>> HeadersOf(const std::string& lines) {
  std::vector<std::pair<std::string, std::string>> out;
  size_t from = 0;
  for (size_t end = lines.find('\n'); end != std::string::npos; end = lines.find('\n', from)) {
    const std::string line = lines.substr(from, end - from);
    const size_t colon = line.find(": ");
    if (colon != std::string::npos) out.emplace_back(line.substr(0, colon), line.substr(colon + 2));
    from = end + 1;
  }
  return out;
}

// The parked version of kNextParked's row as it was read from Kafka: its
// own key, headers, trace context, source and payload (*key and *payload
// hold what the views point to).
void ParkedEvent(sql::ResultSet& rs, Event* next, std::string* key, std::string* payload) {
  next->event_key = rs.getString(2);
  next->event_type = rs.getString(3);
  next->outbox_id = rs.getInt64(4);
  *payload = rs.getString(5);
  next->payload = *payload;
  next->source = {rs.getString(6), rs.getInt(7), rs.getInt64(8)};
  *key = rs.isNull(9) ? std::to_string(next->aggregate_id) : std::string(rs.getString(9));
  next->key = *key;
  next->headers = rs.isNull(10) ? decltype(next->headers){} : HeadersOf(rs.getString(10));
  std::string traceparent, tracestate;
  for (const auto& [name, value] : next->headers) {
    if (name == "traceparent") traceparent = value;
    if (name == "tracestate") tracestate = value;
  }
  SetTraceContext(std::move(traceparent), std::move(tracestate), next);
  ++next->aggregate_version;
}

}  // namespace

// A parked version's value, read as when it came: its schema was read
// then, and the cache keeps it, so this asks the registry only after a
// restart. One that cannot be read now rolls the transaction back and the
// partition waits (kRetryLater), whatever the reason: the event that fills
// the gap is not the one at fault.
void InboxStore::ReadParkedValue(Event* ev) {
  if (!value_reader_) {
    ReadWireHeader(ev);
    return;
  }
  const ValueRead v = value_reader_->Read(ev);
  if (v.kind != ValueRead::Kind::kOk)
    throw HandlerFailed{Status::Retriable("parked event " + ev->event_key + ": " + v.reason)};
}

// strict: the versions parked after `ev`, applied in order in this
// transaction, each row deleted as it is applied. Their inbox rows were
// written when they were parked. *max_outbox_id takes theirs.
int InboxStore::DrainParked(const Event& ev, int64_t* max_outbox_id) {
  int drained = 0;
  Event next = ev;
  for (;;) {
    next_parked_->setString(1, consumer_);
    next_parked_->setString(2, ev.aggregate_type);
    next_parked_->setInt64(3, ev.aggregate_id);
    next_parked_->setInt64(4, next.aggregate_version + 1);
    std::unique_ptr<sql::ResultSet> rs(next_parked_->executeQuery());
    if (!rs->next()) return drained;
    const int64_t id = rs->getInt64(1);
    std::string key, payload;  // what next's views point to, until ApplyEffect returns
    ParkedEvent(*rs, &next, &key, &payload);
    ReadParkedValue(&next);
    ApplyEffect(next);
    *max_outbox_id = std::max(*max_outbox_id, next.outbox_id);
    delete_parked_->setInt64(1, id);
    delete_parked_->executeUpdate();
    ++drained;
  }
}

// Binds (consumer, aggregate_type, aggregate_id) from `first` on.
void InboxStore::BindAggregate(sql::PreparedStatement& st, int first, const Event& ev) {
  st.setString(first, consumer_);
  st.setString(first + 1, ev.aggregate_type);
  st.setInt64(first + 2, ev.aggregate_id);
}

// The aggregate's row locked, then read: what was last applied.
AggregateState InboxStore::LockAggregate(const Event& ev) {
  BindAggregate(*lock_aggregate_, 1, ev);
  lock_aggregate_->executeUpdate();
  BindAggregate(*read_aggregate_, 1, ev);
  std::unique_ptr<sql::ResultSet> rs(read_aggregate_->executeQuery());
  if (!rs->next()) return {};
  return {rs->getInt64(1), rs->getInt64(2)};
}

// The event applied (and with strict the parked versions after it): the
// aggregate's state moves on to the newest of them.
ApplyResult InboxStore::ApplyInOrder(const Event& ev, int* drained) {
  ApplyEffect(ev);
  int64_t version = ev.aggregate_version, outbox_id = ev.outbox_id;
  if (check_ == VersionCheck::kStrict) {
    const int n = DrainParked(ev, &outbox_id);
    version += n;
    if (drained) *drained = n;
  }
  applied_aggregate_->setInt64(1, version);
  applied_aggregate_->setInt64(2, outbox_id);
  BindAggregate(*applied_aggregate_, 3, ev);
  applied_aggregate_->executeUpdate();
  return ApplyResult::kApplied;
}

ApplyResult InboxStore::Decide(const Event& ev, const Source& source, int* drained) {
  if (check_ == VersionCheck::kNone) {
    ApplyEffect(ev);
    return ApplyResult::kApplied;
  }
  const AggregateState last = LockAggregate(ev);
  switch (DecideVersion(check_, ev, last.version, last.outbox_id)) {
    case VersionAction::kApply:
      return ApplyInOrder(ev, drained);
    case VersionAction::kStale:
      BindAggregate(*stale_aggregate_, 1, ev);
      stale_aggregate_->executeUpdate();
      return ApplyResult::kStale;
    case VersionAction::kPark:
      break;
  }
  ParkGap(ev, source, last.version);
  return ApplyResult::kParked;
}

// strict: a later version than the next, parked with its payload until the
// gap before it fills (DrainParked).
void InboxStore::ParkGap(const Event& ev, const Source& source, int64_t last_version) {
  sql::PreparedStatement* p = park_gap_.get();
  std::istringstream payload{std::string(ev.payload)};
  p->setString(1, consumer_);
  p->setString(2, "version_gap");
  p->setString(3, "waits for version " + std::to_string(last_version + 1));
  p->setString(4, source.topic);
  p->setInt(5, source.partition);
  p->setInt64(6, source.offset);
  p->setString(7, ev.event_key);
  p->setString(8, ev.event_type);
  p->setString(9, ev.aggregate_type);
  p->setInt64(10, ev.aggregate_id);
  p->setInt64(11, ev.aggregate_version);
  p->setInt64(12, ev.outbox_id);
  // Its own key and headers, for the handler when the gap fills (ParkedEvent).
  std::string lines;
  for (const auto& [name, value] : ev.headers) lines += name + ": " + value + "\n";
  std::istringstream headers{lines};
  p->setString(13, std::string(ev.key));
  p->setBlob(14, &headers);
  p->setBlob(15, &payload);
  p->executeUpdate();
}

// 1. Claim the event for this consumer. The unique key uk_consumer_event
// decides: a second delivery of the event, from any consumer process of
// this name, gets 1062 here (a concurrent one waits for the first's
// transaction and then gets it). UUID_SHORT() is unsigned and has its top
// bit set when server_id >= 128; the mask keeps it a positive BIGINT.
// False for a duplicate, rolled back.
bool InboxStore::ClaimEvent(const Event& ev) {
  sql::PreparedStatement* ins = insert_inbox_.get();
  ins->setString(1, ev.event_key);
  ins->setString(2, ev.event_type);
  ins->setString(3, consumer_);
  try {
    ins->executeUpdate();
    return true;
  } catch (const sql::SQLException& e) {
    if (!IsInboxDuplicate(e)) throw;
    conn_->rollback();
    return false;
  }
}

ApplyResult InboxStore::Apply(const Event& ev, const Source& source, std::string* error,
                              int* drained) {
  if (drained) *drained = 0;
  if (!Connect(error)) return ApplyResult::kUnavailable;
  ++apply_seq_;
  // One transaction, begun by the first statement (autocommit is off): the
  // inbox row, the version check's outcome and the effect commit together
  // or not at all.
  try {
    // 1. The inbox row (ClaimEvent). A duplicate was processed before: its
    // effect is already committed.
    if (use_inbox_ && !ClaimEvent(ev)) return ApplyResult::kDuplicate;
    // 2. The version check and the effect, only for an event new to the
    // inbox. A stale or parked event keeps its inbox row: its next delivery
    // is a duplicate.
    const ApplyResult r = Decide(ev, source, drained);
    // A handler that caught a deadlock or a lost connection and returned
    // Ok anyway: what COMMIT would commit now is not the event's
    // transaction (its inbox row and the start of its effect are gone).
    std::string lost;
    if (r == ApplyResult::kApplied && use_inbox_ && !InboxRowHeld(ev, &lost))
      return LostTransaction(ev, lost, error);
    if (before_commit_ && r == ApplyResult::kApplied) before_commit_();
    // 3. COMMIT. If the answer is lost (the connection breaks during the
    // COMMIT) the outcome is unknown; retrying is still safe: had it
    // committed, the retry's inbox insert finds the duplicate.
    conn_->commit();
    return r;
  } catch (const sql::SQLException& e) {
    return Fail(DescribeSqlError(e), e.getErrorCode(), error);
  } catch (const HandlerFailed& f) {
    return HandlerFailure(f.status, error);
  }
}

}  // namespace outbox::inbox
