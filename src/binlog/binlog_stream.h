#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "binlog/binlog_options.h"
#include "binlog/transaction_tracker.h"
#include "common/mutex.h"

namespace outbox {
namespace binlog {

// Why a stream is not following the log. Stable names (ToString) for logs,
// tests and, later, a metric label.
enum class StreamProblem {
  kNone,         // up
  kStarting,     // not connected yet
  kConnect,      // cannot connect or log in
  kLogBinOff,    // the server's binary log is off
  kGrant,        // REPLICATION SLAVE or BINLOG MONITOR / REPLICATION CLIENT missing
  kPurged,       // the position left the server (PURGE / RESET MASTER)
  kDuplicateId,  // another replica connected with the same server_id
  kStalled,      // no event and no heartbeat within stall_timeout_ms
  kLost,         // connection lost, server restart, unreadable stream
  kStopped,      // Stop() was called
};
const char* ToString(StreamProblem p);

// A snapshot of one stream.
struct StreamState {
  bool up = false;
  StreamProblem problem = StreamProblem::kStarting;
  std::string reason;  // why it is down, with the fix where there is one; "" while up
  std::string server;  // host:port
  uint32_t server_id = 0;
  std::string format;  // binlog_format at the last connect; "" before
  // True with binlog_format=ROW: wake-ups name tables; else databases.
  bool table_granularity = false;
  std::string file;         // the binary log file being read (diagnostics)
  uint64_t connects = 0;    // successful dump requests
  uint64_t reopens = 0;     // Reopen() calls
  uint64_t heartbeats = 0;  // heartbeat events read
};

// Follows one server's binary log as a replica would, on its own thread,
// from the log's end at connect time, and hands each committed transaction
// (the tables or databases it touched) to `on_commit`. Reconnects by itself
// with backoff; every transition between up and down goes to `on_state`.
// While down it can miss commits: a subscriber polls then (docs/BINLOG.md).
//
// Thread-safety: Start/Stop from one owning thread; up(), reason() and
// state() from any thread. The callbacks run on the stream's thread, one at
// a time, and must be cheap and must not call Stop(). Stop() (or the
// destructor) returns after the thread ended; no callback runs afterwards.
class BinlogStream {
 public:
  using CommitCallback = std::function<void(const Commit&)>;
  using StateCallback = std::function<void(const StreamState&)>;

  BinlogStream(BinlogOptions options, CommitCallback on_commit, StateCallback on_state);
  ~BinlogStream();
  BinlogStream(const BinlogStream&) = delete;
  BinlogStream& operator=(const BinlogStream&) = delete;

  void Start();
  // Breaks a blocking read (shutdown(2) of the socket) and joins the thread.
  void Stop() EXCLUDES(mu_);
  // Closes the current connection (or ends a backoff) and connects again at
  // once through options().mysql.host, following that server from its end
  // of log: after a failover the host leads to another server, whose log the
  // old position does not belong to. The stream is down in between (its
  // subscribers poll). Any thread; returns at once.
  void Reopen() EXCLUDES(mu_);

  bool up() const EXCLUDES(mu_);
  std::string reason() const EXCLUDES(mu_);
  StreamState state() const EXCLUDES(mu_);
  const BinlogOptions& options() const { return options_; }

 private:
  class Session;
  friend class Session;

  void Run();
  // One connection: connect, check, dump, follow until it breaks. Sets
  // *problem and *reason; returns whether the stream got up.
  bool RunSession(StreamProblem* problem, std::string* reason) EXCLUDES(mu_);
  void SetUp(const std::string& format, bool table_granularity) EXCLUDES(mu_);
  void SetDown(StreamProblem problem, const std::string& reason) EXCLUDES(mu_);
  // Waits `ms` or until Stop(), calling on_progress at least every second.
  void Backoff(int ms) EXCLUDES(mu_);
  void Progress();
  bool stopping() const { return stopping_.load(std::memory_order_acquire); }
  // The socket a Stop() must shut down; -1 when none.
  void SetSocket(int fd) EXCLUDES(mu_);
  void CountHeartbeat() { heartbeats_.fetch_add(1, std::memory_order_relaxed); }
  void Deliver(const Commit& commit);
  void SetFile(std::string file) EXCLUDES(mu_);
  // Whether Reopen() was called since the last call; clears it.
  bool TakeReopen() EXCLUDES(mu_);

  // Constant after construction.
  const BinlogOptions options_;
  const uint32_t server_id_;
  const std::string server_;  // host:port
  const CommitCallback on_commit_;
  const StateCallback on_state_;

  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> heartbeats_{0};

  mutable Mutex mu_;
  CondVar cv_{&mu_};                   // Stop() and Reopen() wake Backoff()
  StreamState state_ GUARDED_BY(mu_);  // heartbeats_ merged in state()
  int socket_ GUARDED_BY(mu_) = -1;
  bool reopen_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace binlog
}  // namespace outbox
