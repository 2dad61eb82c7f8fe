// InboxStore's side of the handler (inbox_store.h): the Transaction it is
// given (the cache of its prepared statements), its Status turned into a
// rollback, and the check that what is about to commit is still the
// event's transaction.
#include <cppconn/exception.h>
#include <cppconn/prepared_statement.h>
#include <cppconn/resultset.h>

#include "common/mysql_error.h"
#include "inbox/inbox_log.h"
#include "inbox/inbox_store.h"

namespace outbox::inbox {

sql::PreparedStatement& InboxStore::Prepare(const std::string& statement) {
  if (auto it = handler_statements_.find(statement); it != handler_statements_.end()) {
    recent_.splice(recent_.begin(), recent_, it->second.at);
    it->second.used_in = apply_seq_;
    return *it->second.statement;
  }
  EvictStatements(statement_cap_ - 1);
  std::unique_ptr<sql::PreparedStatement> st = PrepareNew(statement);
  recent_.push_front(statement);
  CachedStatement& c = handler_statements_[statement];
  c = {std::move(st), apply_seq_, recent_.begin()};
  return *c.statement;
}

void InboxStore::EvictStatements(size_t keep) {
  // The running Apply holds references to the statements it used: those stay.
  while (handler_statements_.size() > keep && !recent_.empty() &&
         handler_statements_[recent_.back()].used_in != apply_seq_) {
    handler_statements_.erase(recent_.back());  // closes it on the server
    recent_.pop_back();
  }
}

// A server that refuses one more statement (its max_prepared_stmt_count
// reached by all its clients together) gets fewer from this connection
// from now on: half as many as it holds, the rest closed, and the
// statement is prepared again once. Were it left to the retries, the
// partition would wait for as long as the other clients keep theirs.
std::unique_ptr<sql::PreparedStatement> InboxStore::PrepareNew(const std::string& statement) {
  try {
    return std::unique_ptr<sql::PreparedStatement>(conn_->prepareStatement(statement));
  } catch (const sql::SQLException& e) {
    if (!IsMysqlError(e.getErrorCode(), MysqlError::kTooManyPrepared)) throw;
    statement_cap_ = std::max<size_t>(1, handler_statements_.size() / 2);
    EvictStatements(statement_cap_ - 1);
    log::Warn(
        "database: {}; this connection now keeps at most {} of the handler's prepared "
        "statements (mysql.statement_cache {}): raise the server's max_prepared_stmt_count, or "
        "lower mysql.statement_cache, or write statements whose text does not change with "
        "their values",
        DescribeSqlError(e), statement_cap_, db_.statement_cache);
    return std::unique_ptr<sql::PreparedStatement>(conn_->prepareStatement(statement));
  }
}

// The business effect of one event: the service's handler, on this
// transaction. An exception other than the database's is the handler's
// bug, not the database's failure: the event is poison (retried, then
// dead-lettered), and the consumer goes on.
void InboxStore::ApplyEffect(const Event& ev) {
  Status s = Status::Ok();
  try {
    s = handler_.Apply(*this, ev);
  } catch (const sql::SQLException&) {
    throw;
  } catch (const std::exception& e) {
    s = Status::Poison(std::string("the handler threw: ") + e.what());
  }
  if (!s.ok()) throw HandlerFailed{std::move(s)};
}

ApplyResult InboxStore::HandlerFailure(const Status& s, std::string* error) {
  *error = "handler: " + s.message();
  try {
    conn_->rollback();
  } catch (const sql::SQLException&) {
    Close();  // the connection is broken; the server rolls the transaction back
  }
  switch (s.code()) {
    case Status::Code::kRetriable:
      return ApplyResult::kRetryLater;
    case Status::Code::kPermanent:
      return ApplyResult::kDeadLetter;
    default:
      return ApplyResult::kRejected;
  }
}

// A deadlock rolls the whole transaction back, the inbox row with it, and
// a lost connection takes it along; a handler that catches either and
// returns Ok would otherwise have COMMIT commit what it ran after (half
// an effect, without its dedupe row). The inbox row, read in this
// transaction, is there exactly when the transaction is still the event's.
// Another consumer's row for the event, committed meanwhile, would be seen
// too (READ COMMITTED): that needs a rebalance during the handler's
// swallowed deadlock, and is not told apart.
bool InboxStore::InboxRowHeld(const Event& ev, std::string* why) {
  try {
    inbox_row_->setString(1, consumer_);
    inbox_row_->setString(2, ev.event_key);
    std::unique_ptr<sql::ResultSet> rs(inbox_row_->executeQuery());
    if (rs->next()) return true;
    *why = "its inbox row is gone: the transaction was rolled back (a deadlock?)";
  } catch (const sql::SQLException& e) {
    *why = "the connection failed: " + DescribeSqlError(e);
  }
  return false;
}

ApplyResult InboxStore::LostTransaction(const Event& ev, const std::string& why,
                                        std::string* error) {
  *error = "handler: event " + ev.event_key +
           " returned Ok after its transaction was rolled back under it (" + why +
           "); rolled back and tried again: let the handler's Connector/C++ exceptions through "
           "(docs/CONSUMERS.md, \"Library\")";
  try {
    conn_->rollback();
  } catch (const sql::SQLException&) {
    Close();  // the connection is broken; the server rolls the transaction back
  }
  return ApplyResult::kLostTransaction;
}

}  // namespace outbox::inbox
