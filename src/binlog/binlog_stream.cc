#include "binlog/binlog_stream.h"

#include <sys/socket.h>

#include <algorithm>
#include <chrono>

#include "common/log.h"

namespace outbox {
namespace binlog {

BinlogStream::BinlogStream(BinlogOptions options, CommitCallback on_commit, StateCallback on_state)
    : options_(std::move(options)),
      server_id_(EffectiveServerId(options_)),
      server_(options_.mysql.host + ":" + std::to_string(options_.mysql.port)),
      on_commit_(std::move(on_commit)),
      on_state_(std::move(on_state)) {
  state_.server = server_;
  state_.server_id = server_id_;
  state_.reason = "not connected yet";
}

BinlogStream::~BinlogStream() { Stop(); }

void BinlogStream::Start() {
  if (thread_.joinable()) return;
  stopping_.store(false, std::memory_order_release);
  PrepareLoggingForThreads();  // before the thread logs
  thread_ = std::thread([this] { Run(); });
}

void BinlogStream::Stop() {
  {
    MutexLock lock(&mu_);
    stopping_.store(true, std::memory_order_release);
    // Under mu_: the owner clears socket_ before it closes the descriptor.
    if (socket_ >= 0) ::shutdown(socket_, SHUT_RDWR);
  }
  cv_.SignalAll();
  if (thread_.joinable()) thread_.join();
}

void BinlogStream::Reopen() {
  {
    MutexLock lock(&mu_);
    reopen_ = true;
    ++state_.reopens;
    // Breaks the blocking read; a session still connecting is shut down by
    // SetSocket, and a backoff ends at the notify below.
    if (socket_ >= 0) ::shutdown(socket_, SHUT_RDWR);
  }
  cv_.SignalAll();
}

bool BinlogStream::TakeReopen() {
  MutexLock lock(&mu_);
  const bool reopen = reopen_;
  reopen_ = false;
  return reopen;
}

void BinlogStream::SetSocket(int fd) {
  MutexLock lock(&mu_);
  socket_ = fd;
  if (fd >= 0 && (stopping() || reopen_)) ::shutdown(fd, SHUT_RDWR);
}

bool BinlogStream::up() const {
  MutexLock lock(&mu_);
  return state_.up;
}

std::string BinlogStream::reason() const {
  MutexLock lock(&mu_);
  return state_.reason;
}

StreamState BinlogStream::state() const {
  MutexLock lock(&mu_);
  StreamState s = state_;
  s.heartbeats = heartbeats_.load(std::memory_order_relaxed);
  return s;
}

void BinlogStream::Run() {
  int backoff = options_.initial_backoff_ms;
  while (!stopping()) {
    StreamProblem problem = StreamProblem::kLost;
    std::string reason;
    const bool was_up = RunSession(&problem, &reason);
    if (stopping()) break;
    // Reopen(): the database session behind the same host was replaced (a
    // failover): follow whatever the host leads to now, from its end of log.
    const bool reopen = TakeReopen();
    if (reopen) {
      problem = StreamProblem::kLost;
      reason = "reopening through " + server_ + " (the relay's database session was replaced)";
    }
    SetDown(problem, reason);
    if (was_up || reopen) backoff = options_.initial_backoff_ms;
    int wait = reopen ? 0 : backoff;
    // Purged: the end of the log is a fine new start; at once.
    if (problem == StreamProblem::kPurged) wait = 0;
    // Two replicas with one id take turns dropping each other: rarely.
    if (problem == StreamProblem::kDuplicateId) wait = options_.duplicate_backoff_ms;
    Backoff(wait);
    if (!was_up) backoff = std::min(backoff * 2, options_.max_backoff_ms);
  }
  SetDown(StreamProblem::kStopped, "stopped");
}

void BinlogStream::SetUp(const std::string& format, bool table_granularity) {
  StreamState snapshot;
  {
    MutexLock lock(&mu_);
    state_.up = true;
    state_.problem = StreamProblem::kNone;
    state_.reason.clear();
    state_.format = format;
    state_.table_granularity = table_granularity;
    ++state_.connects;
    snapshot = state_;
  }
  LogInfo("binlog: following the binary log",
          {{"server", server_},
           {"server_id", server_id_},
           {"wakeups_per", table_granularity ? "table" : "database"},
           {"binlog_format", format}});
  if (on_state_) on_state_(snapshot);
}

void BinlogStream::SetDown(StreamProblem problem, const std::string& reason) {
  StreamState snapshot;
  bool changed;
  {
    MutexLock lock(&mu_);
    changed = state_.up || state_.problem != problem || state_.reason != reason;
    state_.up = false;
    state_.problem = problem;
    state_.reason = reason;
    snapshot = state_;
  }
  if (changed && problem != StreamProblem::kStopped)
    LogWarn("binlog: wake-ups off, services poll instead",
            {{"server", server_}, {"problem", ToString(problem)}, {"error", reason}});
  if (changed && on_state_) on_state_(snapshot);
}

void BinlogStream::Backoff(int ms) {
  Clock& clock = *options_.clock;
  const auto deadline = clock.Now() + std::chrono::milliseconds(ms);
  const auto woken = [this] {
    mu_.AssertHeld();
    return stopping() || reopen_;
  };
  while (true) {
    {
      MutexLock lock(&mu_);
      if (woken() || clock.Now() >= deadline) return;
      clock.WaitUntil(&mu_, &cv_, std::min(deadline, clock.Now() + std::chrono::seconds(1)), woken);
    }
    Progress();
  }
}

void BinlogStream::Progress() {
  if (options_.on_progress) options_.on_progress();
}

void BinlogStream::SetFile(std::string file) {
  MutexLock lock(&mu_);
  state_.file = std::move(file);
}

void BinlogStream::Deliver(const Commit& commit) {
  if (on_commit_) on_commit_(commit);
}

}  // namespace binlog
}  // namespace outbox
