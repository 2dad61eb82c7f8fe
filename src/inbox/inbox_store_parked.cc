// InboxStore's side tables: t_inbox_parked (refused dead letters, and what
// the gaps' summary reads) and the inbox's retention.
#include <cppconn/datatype.h>
#include <cppconn/exception.h>
#include <cppconn/prepared_statement.h>
#include <cppconn/resultset.h>
#include <cppconn/statement.h>

#include <sstream>
#include <stdexcept>

#include "common/mysql_error.h"
#include "inbox/inbox_store.h"

namespace outbox::inbox {

ApplyResult InboxStore::Park(const Undeliverable& u, std::string* error) {
  if (!Connect(error)) return ApplyResult::kUnavailable;
  try {
    sql::PreparedStatement* p = park_gap_.get();
    std::istringstream headers{u.headers}, payload{std::string(u.payload)};
    p->setString(1, consumer_);
    p->setString(2, "undeliverable");
    p->setString(3, u.detail.substr(0, 1000));
    p->setString(4, u.source.topic);
    p->setInt(5, u.source.partition);
    p->setInt64(6, u.source.offset);
    for (int i = 7; i <= 9; ++i) p->setNull(i, sql::DataType::VARCHAR);
    for (int i = 10; i <= 12; ++i) p->setNull(i, sql::DataType::BIGINT);
    std::istringstream key{u.message_key.substr(0, 1024)};
    p->setBlob(13, &key);
    p->setBlob(14, &headers);
    p->setBlob(15, &payload);
    p->executeUpdate();
    conn_->commit();
    return ApplyResult::kParked;
  } catch (const sql::SQLException& e) {
    const ApplyResult r = Fail(DescribeSqlError(e), e.getErrorCode(), error);
    // A refused dead letter that cannot even be parked (a value the
    // database refuses) waits like an outage: it must not be lost.
    return r == ApplyResult::kRejected ? ApplyResult::kUnavailable : r;
  }
}

// What t_inbox_parked holds for this consumer, and its oldest gap.
void InboxStore::ReadParked(ParkedSummary* out) {
  std::unique_ptr<sql::PreparedStatement> q(conn_->prepareStatement(
      "SELECT reason, COUNT(*), TIMESTAMPDIFF(SECOND, MIN(parked_at), NOW()) "
      "FROM t_inbox_parked WHERE consumer = ? GROUP BY reason"));
  q->setString(1, consumer_);
  std::unique_ptr<sql::ResultSet> rs(q->executeQuery());
  *out = ParkedSummary{};
  while (rs->next()) {
    const bool gap = rs->getString(1) == "version_gap";
    (gap ? out->version_gaps : out->undeliverable) = rs->getInt64(2);
    if (gap) out->oldest_gap_age_s = rs->getInt64(3);
  }
  if (out->version_gaps == 0) return;
  std::unique_ptr<sql::PreparedStatement> g(conn_->prepareStatement(
      "SELECT p.aggregate_type, p.aggregate_id, p.aggregate_version, "
      "COALESCE(a.last_version, 0) FROM t_inbox_parked p LEFT JOIN t_inbox_aggregate a "
      "ON a.consumer = p.consumer AND a.aggregate_type = p.aggregate_type "
      "AND a.aggregate_id = p.aggregate_id "
      "WHERE p.consumer = ? AND p.reason = 'version_gap' ORDER BY p.parked_at, p.id LIMIT 1"));
  g->setString(1, consumer_);
  std::unique_ptr<sql::ResultSet> gr(g->executeQuery());
  if (gr->next())
    out->oldest_gap = gr->getString(1) + " " + std::to_string(gr->getInt64(2)) + ": version " +
                      std::to_string(gr->getInt64(3)) + " waits for version " +
                      std::to_string(gr->getInt64(4) + 1);
}

// idx_consumer_processed_at (sql/t_inbox_retention_index.sql) makes this a
// range scan; LIMIT keeps each delete's locks and undo small. A parked
// event's inbox row stays: deleting it would let a redelivery park the
// event a second time.
int64_t InboxStore::PurgeInbox(int retention_days, int batch) {
  std::unique_ptr<sql::PreparedStatement> d(conn_->prepareStatement(
      "DELETE FROM t_inbox WHERE consumer = ? AND processed_at < NOW() - INTERVAL ? DAY "
      "AND NOT EXISTS (SELECT 1 FROM t_inbox_parked p WHERE p.consumer = t_inbox.consumer "
      "AND p.event_key = t_inbox.event_key) ORDER BY processed_at LIMIT ?"));
  d->setString(1, consumer_);
  d->setInt(2, retention_days);
  d->setInt(3, batch);
  return d->executeUpdate();
}

bool InboxStore::Housekeep(int retention_days, int batch, ParkedSummary* out, std::string* error) {
  if (!Connect(error)) return false;
  try {
    ReadParked(out);
    if (retention_days > 0) out->purged_inbox_rows = PurgeInbox(retention_days, batch);
    conn_->commit();
    return true;
  } catch (const sql::SQLException& e) {
    Fail(DescribeSqlError(e), e.getErrorCode(), error);
    Close();
    return false;
  }
}

// A statement on each of the library's tables that reads no row: 1146
// names a table that is missing; any other failure is the database's.
// The statements Connect prepares name the tables too: a missing one fails
// the connect with 1146.
DatabaseCheck InboxStore::Check(std::string* error) {
  if (!Connect(error))
    return IsMysqlError(connect_error_, MysqlError::kNoSuchTable) ? DatabaseCheck::kMissingTable
                                                                  : DatabaseCheck::kDown;
  for (const char* table : {"t_inbox", "t_inbox_aggregate", "t_inbox_parked"}) {
    try {
      std::unique_ptr<sql::Statement> st(conn_->createStatement());
      std::unique_ptr<sql::ResultSet> rs(
          st->executeQuery(std::string("SELECT 1 FROM ") + table + " LIMIT 0"));
    } catch (const sql::SQLException& e) {
      *error = DescribeSqlError(e);
      Close();
      return IsMysqlError(e.getErrorCode(), MysqlError::kNoSuchTable) ? DatabaseCheck::kMissingTable
                                                                      : DatabaseCheck::kDown;
    }
  }
  try {
    conn_->commit();
  } catch (const sql::SQLException& e) {
    *error = DescribeSqlError(e);
    Close();
    return DatabaseCheck::kDown;
  }
  return DatabaseCheck::kOk;
}

sql::Connection& InboxStore::connection() {
  std::string error;
  if (!Connect(&error)) throw std::runtime_error(error);
  return *conn_;
}

}  // namespace outbox::inbox
