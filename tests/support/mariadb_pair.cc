#include "support/mariadb_pair.h"

#include <signal.h>

#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "support/process.h"

namespace outbox::testing {

namespace {

std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Runs `script` with scripts/lib/mariadb.sh sourced.
ProcessResult MariadbShell(const std::string& script, std::chrono::milliseconds deadline) {
  const std::string lib = std::string(OUTBOX_SOURCE_DIR) + "/scripts/lib/mariadb.sh";
  return RunProcess({"/bin/bash", "-c", ". " + Quote(lib) + " && " + script},
                    ChildEnv({"HOME=/tmp"}), deadline);
}

}  // namespace

MariadbServer::MariadbServer(std::string dir, int server_id) : dir_(std::move(dir)) {
  const std::string args = "--log-bin=mysql-bin --server-id=" + std::to_string(server_id) +
                           " --binlog-format=ROW --binlog-checksum=CRC32 --log-slave-updates"
                           " --gtid-strict-mode=1 --innodb-buffer-pool-size=64M";
  ProcessResult r =
      MariadbShell("mariadb_start " + Quote(dir_) + " " + args, std::chrono::seconds(120));
  if (r.exit_code != 0) {
    std::cerr << "mariadb_start " << dir_ << " failed:\n" << r.err << std::endl;
    return;
  }
  std::ifstream env(dir_ + "/env.sh");
  std::string line;
  while (std::getline(env, line)) {
    const std::string key = "export OUTBOX_TEST_MYSQL_PORT=";
    if (line.rfind(key, 0) == 0) port_ = std::stoi(line.substr(key.size()));
  }
}

MariadbServer::~MariadbServer() {
  if (started()) {
    Thaw();
    (void)Stop();
  }
}

std::string MariadbServer::Sql(const std::string& sql) const {
  ProcessResult r =
      MariadbShell("mariadb_sql " + Quote(dir_) + " " + Quote(sql), std::chrono::seconds(60));
  if (r.exit_code != 0) {
    std::cerr << "SQL on " << dir_ << " failed (" << sql << "): " << r.err << std::endl;
    return "";
  }
  return r.out;
}

int64_t MariadbServer::QueryInt(const std::string& sql) const {
  const std::string out = Sql(sql);
  try {
    return out.empty() || out.rfind("NULL", 0) == 0 ? 0 : std::stoll(out);
  } catch (const std::exception&) {
    return 0;
  }
}

bool MariadbServer::CreateOutbox(const std::string& database) const {
  ProcessResult r = MariadbShell("mariadb_create_outbox " + Quote(dir_) + " " + Quote(database),
                                 std::chrono::seconds(60));
  if (r.exit_code != 0) std::cerr << "mariadb_create_outbox failed: " << r.err << std::endl;
  return r.exit_code == 0;
}

MysqlConfig MariadbServer::Admin(const std::string& database) const {
  MysqlConfig c;
  c.host = "127.0.0.1";
  c.port = port_;
  c.user = "root";
  c.password = "";
  c.database = database;
  c.tls.mode = TlsMode::kDisabled;
  return c;
}

int MariadbServer::Pid() const {
  std::ifstream in(dir_ + "/mysqld.pid");
  int pid = 0;
  in >> pid;
  return pid;
}

void MariadbServer::Kill() {
  if (int pid = Pid(); pid > 0) ::kill(pid, SIGKILL);
  // The pid file stays; restart.sh checks the pid is a live mariadbd first.
  for (int i = 0; i < 100 && Pid() > 0 && ::kill(Pid(), 0) == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

bool MariadbServer::Stop() {
  return RunProcess({dir_ + "/stop.sh"}, ChildEnv(), std::chrono::seconds(90)).exit_code == 0;
}

bool MariadbServer::Restart() {
  return RunProcess({dir_ + "/restart.sh"}, ChildEnv(), std::chrono::seconds(90)).exit_code == 0;
}

void MariadbServer::Freeze() {
  if (int pid = Pid(); pid > 0) ::kill(pid, SIGSTOP);
}

void MariadbServer::Thaw() {
  if (int pid = Pid(); pid > 0) ::kill(pid, SIGCONT);
}

MariadbPair::MariadbPair(const std::string& dir)
    : primary_(dir + "/primary", 1), replica_(dir + "/replica", 2) {
  if (!primary_.started() || !replica_.started()) return;
  primary_.Sql(
      "CREATE USER IF NOT EXISTS 'repl'@'127.0.0.1' IDENTIFIED BY 'repl-pw';"
      "GRANT REPLICATION SLAVE ON *.* TO 'repl'@'127.0.0.1';");
  // The replica's own setup (mariadb_start's root account) is in its binary
  // log under its server_id: gtid_strict_mode would refuse the primary's
  // first transactions behind it. The primary's log repeats that setup.
  replica_.Sql(
      "RESET MASTER; SET GLOBAL gtid_slave_pos = ''; CHANGE MASTER TO MASTER_HOST='127.0.0.1', "
      "MASTER_PORT=" +
      std::to_string(primary_.port()) +
      ", MASTER_USER='repl', MASTER_PASSWORD='repl-pw', MASTER_USE_GTID=slave_pos,"
      " MASTER_CONNECT_RETRY=1; START SLAVE; SET GLOBAL read_only = 1;");
  replicating_ = WaitCaughtUp(30);
}

bool MariadbPair::WaitCaughtUp(int timeout_s) {
  std::string pos = primary().Sql("SELECT @@gtid_binlog_pos");
  while (!pos.empty() && (pos.back() == '\n' || pos.back() == '\r')) pos.pop_back();
  return replica().QueryInt("SELECT MASTER_GTID_WAIT('" + pos + "', " + std::to_string(timeout_s) +
                            ")") == 0;
}

bool MariadbPair::Promote() {
  primary().Sql("SET GLOBAL read_only = 1");
  const bool caught_up = WaitCaughtUp(30);
  PromoteNow();
  return caught_up;
}

void MariadbPair::PromoteNow() {
  replica().Sql("STOP SLAVE; RESET SLAVE ALL; SET GLOBAL read_only = 0;");
  swapped_ = !swapped_;
}

bool MariadbPair::Reattach() {
  // The demoted server's own transactions are all in the new primary's log
  // (it caught up before the promotion): it continues from its binlog
  // position.
  replica().Sql(
      "SET GLOBAL read_only = 1; SET GLOBAL gtid_slave_pos = @@gtid_binlog_pos;"
      "CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=" +
      std::to_string(primary().port()) +
      ", MASTER_USER='repl', MASTER_PASSWORD='repl-pw', MASTER_USE_GTID=slave_pos,"
      " MASTER_CONNECT_RETRY=1; START SLAVE;");
  return WaitCaughtUp(30);
}

int MariadbPair::ReplicaLag() {
  const std::string out = replica().Sql("SHOW SLAVE STATUS\\G");
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    auto at = line.find("Seconds_Behind_Master:");
    if (at == std::string::npos) continue;
    const std::string v = line.substr(at + 22);
    try {
      return std::stoi(v);
    } catch (const std::exception&) {
      return -1;
    }
  }
  return -1;
}

void CreateRelayAccount(MariadbServer& server, const std::string& database, const std::string& user,
                        const std::string& password) {
  const std::string account = "'" + user + "'@'127.0.0.1'";
  server.Sql("CREATE USER IF NOT EXISTS " + account + " IDENTIFIED BY '" + password +
             "'; GRANT SELECT, UPDATE ON `" + database + "`.`t_outbox` TO " + account +
             "; GRANT REPLICATION SLAVE, BINLOG MONITOR ON *.* TO " + account + ";");
}

}  // namespace outbox::testing
