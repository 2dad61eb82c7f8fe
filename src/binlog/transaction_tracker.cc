#include "binlog/transaction_tracker.h"

#include <algorithm>
#include <cctype>

namespace outbox {
namespace binlog {

namespace {

// Case-insensitive "statement is `word`" or "starts with `word` and a space".
bool StartsWithWord(std::string_view statement, std::string_view word) {
  while (!statement.empty() && std::isspace(static_cast<unsigned char>(statement.front())))
    statement.remove_prefix(1);
  if (statement.size() < word.size()) return false;
  for (size_t i = 0; i < word.size(); ++i)
    if (std::toupper(static_cast<unsigned char>(statement[i])) != word[i]) return false;
  return statement.size() == word.size() ||
         std::isspace(static_cast<unsigned char>(statement[word.size()])) ||
         statement[word.size()] == ';';
}

bool IsNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' ||
         static_cast<unsigned char>(c) >= 0x80;
}

// The name in backquotes that ends at statement[close] (a backquote), with
// doubled backquotes undone; "" when it has no opening backquote.
std::string QuotedNameBefore(std::string_view statement, size_t close) {
  std::string reversed;
  size_t i = close;
  while (i > 0) {
    const char c = statement[--i];
    if (c != '`') {
      reversed += c;
    } else if (i > 0 && statement[i - 1] == '`') {
      reversed += '`';
      --i;
    } else {
      return std::string(reversed.rbegin(), reversed.rend());
    }
  }
  return "";
}

// What a QUERY event's statement does to the transaction around it.
enum class QueryKind {
  kBegin,   // one starts
  kEnd,     // it ends
  kEndAll,  // it ends, with rows logged elsewhere: wake every subscriber
  kNone,    // nothing to track
  kWrite,   // a statement-format write (or DDL)
};

QueryKind KindOf(std::string_view statement) {
  if (StartsWithWord(statement, "BEGIN") || StartsWithWord(statement, "XA START"))
    return QueryKind::kBegin;
  if (StartsWithWord(statement, "COMMIT") || StartsWithWord(statement, "XA PREPARE"))
    return QueryKind::kEnd;  // XA PREPARE: early (rows show at XA COMMIT), harmless
  if (StartsWithWord(statement, "ROLLBACK") && statement.find(" TO ") == std::string_view::npos)
    return QueryKind::kEnd;
  // XA COMMIT: its rows were logged with the XA PREPARE group, maybe long ago.
  if (StartsWithWord(statement, "XA COMMIT")) return QueryKind::kEndAll;
  if (StartsWithWord(statement, "XA END") || StartsWithWord(statement, "XA ROLLBACK") ||
      StartsWithWord(statement, "SAVEPOINT") || StartsWithWord(statement, "ROLLBACK"))
    return QueryKind::kNone;
  return QueryKind::kWrite;
}

}  // namespace

std::vector<std::string> QualifiedNames(std::string_view statement) {
  std::vector<std::string> names;
  for (size_t dot = statement.find('.'); dot != std::string_view::npos;
       dot = statement.find('.', dot + 1)) {
    std::string name;
    if (dot > 0 && statement[dot - 1] == '`') {
      name = QuotedNameBefore(statement, dot - 1);
    } else {
      size_t begin = dot;
      while (begin > 0 && IsNameChar(statement[begin - 1])) --begin;
      name = std::string(statement.substr(begin, dot - begin));
    }
    if (!name.empty() && std::find(names.begin(), names.end(), name) == names.end())
      names.push_back(std::move(name));
  }
  return names;
}

void TransactionTracker::OnGtid(bool standalone) {
  // A new group: whatever is pending lost its end marker; keep it, it is
  // handed out with this group (never dropped).
  in_transaction_ = !standalone;
}

bool TransactionTracker::OnQuery(std::string_view database, std::string_view statement,
                                 Commit* out) {
  switch (KindOf(statement)) {
    case QueryKind::kBegin:
      in_transaction_ = true;
      return false;
    case QueryKind::kEnd:
      return End(out);
    case QueryKind::kEndAll:
      pending_.all = true;
      return End(out);
    case QueryKind::kNone:
      return false;
    case QueryKind::kWrite:
      break;
  }
  // A statement-format write (or DDL): its default database and the ones it
  // names.
  const bool insert = !StartsWithWord(statement, "UPDATE") && !StartsWithWord(statement, "DELETE");
  if (!database.empty()) AddTable(database, "", insert);
  const std::vector<std::string> names = QualifiedNames(statement.substr(0, kStatementPrefix));
  for (const std::string& name : names) AddTable(name, "", insert);
  if (database.empty() && names.empty()) pending_.all = true;  // names no database
  return in_transaction_ ? false : End(out);
}

void TransactionTracker::OnTableMap(uint64_t table_id, std::string_view database,
                                    std::string_view table) {
  table_ids_[table_id] = Commit::Table{std::string(database), std::string(table)};
}

bool TransactionTracker::OnRows(uint64_t table_id, bool insert, bool statement_end, Commit* out) {
  auto it = table_ids_.find(table_id);
  if (it != table_ids_.end())
    AddTable(it->second.database, it->second.table, insert);
  else
    pending_.all = true;  // rows of a table never mapped: cannot say which
  return statement_end && !in_transaction_ ? End(out) : false;
}

bool TransactionTracker::OnXid(Commit* out) { return End(out); }

void TransactionTracker::OnUnknown() { pending_.all = true; }

bool TransactionTracker::Flush(Commit* out) { return End(out); }

bool TransactionTracker::End(Commit* out) {
  in_transaction_ = false;
  table_ids_.clear();
  if (pending_.empty()) return false;
  *out = std::move(pending_);
  pending_ = Commit{};
  return true;
}

void TransactionTracker::AddTable(std::string_view database, std::string_view table, bool insert) {
  Commit::Table t{std::string(database), std::string(table), insert};
  auto it = std::find(pending_.tables.begin(), pending_.tables.end(), t);
  if (it == pending_.tables.end())
    pending_.tables.push_back(std::move(t));
  else
    it->insert = it->insert || insert;
}

}  // namespace binlog
}  // namespace outbox
