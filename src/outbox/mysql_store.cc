#include "outbox/mysql_store.h"

#include <cppconn/statement.h>
#include <spdlog/spdlog.h>

#include <algorithm>

namespace outbox {

namespace {
// A deadline `ms` from now on the database clock, as next_retry_at holds it
// (whole seconds): NOW(6) + ms rounded *up* to a whole second, so it is never
// sooner than `ms`, at most a second later. Bind CeilMicros(ms) to its `?`.
// Truncating NOW() instead cut up to a second off every deadline: a lease
// lost more than the margin the publish budget keeps (half the lease minus a
// second to start chain messages, half for the last one to time out), and a
// backoff under a second was none at all.
constexpr const char* kDeadlineSql =
    "DATE_FORMAT(NOW(6) + INTERVAL ? MICROSECOND, '%Y-%m-%d %H:%i:%s')";
int64_t CeilMicros(int64_t ms) { return ms * 1000 + 999999; }

// At most `max_chars` characters of `s` (the column's length is in
// characters), cut at a character boundary, invalid UTF-8 bytes replaced by
// '?': a strict server refuses a split character, and a settle it refuses
// would be retried forever.
std::string Utf8Prefix(const std::string& s, size_t max_chars) {
  std::string out;
  size_t chars = 0;
  for (size_t i = 0; i < s.size() && chars < max_chars; ++chars) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    bool ok = len > 0 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) >> 6) == 2;
    if (ok) {
      out.append(s, i, len);
      i += len;
    } else {
      out += '?';
      ++i;
    }
  }
  return out;
}
}  // namespace

MysqlStore::MysqlStore(MysqlConfig config)
    : conn_(std::move(config)), table_(conn_.QualifiedTable()) {}

Status MysqlStore::Connect() {
  if (conn_.connected()) return Status::Ok();
  Status s = conn_.Connect();
  if (!s.ok()) return s;
  s = InspectTable(conn_, &schema_);
  if (!s.ok()) return s;
  const MysqlConfig& c = conn_.config();
  if (!schema_.table_exists) {
    conn_.Close();
    return Status::Error("table " + c.database + "." + c.table +
                         " does not exist (or the relay user cannot see it)");
  }
  if (!schema_.missing_columns.empty()) {
    std::string cols;
    for (const auto& m : schema_.missing_columns) cols += (cols.empty() ? "" : ", ") + m;
    conn_.Close();
    return Status::Error("table " + c.database + "." + c.table + " is missing column(s): " + cols);
  }
  return Status::Ok();
}

void MysqlStore::Disconnect() { conn_.Close(); }

void MysqlStore::Exec(const std::string& sql) {
  std::unique_ptr<sql::Statement> st(conn_.raw()->createStatement());
  st->execute(sql);
}

template <typename Fn>
Status MysqlStore::Run(const char* what, Fn&& fn) {
  // Idle connections are what wait_timeout, proxies and firewalls close; a
  // ping (one round trip, only after a second of idleness) finds out before
  // a statement fails and the service is reported down for a moment.
  constexpr auto kIdleBeforePing = std::chrono::seconds(1);
  const auto now = std::chrono::steady_clock::now();
  if (conn_.connected() && !in_txn_ && now - last_used_ > kIdleBeforePing && !conn_.Alive()) {
    spdlog::debug("{}.{}: idle connection was closed by the server; reconnecting",
                  conn_.config().database, conn_.config().table);
    conn_.Close();
  }
  struct Touch {
    std::chrono::steady_clock::time_point* at;
    ~Touch() { *at = std::chrono::steady_clock::now(); }
  } touch{&last_used_};
  if (!conn_.connected()) {
    Status s = Connect();
    if (!s.ok()) return s;
  }
  try {
    fn();
    return Status::Ok();
  } catch (const sql::SQLException& e) {
    std::string msg = std::string(what) + " on " + conn_.config().database + "." +
                      conn_.config().table + ": " + DescribeSqlError(e) + SqlErrorHint(e);
    if (IsConnectionError(e) || NeedsFreshSession(e)) {
      // Reconnecting re-inspects the table, so a dropped or altered table or
      // a new GRANT is picked up; without it a stale column list would fail
      // every statement forever.
      conn_.Close();
    } else if (in_txn_) {
      try {
        Exec("ROLLBACK");
      } catch (const sql::SQLException&) {
        conn_.Close();
      }
    }
    in_txn_ = false;
    return Status::Error(msg);
  }
}

std::string MysqlStore::Placeholders(size_t n) {
  std::string s;
  s.reserve(n * 2);
  for (size_t i = 0; i < n; ++i) s += i ? ",?" : "?";
  return s;
}

size_t MysqlStore::Bucket(size_t n) {
  // A few fixed IN-list sizes keep the prepared-statement cache small.
  size_t b = 1;
  while (b < n && b < 1024) b *= 2;
  if (b >= n) return b;
  return (n + 1023) / 1024 * 1024;
}

unsigned MysqlStore::BindIds(sql::PreparedStatement* ps, unsigned first,
                             const std::vector<int64_t>& ids) {
  size_t n = Bucket(ids.size());
  for (size_t i = 0; i < n; ++i) ps->setInt64(first + i, ids[std::min(i, ids.size() - 1)]);
  return first + static_cast<unsigned>(n);
}

std::string MysqlStore::SelectColumns() const {
  std::string cols =
      "id, aggregate_type, aggregate_id, event_type, event_key, payload, retry_count, "
      "UNIX_TIMESTAMP(created_at), status, ";
  cols += schema_.has_topic ? "topic, " : "NULL, ";
  cols += schema_.has_headers ? "headers, " : "NULL, ";
  // The lease deadline, computed once per statement on the database clock.
  cols += kDeadlineSql;
  return cols;
}

void MysqlStore::ReadRows(sql::ResultSet* rs, ClaimedBatch* out, std::string* last_col13) const {
  while (rs->next()) {
    if (last_col13) *last_col13 = rs->getString(13);
    OutboxRow r;
    r.id = rs->getInt64(1);
    r.aggregate.type = rs->getString(2);
    r.aggregate.id = rs->getInt64(3);
    r.event_type = rs->getString(4);
    r.event_key = rs->getString(5);
    r.payload = rs->getString(6);
    r.retry_count = rs->getInt(7);
    r.created_at_unix = rs->isNull(8) ? 0 : static_cast<int64_t>(rs->getDouble(8));
    r.reclaimed = rs->getString(9) == "SENDING";
    if (!rs->isNull(10)) r.topic = rs->getString(10);
    if (!rs->isNull(11)) r.headers = rs->getString(11);
    out->lease_token = rs->getString(12);
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

Status MysqlStore::ClaimDue(int limit, int64_t lease_ms, bool include_expired, ClaimedBatch* out) {
  *out = ClaimedBatch{};
  return Run("claim", [&] {
    Exec("START TRANSACTION");
    in_txn_ = true;
    // Expired leases first: a relay that died must not starve behind new work.
    if (include_expired) {
      auto* ps = conn_.Prepare("SELECT " + SelectColumns() + " FROM " + table_ +
                               " WHERE status = 'SENDING' AND next_retry_at <= NOW()"
                               " ORDER BY next_retry_at, id LIMIT ? FOR UPDATE SKIP LOCKED");
      ps->setInt64(1, CeilMicros(lease_ms));
      ps->setInt(2, limit);
      std::unique_ptr<sql::ResultSet> rs(ps->executeQuery());
      ReadRows(rs.get(), out);
    }
    bool next_resume = false;
    int64_t next_after_id = 0;
    std::string next_after_at;
    int left = limit - static_cast<int>(out->rows.size());
    if (left > 0) {
      // A claimed row's old entry stays in the NEW range of the status index,
      // delete-marked, until purge removes it, and a scan from the start of
      // the range walks over all of them (~1 us each: tens of ms per claim
      // while a backlog drains). So a claim resumes after the last row the
      // previous one took, in index order. A claim with include_expired (every
      // second) or after a short batch scans from the start again, which picks
      // up rows committed behind that position (a smaller id in the same
      // second, a row another relay skipped and then released).
      const std::string cols = "SELECT " + SelectColumns() +
                               ", DATE_FORMAT(next_retry_at, '%Y-%m-%d %H:%i:%s') FROM " + table_;
      const bool resume = resume_ && !include_expired && schema_.has_status_index;
      sql::PreparedStatement* ps;
      if (resume) {
        ps = conn_.Prepare(cols + " FORCE INDEX (" + QuoteIdent(schema_.status_index) +
                           ") WHERE status = 'NEW' AND ((next_retry_at = ? AND id > ?) OR"
                           " (next_retry_at > ? AND next_retry_at <= NOW()))"
                           " ORDER BY next_retry_at, id LIMIT ? FOR UPDATE SKIP LOCKED");
        ps->setInt64(1, CeilMicros(lease_ms));
        ps->setString(2, resume_after_at_);
        ps->setInt64(3, resume_after_id_);
        ps->setString(4, resume_after_at_);
        ps->setInt(5, left);
      } else {
        ps = conn_.Prepare(cols +
                           " WHERE status = 'NEW' AND next_retry_at <= NOW()"
                           " ORDER BY next_retry_at, id LIMIT ? FOR UPDATE SKIP LOCKED");
        ps->setInt64(1, CeilMicros(lease_ms));
        ps->setInt(2, left);
      }
      std::unique_ptr<sql::ResultSet> rs(ps->executeQuery());
      ClaimedBatch fresh;
      std::string last_at;
      ReadRows(rs.get(), &fresh, &last_at);
      // Resume only after a full batch; a short one reached the range's end.
      if (static_cast<int>(fresh.rows.size()) == left) {
        next_resume = true;
        next_after_id = fresh.rows.back().id;
        next_after_at = last_at;
      }
      // Both SELECTs ran in one transaction a moment apart; the later deadline
      // is the token for all (a second at most beyond the first's lease).
      if (!fresh.rows.empty()) {
        if (out->lease_token < fresh.lease_token) out->lease_token = fresh.lease_token;
        for (auto& r : fresh.rows) out->rows.push_back(std::move(r));
      }
    }
    resume_ = false;
    if (out->rows.empty()) {
      Exec("ROLLBACK");
      in_txn_ = false;
      return;
    }
    std::vector<int64_t> ids;
    ids.reserve(out->rows.size());
    for (const auto& r : out->rows) ids.push_back(r.id);
    MarkSendingAndCommit(out->lease_token, ids);
    resume_ = next_resume;
    resume_after_id_ = next_after_id;
    resume_after_at_ = next_after_at;
  });
}

void MysqlStore::MarkSendingAndCommit(const std::string& lease_token,
                                      const std::vector<int64_t>& ids) {
  auto* up = conn_.Prepare("UPDATE " + table_ +
                           " SET status = 'SENDING', next_retry_at = ?, updated_at = NOW()"
                           " WHERE id IN (" +
                           Placeholders(Bucket(ids.size())) + ")");
  up->setString(1, lease_token);
  BindIds(up, 2, ids);
  up->executeUpdate();
  Exec("COMMIT");
  in_txn_ = false;
}

Status MysqlStore::BeginSnapshot() {
  return Run("begin pass snapshot", [&] {
    if (in_txn_) Exec("ROLLBACK");
    // The session runs READ COMMITTED (a fresh view per statement); the
    // pass needs one view for all its statements.
    Exec("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");
    Exec("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY");
    in_txn_ = true;
  });
}

void MysqlStore::EndSnapshot() {
  if (in_txn_ && conn_.connected()) {
    try {
      Exec("COMMIT");
    } catch (const sql::SQLException&) {
      conn_.Close();
    }
  }
  in_txn_ = false;
}

Status MysqlStore::MinPendingId(std::optional<int64_t>* id) {
  return Run("probe", [&] {
    auto* ps =
        conn_.Prepare("SELECT MIN(id) FROM " + table_ + " WHERE status IN ('NEW', 'SENDING')");
    std::unique_ptr<sql::ResultSet> rs(ps->executeQuery());
    id->reset();
    if (rs->next() && !rs->isNull(1)) *id = rs->getInt64(1);
  });
}

Status MysqlStore::DeadHeads(std::vector<DeadHead>* out) {
  out->clear();
  return Run("read DEAD aggregates", [&] {
    // Grouping the DEAD rows by aggregate reads every one of them from the
    // table (1-2 s per pass with 100,000 DEAD rows after an incident). The
    // set changes rarely, so first a fingerprint of it from the status index
    // alone (about a tenth of that); the grouping runs only when it changed,
    // and at least once a minute.
    auto* fp = conn_.Prepare(
        "SELECT CONCAT(COUNT(*), '/', COALESCE(SUM(id), 0), '/', COALESCE(BIT_XOR(CRC32(id)), 0))"
        " FROM " +
        table_ + " WHERE status = 'DEAD'");
    std::unique_ptr<sql::ResultSet> frs(fp->executeQuery());
    std::string fingerprint = frs->next() ? frs->getString(1) : "";
    auto now = std::chrono::steady_clock::now();
    if (!dead_fingerprint_.empty() && fingerprint == dead_fingerprint_ &&
        now - dead_read_at_ < std::chrono::minutes(1)) {
      *out = dead_heads_;
      return;
    }
    dead_fingerprint_.clear();
    dead_heads_.clear();
    if (fingerprint.rfind("0/", 0) != 0) {
      auto* ps = conn_.Prepare("SELECT aggregate_type, aggregate_id, MIN(id) FROM " + table_ +
                               " WHERE status = 'DEAD' GROUP BY aggregate_type, aggregate_id");
      std::unique_ptr<sql::ResultSet> rs(ps->executeQuery());
      while (rs->next())
        dead_heads_.push_back({AggregateKey{rs->getString(1), rs->getInt64(2)}, rs->getInt64(3)});
    }
    dead_fingerprint_ = fingerprint;
    dead_read_at_ = now;
    *out = dead_heads_;
  });
}

Status MysqlStore::ScanWindow(int64_t from_id, int limit, std::vector<WindowRow>* out) {
  out->clear();
  return Run("scan", [&] {
    // The planner needs every unsent row from the cursor on, in id order, to
    // know which events head their aggregates. Two ways to read them:
    // - few unsent rows (the steady state): the status index lists them all
    //   in one short range read, however many SENT rows lie between them (one
    //   old row waiting out a 5-minute backoff must not make every pass walk
    //   the primary key across everything written since);
    // - a backlog larger than a page: a primary-key range from the cursor,
    //   where nearly every row is unsent. Later pages of such a pass go there
    //   directly.
    constexpr const char* kColumns =
        "SELECT id, aggregate_type, aggregate_id, status = 'SENDING', next_retry_at <= NOW() FROM ";
    auto read = [&](sql::PreparedStatement* ps) {
      std::unique_ptr<sql::ResultSet> rs(ps->executeQuery());
      while (rs->next()) {
        WindowRow w;
        w.id = rs->getInt64(1);
        w.aggregate.type = rs->getString(2);
        w.aggregate.id = rs->getInt64(3);
        w.sending = rs->getInt(4) != 0;
        w.due = rs->getInt(5) != 0;
        out->push_back(std::move(w));
      }
    };
    bool continuing_dense = last_scan_dense_ && from_id > last_scan_from_;
    last_scan_from_ = from_id;
    if (!continuing_dense && schema_.has_status_index) {
      auto* ps = conn_.Prepare(std::string(kColumns) + table_ + " FORCE INDEX (" +
                               QuoteIdent(schema_.status_index) +
                               ") WHERE status IN ('NEW', 'SENDING') AND id >= ? LIMIT ?");
      ps->setInt64(1, from_id);
      ps->setInt(2, limit + 1);
      read(ps);
      last_scan_dense_ = static_cast<int>(out->size()) > limit;
      if (!last_scan_dense_) {
        std::sort(out->begin(), out->end(),
                  [](const WindowRow& a, const WindowRow& b) { return a.id < b.id; });
        return;
      }
      out->clear();
    }
    auto* ps = conn_.Prepare(std::string(kColumns) + table_ +
                             " FORCE INDEX (PRIMARY) WHERE id >= ? AND status IN ('NEW', 'SENDING')"
                             " ORDER BY id LIMIT ?");
    ps->setInt64(1, from_id);
    ps->setInt(2, limit);
    read(ps);
  });
}

Status MysqlStore::ClaimIds(const std::vector<int64_t>& ids, int64_t lease_ms,
                            const ChooseFn& choose, ClaimedBatch* out) {
  *out = ClaimedBatch{};
  if (ids.empty()) return Status::Ok();
  return Run("claim", [&] {
    Exec("START TRANSACTION");
    in_txn_ = true;
    auto* ps = conn_.Prepare("SELECT " + SelectColumns() + " FROM " + table_ + " WHERE id IN (" +
                             Placeholders(Bucket(ids.size())) +
                             ") AND status IN ('NEW', 'SENDING') AND next_retry_at <= NOW()"
                             " ORDER BY id FOR UPDATE SKIP LOCKED");
    ps->setInt64(1, CeilMicros(lease_ms));
    BindIds(ps, 2, ids);
    std::unique_ptr<sql::ResultSet> rs(ps->executeQuery());
    ClaimedBatch locked;
    ReadRows(rs.get(), &locked);
    std::vector<int64_t> chosen = choose(locked.rows);
    if (chosen.empty()) {
      Exec("ROLLBACK");
      in_txn_ = false;
      return;
    }
    std::sort(chosen.begin(), chosen.end());
    out->lease_token = locked.lease_token;
    for (auto& r : locked.rows) {
      if (std::binary_search(chosen.begin(), chosen.end(), r.id)) {
        if (r.reclaimed) ++out->reclaimed;
        out->rows.push_back(std::move(r));
      }
    }
    MarkSendingAndCommit(out->lease_token, chosen);
  });
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
    auto group = [&](const std::vector<int64_t>& ids, const std::string& set, bool find_stale) {
      if (ids.empty()) return;
      auto* ps = conn_.Prepare(
          "UPDATE " + table_ + " SET " + set + ", updated_at = NOW() WHERE id IN (" +
          Placeholders(Bucket(ids.size())) + ") AND status = 'SENDING' AND next_retry_at = ?");
      unsigned next = BindIds(ps, 1, ids);
      ps->setString(next, lease_token);
      int n = ps->executeUpdate();
      result->applied += n;
      if (n < static_cast<int>(ids.size())) {
        result->stale += static_cast<int>(ids.size()) - n;
        if (find_stale) {
          // Rare: someone else changed or deleted rows of the claim. The rows
          // this UPDATE applied are SENT under our token (SENT keeps
          // next_retry_at); the others were not ours any more.
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
            if (!std::binary_search(applied.begin(), applied.end(), id))
              result->stale_ids.push_back(id);
        }
      }
    };
    bool txn = !singles.empty();
    if (txn) {
      Exec("START TRANSACTION");
      in_txn_ = true;
    }
    group(sent, "status = 'SENT'", true);
    group(released, "status = 'NEW', next_retry_at = NOW()", false);
    const bool le = schema_.has_last_error;
    const std::string err_set = le ? ", last_error = ?" : "";
    for (const SettleOp* op : singles) {
      sql::PreparedStatement* ps;
      unsigned i = 1;
      if (op->kind == SettleKind::kRetry) {
        // Due no sooner than the backoff (see kDeadlineSql).
        ps = conn_.Prepare("UPDATE " + table_ +
                           " SET status = 'NEW', retry_count = retry_count + (retry_count < ?),"
                           " next_retry_at = " +
                           kDeadlineSql + ", updated_at = NOW()" + err_set +
                           " WHERE id = ? AND status = 'SENDING' AND next_retry_at = ?");
        ps->setInt64(i++, schema_.retry_count_max);
        ps->setInt64(i++, CeilMicros(op->backoff_ms));
      } else {
        ps = conn_.Prepare("UPDATE " + table_ +
                           " SET status = 'DEAD', retry_count = retry_count + (retry_count < ?),"
                           " updated_at = NOW()" +
                           err_set + " WHERE id = ? AND status = 'SENDING' AND next_retry_at = ?");
        ps->setInt64(i++, schema_.retry_count_max);
      }
      if (le) ps->setString(i++, Utf8Prefix(op->error, schema_.last_error_max_len));
      ps->setInt64(i++, op->id);
      ps->setString(i++, lease_token);
      int n = ps->executeUpdate();
      result->applied += n;
      if (n == 0) {
        ++result->stale;
        result->stale_ids.push_back(op->id);
      }
    }
    if (txn) {
      Exec("COMMIT");
      in_txn_ = false;
    }
  });
}

Status MysqlStore::ReadStats(TableStats* out) {
  *out = TableStats{};
  return Run("read table gauges", [&] {
    auto* ps = conn_.Prepare(
        "SELECT COUNT(*), COALESCE(TIMESTAMPDIFF(SECOND, MIN(created_at), NOW()), 0) FROM " +
        table_ + " WHERE status IN ('NEW', 'SENDING')");
    std::unique_ptr<sql::ResultSet> rs(ps->executeQuery());
    if (rs->next()) {
      out->backlog = rs->getInt64(1);
      out->oldest_unsent_age_s = std::max<double>(0, static_cast<double>(rs->getInt64(2)));
    }
    auto* dead = conn_.Prepare("SELECT COUNT(*) FROM " + table_ + " WHERE status = 'DEAD'");
    std::unique_ptr<sql::ResultSet> drs(dead->executeQuery());
    if (drs->next()) out->dead = drs->getInt64(1);
    // Index ranges around the four known values: cheap, unlike NOT IN.
    auto* unknown = conn_.Prepare(
        "SELECT COUNT(*) FROM " + table_ +
        " WHERE status < 'DEAD' OR (status > 'DEAD' AND status < 'NEW')"
        " OR (status > 'NEW' AND status < 'SENDING') OR (status > 'SENDING' AND status < 'SENT')"
        " OR status > 'SENT'");
    std::unique_ptr<sql::ResultSet> urs(unknown->executeQuery());
    if (urs->next()) out->unknown_status = urs->getInt64(1);
  });
}

Status MysqlStore::CountBlockedAggregates(int64_t* out) {
  *out = 0;
  return Run("count blocked aggregates", [&] {
    // The DEAD heads (few) become a keyed derived table; the unsent rows are
    // read by the status index, as the backlog query reads them, and looked
    // up in it. (On 200,000 unsent rows this took about 1.5x the backlog
    // query; grouping all unsent rows took 3x.)
    auto* blocked = conn_.Prepare(
        "SELECT COUNT(DISTINCT d.aggregate_type, d.aggregate_id) FROM (SELECT aggregate_type,"
        " aggregate_id, MIN(id) AS dead_id FROM " +
        table_ + " WHERE status = 'DEAD' GROUP BY aggregate_type, aggregate_id) d JOIN " + table_ +
        " u ON u.aggregate_type = d.aggregate_type AND u.aggregate_id = d.aggregate_id"
        " AND u.id > d.dead_id WHERE u.status IN ('NEW', 'SENDING')");
    std::unique_ptr<sql::ResultSet> rs(blocked->executeQuery());
    if (rs->next()) *out = rs->getInt64(1);
  });
}

Status MysqlStore::DeleteSentBatch(int days, int limit, int64_t* cursor, int64_t* deleted,
                                   bool* done) {
  *deleted = 0;
  *done = false;
  return Run("retention", [&] {
    // Bound the chunk by primary key first, so the DELETE locks a short,
    // known id range and never scans the table.
    auto* bound = conn_.Prepare(
        "SELECT MAX(id), COUNT(*), SUM(created_at < NOW() - INTERVAL ? DAY) FROM (SELECT id, "
        "created_at FROM " +
        table_ + " FORCE INDEX (PRIMARY) WHERE id > ? ORDER BY id LIMIT ?) c");
    bound->setInt(1, days);
    bound->setInt64(2, *cursor);
    bound->setInt(3, limit);
    std::unique_ptr<sql::ResultSet> rs(bound->executeQuery());
    if (!rs->next() || rs->isNull(1) || rs->getInt64(2) == 0) {
      *done = true;
      return;
    }
    int64_t upper = rs->getInt64(1);
    int64_t old_rows = rs->isNull(3) ? 0 : rs->getInt64(3);
    if (old_rows > 0) {
      auto* del = conn_.Prepare("DELETE FROM " + table_ +
                                " WHERE id > ? AND id <= ? AND status = 'SENT'"
                                " AND created_at < NOW() - INTERVAL ? DAY");
      del->setInt64(1, *cursor);
      del->setInt64(2, upper);
      del->setInt(3, days);
      *deleted = del->executeUpdate();
    } else {
      // ids grow with time: a chunk with nothing old means the rest is newer.
      *done = true;
    }
    *cursor = upper;
  });
}

}  // namespace outbox
