#include "inbox_store.h"

#include <cppconn/exception.h>
#include <cppconn/prepared_statement.h>
#include <cppconn/statement.h>
#include <mysql_driver.h>

#include <algorithm>

namespace inbox {
namespace {

std::string Describe(const sql::SQLException& e) {
  return "MySQL error " + std::to_string(e.getErrorCode()) + " (" + e.getSQLState() +
         "): " + e.what();
}

// Errors caused by this event's values, which no retry can fix (the
// consumer validates lengths first; these are the safety net). Everything
// else — a lost connection, a deadlock, a lock wait timeout, a read-only
// server, a missing grant or table — is the database's failure: the event
// waits for it, and is never dead-lettered because of it.
bool IsDataError(int code) {
  switch (code) {
    case 1048:  // column cannot be null
    case 1264:  // out of range value
    case 1292:  // truncated incorrect value
    case 1366:  // incorrect string value (bytes that are not valid utf8mb4)
    case 1406:  // data too long for column
      return true;
    default:
      return false;
  }
}

// The duplicate that means "already processed": uk_consumer_event, and only
// it. MariaDB names the key 'uk_consumer_event', MySQL 8 't_inbox.uk_consumer_event'.
// A duplicate PRIMARY KEY (an id collision) is an ordinary failure: retried
// with a new id.
bool IsInboxDuplicate(const sql::SQLException& e) {
  return e.getErrorCode() == 1062 &&
         std::string(e.what()).find("uk_consumer_event'") != std::string::npos;
}

}  // namespace

InboxStore::InboxStore(DbConfig db, std::string consumer, bool use_inbox)
    : db_(std::move(db)), consumer_(std::move(consumer)), use_inbox_(use_inbox) {}

InboxStore::~InboxStore() { Close(); }

void InboxStore::Close() {
  insert_inbox_.reset();
  apply_effect_.reset();
  if (!conn_) return;
  try {
    conn_->close();
  } catch (const sql::SQLException&) {
    // closing a broken connection fails; it is gone either way
  }
  conn_.reset();
}

// Repeats src/outbox/mysql_connection.cc's connection options on purpose: the
// example stands alone (a consumer copies it without the relay's sources).
bool InboxStore::Connect(std::string* error) {
  if (conn_) return true;
  sql::ConnectOptionsMap o;
  o["hostName"] = sql::SQLString(db_.host);
  o["port"] = db_.port;
  o["userName"] = sql::SQLString(db_.user);
  o["password"] = sql::SQLString(db_.password);
  o["schema"] = sql::SQLString(db_.database);
  o["OPT_CONNECT_TIMEOUT"] = std::max(1, db_.connect_timeout_ms / 1000);
  o["OPT_READ_TIMEOUT"] = std::max(1, db_.read_timeout_ms / 1000);
  o["OPT_WRITE_TIMEOUT"] = std::max(1, db_.read_timeout_ms / 1000);
  // Never reconnect silently: a reconnect in the middle of the transaction
  // would run the rest of it in autocommit mode.
  o["OPT_RECONNECT"] = false;
  const std::string& m = db_.tls_mode;
  o["OPT_SSL_MODE"] = m == "disabled"          ? sql::SSL_MODE_DISABLED
                      : m == "required"        ? sql::SSL_MODE_REQUIRED
                      : m == "verify_ca"       ? sql::SSL_MODE_VERIFY_CA
                      : m == "verify_identity" ? sql::SSL_MODE_VERIFY_IDENTITY
                                               : sql::SSL_MODE_PREFERRED;
  if (!db_.tls_ca.empty()) o["sslCA"] = sql::SQLString(db_.tls_ca);
  if (!db_.tls_cert.empty()) o["sslCert"] = sql::SQLString(db_.tls_cert);
  if (!db_.tls_key.empty()) o["sslKey"] = sql::SQLString(db_.tls_key);
  try {
    conn_.reset(sql::mysql::get_mysql_driver_instance()->connect(o));
    std::unique_ptr<sql::Statement> st(conn_->createStatement());
    // READ COMMITTED: the unique-key check of the inbox insert takes no gap
    // locks, so consumers inserting neighbouring keys do not deadlock.
    st->execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED");
    // Autocommit off for good: the first statement of each Apply starts its
    // transaction, COMMIT or ROLLBACK ends it. No BEGIN round trip.
    conn_->setAutoCommit(false);
    // Prepared once per connection: each Apply is then two statements and a
    // COMMIT, no parsing.
    insert_inbox_.reset(conn_->prepareStatement(
        "INSERT INTO t_inbox (id, event_key, event_type, consumer, processed_at) "
        "VALUES (UUID_SHORT() & 0x7FFFFFFFFFFFFFFF, ?, ?, ?, NOW())"));
    apply_effect_.reset(conn_->prepareStatement(
        "INSERT INTO t_aggregate_effect "
        "(aggregate_type, aggregate_id, applied, last_outbox_id, out_of_order) "
        "VALUES (?, ?, 1, ?, 0) ON DUPLICATE KEY UPDATE "
        "out_of_order = out_of_order + (? < last_outbox_id), "
        "applied = applied + 1, "
        "last_outbox_id = GREATEST(last_outbox_id, ?)"));
  } catch (const sql::SQLException& e) {
    Close();
    *error = "cannot connect to " + db_.user + "@" + db_.host + ":" + std::to_string(db_.port) +
             "/" + db_.database + ": " + Describe(e);
    return false;
  }
  return true;
}

ApplyResult InboxStore::Apply(const Event& ev, std::string* error) {
  if (!Connect(error)) return ApplyResult::kUnavailable;
  // One transaction, begun by the first statement (autocommit is off): the
  // inbox row and the effect commit together or not at all.
  try {
    if (use_inbox_) {
      // 1. Claim the event for this consumer. The unique key
      // uk_consumer_event decides: a second delivery of the event, from any
      // consumer process of this name, gets 1062 here (a concurrent one
      // waits for the first's transaction and then gets it). UUID_SHORT()
      // is unsigned and has its top bit set when server_id >= 128; the mask
      // keeps it a positive BIGINT.
      sql::PreparedStatement* ins = insert_inbox_.get();
      ins->setString(1, ev.event_key);
      ins->setString(2, ev.event_type);
      ins->setString(3, consumer_);
      try {
        ins->executeUpdate();
      } catch (const sql::SQLException& e) {
        if (!IsInboxDuplicate(e)) throw;
        conn_->rollback();
        return ApplyResult::kDuplicate;  // processed before: its effect is already committed
      }
    }
    // 2. The business effect, only for an event new to the inbox. It is a
    // counter on purpose (not idempotent by itself), so a missed dedupe
    // shows. The version check: an outbox_id below the highest one applied
    // is an event that arrived late; it is applied and counted. MySQL
    // evaluates the assignments left to right, each seeing the columns
    // already assigned: out_of_order must compare before last_outbox_id moves.
    sql::PreparedStatement* eff = apply_effect_.get();
    eff->setString(1, ev.aggregate_type);
    eff->setInt64(2, ev.aggregate_id);
    eff->setInt64(3, ev.outbox_id);
    eff->setInt64(4, ev.outbox_id);
    eff->setInt64(5, ev.outbox_id);
    eff->executeUpdate();
    if (before_commit_) before_commit_();
    // 3. COMMIT. If the answer is lost (the connection breaks during the
    // COMMIT) the outcome is unknown; retrying is still safe: had it
    // committed, the retry's inbox insert finds the duplicate.
    conn_->commit();
    return ApplyResult::kApplied;
  } catch (const sql::SQLException& e) {
    *error = Describe(e);
    const bool data = IsDataError(e.getErrorCode());
    try {
      conn_->rollback();
    } catch (const sql::SQLException&) {
      Close();  // the connection is broken; the server rolls the transaction back
    }
    if (!data) Close();  // reconnect next time: the session may be the problem
    return data ? ApplyResult::kRejected : ApplyResult::kUnavailable;
  }
}

}  // namespace inbox
