// MysqlStore::Settle: every transition out of SENDING, fenced on the lease
// token (docs/DESIGN.md, "Lease token and fencing").

#include <cppconn/statement.h>

#include <algorithm>
#include <map>

#include "outbox/mysql_store.h"
#include "outbox/mysql_store_sql.h"

namespace outbox {

using mysql_sql::BindIds;
using mysql_sql::Bucket;
using mysql_sql::CeilMicros;
using mysql_sql::kDeadlineSql;
using mysql_sql::Placeholders;

int MysqlStore::SettleGroup(const std::string& lease_token, const std::vector<int64_t>& ids,
                            const std::string& set, bool find_stale, SettleResult* result) {
  if (ids.empty()) return 0;
  auto* ps = conn_.Prepare("UPDATE " + table_ + " SET " + set +
                           ", updated_at = NOW() WHERE id IN (" + Placeholders(Bucket(ids.size())) +
                           ") AND status = 'SENDING' AND next_retry_at = ?");
  unsigned next = BindIds(ps, 1, ids);
  ps->setString(next, lease_token);
  int n = ps->executeUpdate();
  result->applied += n;
  if (n >= static_cast<int>(ids.size())) return n;
  result->stale += static_cast<int>(ids.size()) - n;
  if (find_stale) FindStaleSent(lease_token, ids, result);
  return n;
}

void MysqlStore::FindStaleSent(const std::string& lease_token, const std::vector<int64_t>& ids,
                               SettleResult* result) {
  // Rare: someone else changed or deleted rows of the claim. The rows the
  // UPDATE applied are SENT under our token (SENT keeps next_retry_at); the
  // others were not ours any more.
  auto* q = conn_.Prepare("SELECT id FROM " + table_ + " WHERE id IN (" +
                          Placeholders(Bucket(ids.size())) +
                          ") AND status = 'SENT' AND next_retry_at = ?");
  unsigned qi = BindIds(q, 1, ids);
  q->setString(qi, lease_token);
  std::unique_ptr<sql::ResultSet> rs(q->executeQuery());
  std::vector<int64_t> applied;
  while (rs->next()) applied.push_back(rs->getInt64(1));
  std::sort(applied.begin(), applied.end());
  for (int64_t id : ids)
    if (!std::binary_search(applied.begin(), applied.end(), id)) result->stale_ids.push_back(id);
}

void MysqlStore::SettleSingle(const std::string& lease_token, const SettleOp& op,
                              SettleResult* result) {
  const bool le = schema_.has_last_error;
  const std::string err_set = le ? ", last_error = ?" : "";
  sql::PreparedStatement* ps;
  unsigned i = 1;
  if (op.kind == SettleKind::kRetry) {
    // Due no sooner than the backoff (see kDeadlineSql).
    ps = conn_.Prepare("UPDATE " + table_ +
                       " SET status = 'NEW', retry_count = retry_count + (retry_count < ?),"
                       " next_retry_at = " +
                       kDeadlineSql + ", updated_at = NOW()" + err_set +
                       " WHERE id = ? AND status = 'SENDING' AND next_retry_at = ?");
    ps->setInt64(i++, schema_.retry_count_max);
    ps->setInt64(i++, CeilMicros(op.backoff_ms));
  } else {
    ps = conn_.Prepare("UPDATE " + table_ +
                       " SET status = 'DEAD', retry_count = retry_count + (retry_count < ?),"
                       " updated_at = NOW()" +
                       err_set + " WHERE id = ? AND status = 'SENDING' AND next_retry_at = ?");
    ps->setInt64(i++, schema_.retry_count_max);
  }
  if (le) ps->setString(i++, mysql_sql::Utf8Prefix(op.error, schema_.last_error_max_len));
  ps->setInt64(i++, op.id);
  ps->setString(i++, lease_token);
  int n = ps->executeUpdate();
  result->applied += n;
  if (n == 0) {
    ++result->stale;
    result->stale_ids.push_back(op.id);
  }
}

Status MysqlStore::Settle(const std::string& lease_token, const std::vector<SettleOp>& ops,
                          SettleResult* result) {
  *result = SettleResult{};
  std::vector<int64_t> sent, released;
  std::vector<const SettleOp*> singles;
  for (const auto& op : ops) {
    if (op.kind == SettleKind::kSent)
      sent.push_back(op.id);
    else if (op.kind == SettleKind::kRelease)
      released.push_back(op.id);
    else
      singles.push_back(&op);
  }
  return Run("settle", [&] {
    // With one-row updates (retries, DEADs) the settle is one transaction:
    // it applies entirely or not at all.
    // Without them each group's UPDATE commits on its own (autocommit).
    const bool txn = !singles.empty();
    if (txn) Begin();
    const int sent_n = SettleGroup(lease_token, sent, "status = 'SENT'", true, result);
    const int released_n =
        SettleGroup(lease_token, released, "status = 'NEW', next_retry_at = NOW()", false, result);
    for (const SettleOp* op : singles) SettleSingle(lease_token, *op, result);
    if (txn) {
      Exec("COMMIT");
      in_txn_ = false;
      result->commits = result->applied > 0 ? 1 : 0;
    } else {
      result->commits = (sent_n > 0 ? 1 : 0) + (released_n > 0 ? 1 : 0);
    }
  });
}

void MysqlStore::SettleSentTokens(const TokenIds& first, const TokenIds* second,
                                  std::vector<int64_t>* stale_ids) {
  // Each token with its own id list: a row is SENT only under the claim
  // that holds it, as in SettleGroup. The primary key finds the rows.
  const std::string one =
      "(next_retry_at = ? AND id IN (" + Placeholders(Bucket(first.second.size())) + "))";
  const std::string two = second ? " OR (next_retry_at = ? AND id IN (" +
                                       Placeholders(Bucket(second->second.size())) + "))"
                                 : "";
  auto* ps = conn_.Prepare("UPDATE " + table_ +
                           " SET status = 'SENT', updated_at = NOW() WHERE status = 'SENDING' AND "
                           "(" +
                           one + two + ")");
  ps->setString(1, first.first);
  unsigned next = BindIds(ps, 2, first.second);
  size_t want = first.second.size();
  if (second) {
    ps->setString(next, second->first);
    BindIds(ps, next + 1, second->second);
    want += second->second.size();
  }
  if (static_cast<size_t>(ps->executeUpdate()) >= want) return;
  SettleResult found;  // rare: rows that were not ours any more
  FindStaleSent(first.first, first.second, &found);
  if (second) FindStaleSent(second->first, second->second, &found);
  stale_ids->insert(stale_ids->end(), found.stale_ids.begin(), found.stale_ids.end());
}

Status MysqlStore::SettleSent(const std::vector<SentGroup>& groups,
                              std::vector<SettleResult>* results) {
  // Claims made within the same second share their token (whole seconds):
  // a group of a few hundred ms has one or two, one statement.
  std::map<std::string, std::vector<int64_t>> by_token;
  for (const SentGroup& g : groups) {
    std::vector<int64_t>& ids = by_token[g.lease_token];
    ids.insert(ids.end(), g.ids.begin(), g.ids.end());
  }
  std::vector<TokenIds> tokens(by_token.begin(), by_token.end());
  std::vector<int64_t> stale;
  Status s = Run("settle", [&] {
    stale.clear();
    // More than two tokens (a group that spans seconds): one transaction.
    const bool txn = tokens.size() > 2;
    if (txn) Begin();
    for (size_t i = 0; i < tokens.size(); i += 2)
      SettleSentTokens(tokens[i], i + 1 < tokens.size() ? &tokens[i + 1] : nullptr, &stale);
    if (txn) {
      Exec("COMMIT");
      in_txn_ = false;
    }
  });
  if (!s.ok()) return s;
  std::sort(stale.begin(), stale.end());
  results->assign(groups.size(), SettleResult{});
  for (size_t i = 0; i < groups.size(); ++i) {
    SettleResult& r = (*results)[i];
    for (int64_t id : groups[i].ids) {
      if (std::binary_search(stale.begin(), stale.end(), id)) {
        ++r.stale;
        r.stale_ids.push_back(id);
      } else {
        ++r.applied;
      }
    }
  }
  return s;
}

}  // namespace outbox
