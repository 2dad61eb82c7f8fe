#include "db.h"

#include <cppconn/exception.h>
#include <cppconn/resultset.h>
#include <cppconn/statement.h>
#include <mysql_driver.h>

#include <cstdlib>

#include "common/mysql_options.h"
#include "outbox_ddl.h"
#include "util.h"

namespace outbox {
namespace bench {

Db::Db(const DbParams& p, bool create) {
  sql::ConnectOptionsMap opts;
  SetLoginOptions(p, &opts);
  opts["OPT_SSL_MODE"] = sql::SSL_MODE_DISABLED;
  opts["CLIENT_MULTI_RESULTS"] = true;  // CALL returns an extra result
  conn_.reset(sql::mysql::get_mysql_driver_instance()->connect(opts));
  conn_->setAutoCommit(true);
  if (create)
    Exec("CREATE DATABASE IF NOT EXISTS `" + p.database +
         "` CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci");
  conn_->setSchema(p.database);
}

void Db::Exec(const std::string& sql) {
  std::unique_ptr<sql::Statement> st(conn_->createStatement());
  st->execute(sql);
  // Drain any further results (CALL) so the connection stays usable.
  while (st->getMoreResults()) {
  }
}

int64_t Db::QueryInt(const std::string& sql) {
  std::unique_ptr<sql::Statement> st(conn_->createStatement());
  std::unique_ptr<sql::ResultSet> rs(st->executeQuery(sql));
  if (!rs->next() || rs->isNull(1)) return 0;
  return rs->getInt64(1);
}

std::string Db::QueryString(const std::string& sql) {
  std::unique_ptr<sql::Statement> st(conn_->createStatement());
  std::unique_ptr<sql::ResultSet> rs(st->executeQuery(sql));
  if (!rs->next() || rs->isNull(1)) return "";
  return rs->getString(1);
}

std::vector<std::string> Db::QueryColumn(const std::string& sql) {
  std::unique_ptr<sql::Statement> st(conn_->createStatement());
  std::unique_ptr<sql::ResultSet> rs(st->executeQuery(sql));
  std::vector<std::string> out;
  while (rs->next()) out.push_back(rs->getString(1));
  return out;
}

std::map<std::string, double> Db::GlobalStatus() {
  std::map<std::string, double> out;
  std::unique_ptr<sql::Statement> st(conn_->createStatement());
  std::unique_ptr<sql::ResultSet> rs(st->executeQuery("SHOW GLOBAL STATUS"));
  while (rs->next()) {
    std::string v = rs->getString(2);
    char* end = nullptr;
    double d = std::strtod(v.c_str(), &end);
    if (!v.empty() && end && *end == '\0') out[rs->getString(1)] = d;
  }
  return out;
}

double Db::WaitPurge(double timeout_s, int64_t max_history) {
  double t0 = MonoSeconds();
  while (MonoSeconds() - t0 < timeout_s) {
    if (QueryInt("SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS"
                 " WHERE VARIABLE_NAME = 'INNODB_HISTORY_LIST_LENGTH'") < max_history)
      break;
    SleepSeconds(0.2);
  }
  return MonoSeconds() - t0;
}

void Db::CreateOutbox(const std::string& table, const std::string& database) {
  const std::string name = (database.empty() ? "" : "`" + database + "`.") + "`" + table + "`";
  Exec("DROP TABLE IF EXISTS " + name);
  // sql/t_outbox.sql (README "The outbox table"), compiled in; only the name differs.
  Exec(outbox::OutboxTableDdl(name));
}

void Db::BuildTemplate(const std::string& name, int64_t aggregates, int per_aggregate) {
  const std::string types =
      "'OrderCreated','OrderPaid','OrderPacked','OrderShipped','OrderDelivered','OrderClosed',"
      "'OrderReviewed','OrderArchived'";
  FillTemplate(name, aggregates, per_aggregate, "ELT(1 + (ver - 1) % 8, " + types + ")",
               "JSON_OBJECT('orderId', agg, 'version', ver, 'customerId', 1000 + agg % 977,"
               " 'amount', '19.90', 'currency', 'EUR', 'note', 'benchmark event')");
}

void Db::BuildOrderPaidTemplate(const std::string& name, int64_t aggregates, int per_aggregate) {
  // bench/schemas/order_paid.avsc field for field: an RFC 3339 time for the
  // timestamp-millis, decimal amounts as text, a nested record, an array of
  // records, an enum and a coupon that is null for two orders in three.
  // JSON_EXTRACT('true', '$') is JSON's true (a bare TRUE would be 1).
  FillTemplate(
      name, aggregates, per_aggregate, "'OrderPaid'",
      "JSON_OBJECT('orderId', agg, 'version', ver, 'customerId', 1000 + agg % 977,"
      " 'paidAt', DATE_FORMAT(TIMESTAMP '2026-05-01 08:00:00' + INTERVAL id SECOND,"
      " '%Y-%m-%dT%H:%i:%s.250Z'), 'amount', '119.85', 'currency', 'EUR',"
      " 'payment', JSON_OBJECT('method', ELT(1 + agg % 3, 'CARD', 'PAYPAL', 'SEPA'),"
      " 'provider', 'adyen', 'reference', CONCAT('psp_', LPAD(id, 12, '0')),"
      " 'captured', JSON_EXTRACT('true', '$')),"
      " 'items', JSON_ARRAY("
      "JSON_OBJECT('sku', 'SKU-10442', 'name', 'Trail running shoe, size 42', 'quantity', 1,"
      " 'unitPrice', '89.95'),"
      " JSON_OBJECT('sku', 'SKU-20031', 'name', 'Merino socks, 3 pairs', 'quantity', 2,"
      " 'unitPrice', '14.95')),"
      " 'couponCode', IF(agg % 3 = 0, 'SPRING10', NULL),"
      " 'shippingAddress', JSON_OBJECT('street', 'Hauptstrasse 12', 'postalCode', '10115',"
      " 'city', 'Berlin', 'country', 'DE'))");
}

void Db::FillTemplate(const std::string& name, int64_t aggregates, int per_aggregate,
                      const std::string& event_type, const std::string& payload) {
  CreateOutbox(name);
  const int64_t n = aggregates * per_aggregate;
  // seq_1_to_N is MariaDB's SEQUENCE engine. Slot s belongs to aggregate
  // (s-1) % A + 1; ordering the slots by a seeded RAND() interleaves the
  // aggregates uniformly, and numbering each aggregate's slots in that same
  // order gives its versions 1..per_aggregate in id order.
  Exec("INSERT INTO `" + name +
       "` (id, aggregate_type, aggregate_id, event_type, event_key, payload, status,"
       " retry_count, next_retry_at, created_at, updated_at)"
       " SELECT id, 'Order', agg, " +
       event_type + ", CONCAT(" + event_type + ", ':', agg, ':', ver), " + payload +
       ", 'NEW', 0, NOW(), NOW(), NOW()"
       " FROM (SELECT ROW_NUMBER() OVER (ORDER BY r, seq) id, agg,"
       "              ROW_NUMBER() OVER (PARTITION BY agg ORDER BY r, seq) ver"
       "       FROM (SELECT seq, (seq - 1) % " +
       std::to_string(aggregates) + " + 1 agg, RAND(42) r FROM seq_1_to_" + std::to_string(n) +
       ") s) x");
}

void Db::LoadTemplate(const std::string& table, const std::string& tpl, int64_t id_offset) {
  Exec("INSERT INTO `" + table +
       "` (id, aggregate_type, aggregate_id, event_type, event_key, payload, status,"
       " retry_count, next_retry_at, created_at, updated_at)"
       " SELECT id + " +
       std::to_string(id_offset) + ", aggregate_type, aggregate_id, event_type, " +
       (id_offset > 0 ? "CONCAT(event_key, '@" + std::to_string(id_offset) + "')"
                      : std::string("event_key")) +
       ", payload, 'NEW', 0,"
       " NOW(), NOW(), NOW() FROM `" +
       tpl + "`");
}

void Db::AddSentRows(const std::string& table, int64_t rows) {
  // Old, delivered history: other aggregates, keys that cannot collide with
  // the workload's, spread over the day before.
  Exec("INSERT INTO `" + table +
       "` (id, aggregate_type, aggregate_id, event_type, event_key, payload, status,"
       " retry_count, next_retry_at, created_at, updated_at)"
       " SELECT seq, 'Order', 100000000 + seq DIV 4, 'OrderArchived',"
       " CONCAT('OrderArchived:', seq), JSON_OBJECT('orderId', 100000000 + seq DIV 4,"
       " 'version', seq % 4, 'customerId', 1000 + seq % 977, 'amount', '19.90', 'currency',"
       " 'EUR', 'note', 'benchmark event'), 'SENT', 0,"
       " NOW() - INTERVAL 1 DAY + INTERVAL seq DIV 100 SECOND,"
       " NOW() - INTERVAL 1 DAY + INTERVAL seq DIV 100 SECOND,"
       " NOW() - INTERVAL 1 DAY + INTERVAL seq DIV 100 SECOND"
       " FROM seq_1_to_" +
       std::to_string(rows));
}

namespace {

// The claim's UPDATE to SENDING (its commit ends the claim transaction) and
// the fenced settle, as prepared statements on the claimed id list, then the
// loop's end: the second half of bench_drain's body.
std::string MarkAndSettleSql(const std::string& t) {
  return "    SET @bench_token = token;\n"
         "    SET @bench_sql = CONCAT('UPDATE " +
         t +
         " SET status = ''SENDING'', next_retry_at = ?,"
         " updated_at = NOW() WHERE id IN (', ids, ')');\n"
         "    PREPARE claim_stmt FROM @bench_sql;\n"
         "    EXECUTE claim_stmt USING @bench_token;\n"
         "    DEALLOCATE PREPARE claim_stmt;\n"
         "    COMMIT;\n"
         "    SET @bench_sql = CONCAT('UPDATE " +
         t +
         " SET status = ''SENT'', updated_at = NOW() WHERE id IN (',"
         " ids, ') AND status = ''SENDING'' AND next_retry_at = ?');\n"
         "    PREPARE settle_stmt FROM @bench_sql;\n"
         "    EXECUTE settle_stmt USING @bench_token;\n"
         "    DEALLOCATE PREPARE settle_stmt;\n"
         "    SET events = events + n;\n"
         "  END LOOP;\n"
         "END";
}

}  // namespace

void Db::CreateDrainProcedure(const std::string& table) {
  Exec("DROP PROCEDURE IF EXISTS bench_drain");
  const std::string t = "`" + table + "`";
  // Statement for statement what the relay does per batch in ordering none
  // (src/outbox/mysql_store.cc ClaimDue, MarkSendingAndCommit, Settle):
  //   claim:  START TRANSACTION;
  //           [every second: SELECT <cols> ... WHERE status = 'SENDING' AND
  //            next_retry_at <= NOW() ... FOR UPDATE SKIP LOCKED (reclaim)]
  //           SELECT <the relay's columns> ... WHERE status = 'NEW' AND
  //           next_retry_at <= NOW() ORDER BY next_retry_at, id LIMIT batch
  //           FOR UPDATE SKIP LOCKED -- after a full batch resuming after the
  //           last (next_retry_at, id) taken, from the start every second;
  //           UPDATE ... SET status = 'SENDING', next_retry_at = <lease>
  //           WHERE id IN (...); COMMIT
  //   settle: UPDATE ... SET status = 'SENT' WHERE id IN (...) AND
  //           status = 'SENDING' AND next_retry_at = <lease> (autocommit)
  // The claimed rows are read into the server (the derived table), not sent
  // to a client; the id lists are built with GROUP_CONCAT and the UPDATEs run
  // as prepared statements, like the relay's IN lists.
  const std::string cols =
      "id, aggregate_type, aggregate_id, event_type, event_key, payload, retry_count,"
      " UNIX_TIMESTAMP(created_at) c, status, next_retry_at nra,"
      " DATE_FORMAT(NOW() + INTERVAL lease_s SECOND, '%Y-%m-%d %H:%i:%s') tok";
  const std::string agg =
      "SELECT GROUP_CONCAT(id ORDER BY nra, id), COUNT(*),"
      " SUM(LENGTH(payload) + LENGTH(event_key) + LENGTH(event_type)), MAX(tok), MAX(nra)"
      " INTO ids, n, bytes, token, at_last FROM ";
  Exec(
      "CREATE PROCEDURE bench_drain(IN batch INT, IN lease_s INT, OUT events BIGINT)\n"
      "BEGIN\n"
      "  DECLARE ids LONGTEXT;\n"
      "  DECLARE n INT;\n"
      "  DECLARE bytes BIGINT;\n"
      "  DECLARE token VARCHAR(32);\n"
      "  DECLARE at_last DATETIME;\n"
      "  DECLARE resume_at DATETIME;\n"
      "  DECLARE resume_id BIGINT;\n"
      "  DECLARE resume INT DEFAULT 0;\n"
      "  DECLARE rescan_at DATETIME(6) DEFAULT NOW(6);\n"
      "  DECLARE full_scan INT;\n"
      "  SET events = 0;\n"
      "  SET SESSION group_concat_max_len = 16777216;\n"
      "  drain: LOOP\n"
      "    START TRANSACTION;\n"
      "    SET full_scan = resume = 0 OR NOW(6) >= rescan_at;\n"
      "    IF NOW(6) >= rescan_at THEN\n"
      "      SET rescan_at = NOW(6) + INTERVAL 1 SECOND;\n"
      "      SELECT COUNT(*) INTO n FROM (SELECT " +
      cols + " FROM " + t +
      " WHERE status = 'SENDING' AND next_retry_at <= NOW()"
      " ORDER BY next_retry_at, id LIMIT batch FOR UPDATE SKIP LOCKED) x;\n"
      "    END IF;\n"
      "    IF full_scan THEN\n"
      "      " +
      agg + "(SELECT " + cols + " FROM " + t +
      " WHERE status = 'NEW' AND next_retry_at <= NOW()"
      " ORDER BY next_retry_at, id LIMIT batch FOR UPDATE SKIP LOCKED) c;\n"
      "    ELSE\n"
      "      " +
      agg + "(SELECT " + cols + " FROM " + t +
      " FORCE INDEX (idx_status_retry) WHERE status = 'NEW' AND ((next_retry_at = resume_at"
      " AND id > resume_id) OR (next_retry_at > resume_at AND next_retry_at <= NOW()))"
      " ORDER BY next_retry_at, id LIMIT batch FOR UPDATE SKIP LOCKED) c;\n"
      "    END IF;\n"
      "    SET resume = n = batch;\n"
      "    IF n = batch THEN\n"
      "      SET resume_at = at_last, resume_id = SUBSTRING_INDEX(ids, ',', -1);\n"
      "    END IF;\n"
      "    IF n = 0 THEN\n"
      "      ROLLBACK;\n"
      "      IF full_scan THEN\n"
      "        LEAVE drain;\n"
      "      END IF;\n"
      "      ITERATE drain;\n"
      "    END IF;\n" +
      MarkAndSettleSql(t));
}

int64_t Db::CallDrain(int batch_size, int lease_s) {
  Exec("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED");
  Exec("CALL bench_drain(" + std::to_string(batch_size) + ", " + std::to_string(lease_s) +
       ", @bench_events)");
  return QueryInt("SELECT @bench_events");
}

}  // namespace bench
}  // namespace outbox
