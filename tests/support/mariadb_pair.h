#pragma once

// Two throwaway MariaDB servers, a primary and a GTID replica of it
// (MASTER_USE_GTID=slave_pos), for failover tests: started with
// scripts/lib/mariadb.sh (OUTBOX_SOURCE_DIR), each under its own directory,
// stopped by the destructor. Binary log on both (ROW, log_slave_updates), so
// that a promoted replica serves a binlog stream as a primary does.

#include <string>

#include "config/config.h"

namespace outbox::testing {

// One server started by scripts/lib/mariadb.sh in `dir`. Not thread-safe.
class MariadbServer {
 public:
  // Starts it (mariadb_start) with server_id `server_id`; started() tells.
  MariadbServer(std::string dir, int server_id);
  ~MariadbServer();
  MariadbServer(const MariadbServer&) = delete;
  MariadbServer& operator=(const MariadbServer&) = delete;

  bool started() const { return port_ > 0; }
  int port() const { return port_; }
  const std::string& dir() const { return dir_; }
  // Runs `sql` as root over the socket (the mariadb client, batch mode);
  // returns its output (tab-separated rows), "" on failure (logged).
  std::string Sql(const std::string& sql) const;
  int64_t QueryInt(const std::string& sql) const;
  // Creates `database` and its t_outbox (mariadb_create_outbox).
  bool CreateOutbox(const std::string& database) const;
  // The administrator account over TCP, on `database`.
  MysqlConfig Admin(const std::string& database) const;
  // kill -9 of the server (its connections reset); Restart() brings it back.
  void Kill();
  bool Stop();
  bool Restart();
  // SIGSTOP / SIGCONT: a frozen server keeps its connections and answers
  // nothing.
  void Freeze();
  void Thaw();

 private:
  int Pid() const;
  std::string dir_;
  int port_ = 0;
};

// The pair. Promote() is a planned failover as an operator runs one.
class MariadbPair {
 public:
  explicit MariadbPair(const std::string& dir);
  bool started() const { return primary_.started() && replica_.started() && replicating_; }
  // The current roles: Promote() and PromoteNow() swap them.
  MariadbServer& primary() { return swapped_ ? replica_ : primary_; }
  MariadbServer& replica() { return swapped_ ? primary_ : replica_; }

  // Demotes the primary (SET GLOBAL read_only = 1: open sessions of accounts
  // without READ ONLY ADMIN or SUPER get 1290 on writes), waits until the
  // replica applied everything it wrote (MASTER_GTID_WAIT), and promotes the
  // replica (STOP SLAVE, RESET SLAVE ALL, read_only = 0); the roles swap.
  // Returns false if the replica did not catch up within 30 s.
  bool Promote();
  // The replica promoted without waiting: what a failover after the primary
  // died does (whatever the replica had not received is gone). The roles
  // swap.
  void PromoteNow();
  // Makes the demoted server (now replica()) a read-only GTID replica of
  // the new primary, for the next failover. REQUIRES: it is running.
  bool Reattach();
  // Seconds the replica lags (Seconds_Behind_Master), -1 when not replicating.
  int ReplicaLag();
  // Waits until the replica applied what the primary wrote so far.
  bool WaitCaughtUp(int timeout_s);

 private:
  MariadbServer primary_;
  MariadbServer replica_;
  bool replicating_ = false;
  bool swapped_ = false;
};

// Creates (on `server`, replicated to a replica) the account `user` with
// only SELECT and UPDATE on `database`.t_outbox, plus the replication grants
// the binlog wake-up needs (REPLICATION SLAVE, BINLOG MONITOR): no SUPER and
// no READ ONLY ADMIN, so read_only stops it as it stops a production relay.
void CreateRelayAccount(MariadbServer& server, const std::string& database, const std::string& user,
                        const std::string& password);

}  // namespace outbox::testing
