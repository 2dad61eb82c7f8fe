// The store's side of a failover (docs/RELIABILITY.md "Failover and network
// faults"): its sessions must be on a writable primary. These run as an
// account with only SELECT and UPDATE on the table, since read_only does not
// stop an account with SUPER or READ ONLY ADMIN (the test's root).
#include <catch2/catch.hpp>
#include <string>

#include "fakes/fake_clock.h"
#include "outbox/mysql_store.h"
#include "support/test_env.h"

using namespace outbox;
using namespace outbox::testing;

namespace {

constexpr const char* kUser = "outbox_failover_store";
constexpr const char* kPassword = "failover-store-pw";

// A database with `rows` NEW rows, an account that may only SELECT and
// UPDATE its table, and the server's global read_only switched back off
// whatever the test does.
struct ReadOnlyBed {
  explicit ReadOnlyBed(const std::string& name, int rows) : db(name) {
    db.InsertEvents(rows, 1);
    const std::string account = std::string("'") + kUser + "'@'%'";
    db.Exec("CREATE USER IF NOT EXISTS " + account + " IDENTIFIED BY '" + kPassword + "'");
    db.Exec("ALTER USER " + account + " IDENTIFIED BY '" + kPassword + "'");
    db.Exec("GRANT SELECT, UPDATE ON `" + name + "`.`t_outbox` TO " + account);
  }
  ~ReadOnlyBed() {
    try {
      SetReadOnly(false);
      db.Exec(std::string("DROP USER IF EXISTS '") + kUser + "'@'%'");
    } catch (...) {
    }
  }
  MysqlConfig Account() const {
    MysqlConfig c = TestMysql(db.name());
    c.user = kUser;
    c.password = kPassword;
    return c;
  }
  void SetReadOnly(bool on) { db.Exec(std::string("SET GLOBAL read_only = ") + (on ? "1" : "0")); }
  TestDatabase db;
};

}  // namespace

TEST_CASE("a store refuses a server that reports read_only at connect and says so",
          "[store][failover][local-db]") {
  ReadOnlyBed bed("store_ro_connect", 3);
  MysqlStore store(bed.Account());
  bed.SetReadOnly(true);
  Status s = store.Connect();
  INFO(s.message());
  CHECK(s.code() == StatusCode::kUnavailable);
  CHECK(s.message().find("connected to a read-only server") != std::string::npos);
  CHECK(s.message().find("read_only") != std::string::npos);
  CHECK(store.Session().connects == 0);
  // A claim tries to connect first and fails the same way, without a session.
  ClaimedBatch batch;
  s = store.ClaimDue(10, 30000, false, &batch, {});
  CHECK(s.message().find("connected to a read-only server") != std::string::npos);

  bed.SetReadOnly(false);
  REQUIRE(store.Connect().ok());
  const SessionInfo info = store.Session();
  CHECK(info.connects == 1);
  // MariaDB has no @@server_uuid: server_id@hostname:port; MySQL 8: the uuid.
  const std::string uuid = bed.db.QueryString(
      "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_VARIABLES "
      "WHERE VARIABLE_NAME = 'SERVER_UUID'");
  if (uuid.empty()) {
    CHECK(info.server_identity == std::to_string(bed.db.QueryInt("SELECT @@server_id")) + "@" +
                                      bed.db.QueryString("SELECT @@hostname") + ":" +
                                      std::to_string(bed.db.QueryInt("SELECT @@port")));
  } else {
    CHECK(info.server_identity == uuid);
  }
}

TEST_CASE("a read-only answer closes the session so that the next call connects again",
          "[store][failover][local-db]") {
  ReadOnlyBed bed("store_ro_answer", 4);
  // A clock that stands still: the once-a-second question whether the server
  // is still writable does not come first, the claim's UPDATE meets 1290.
  MysqlStore store(bed.Account(), std::make_shared<FakeClock>());
  ClaimedBatch batch;
  REQUIRE(store.ClaimDue(1, 30000, false, &batch, {}).ok());
  REQUIRE(batch.rows.size() == 1);
  REQUIRE(store.Session().connects == 1);

  // The server is demoted under the open session: the claim's UPDATE is
  // refused with 1290.
  bed.SetReadOnly(true);
  batch = {};
  Status s = store.ClaimDue(1, 30000, false, &batch, {});
  INFO(s.message());
  CHECK(s.code() == StatusCode::kUnavailable);
  CHECK(s.message().find("MySQL error 1290") != std::string::npos);
  CHECK(s.message().find("connected to a read-only server") != std::string::npos);
  CHECK(bed.db.QueryInt("SELECT COUNT(*) FROM t_outbox WHERE status = 'SENDING'") == 1);

  // Writable again (as a promoted server would be): the next claim runs on a
  // new session; the old one would have been kept for ever before.
  bed.SetReadOnly(false);
  batch = {};
  REQUIRE(store.ClaimDue(1, 30000, false, &batch, {}).ok());
  CHECK(batch.rows.size() == 1);
  CHECK(store.Session().connects == 2);
  CHECK(bed.db.QueryInt("SELECT COUNT(*) FROM t_outbox WHERE status = 'SENDING'") == 2);
}

TEST_CASE("a session that only reads notices within a second that its server was demoted",
          "[store][failover][local-db]") {
  ReadOnlyBed bed("store_ro_reader", 2);
  auto clock = std::make_shared<FakeClock>();
  MysqlStore store(bed.Account(), clock);
  TableStats stats;
  REQUIRE(store.ReadStats(&stats).ok());
  // A reading statement is not refused on a read-only server: the session
  // would read the old primary's frozen table for ever after a failover.
  bed.SetReadOnly(true);
  clock->Advance(std::chrono::milliseconds(300));
  CHECK(store.ReadStats(&stats).ok());
  clock->Advance(std::chrono::milliseconds(800));
  Status s = store.ReadStats(&stats);
  INFO(s.message());
  CHECK(s.code() == StatusCode::kUnavailable);
  CHECK(s.message().find("connected to a read-only server") != std::string::npos);
  bed.SetReadOnly(false);
  CHECK(store.ReadStats(&stats).ok());
  CHECK(store.Session().connects == 2);
}
