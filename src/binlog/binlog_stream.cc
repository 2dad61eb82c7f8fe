#include "binlog/binlog_stream.h"

// mysql.h first: mariadb_rpl.h and errmsg.h use its types.
#include <mysql.h>
// (keep this order)
#include <errmsg.h>
#include <mariadb_rpl.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>

#include "binlog/binlog_check.h"
#include "binlog/mariadb_session.h"
#include "common/log.h"

namespace outbox {
namespace binlog {

namespace {

using SteadyClock = std::chrono::steady_clock;

// MariaDB's ER_SLAVE_SAME_ID; MySQL sends 1236 with the same words.
constexpr unsigned int kErrSlaveSameId = 4052;
constexpr unsigned int kErrMasterFatalReadingBinlog = 1236;
constexpr unsigned int kErrSpecificAccessDenied = 1227;
constexpr unsigned int kErrAccessDenied = 1045;

bool Contains(const std::string& s, const char* what) { return s.find(what) != std::string::npos; }

bool IsRowsEvent(int type) {
  switch (type) {
    case WRITE_ROWS_EVENT_V1:
    case UPDATE_ROWS_EVENT_V1:
    case DELETE_ROWS_EVENT_V1:
    case WRITE_ROWS_EVENT:
    case UPDATE_ROWS_EVENT:
    case DELETE_ROWS_EVENT:
    case WRITE_ROWS_COMPRESSED_EVENT_V1:
    case UPDATE_ROWS_COMPRESSED_EVENT_V1:
    case DELETE_ROWS_COMPRESSED_EVENT_V1:
    case WRITE_ROWS_COMPRESSED_EVENT:
    case UPDATE_ROWS_COMPRESSED_EVENT:
    case DELETE_ROWS_COMPRESSED_EVENT:
    case PARTIAL_UPDATE_ROWS_EVENT:
      return true;
    default:
      return false;
  }
}

std::string_view View(const MARIADB_STRING& s) {
  return {s.str ? s.str : "", s.str ? s.length : 0};
}

}  // namespace

// One connection's worth of state: the session, the replication handle, the
// event buffer and the transaction tracker. Lives on the stream's thread.
class BinlogStream::Session {
 public:
  explicit Session(BinlogStream* stream) : s_(stream) {}
  ~Session() {
    if (event_) mariadb_free_rpl_event(event_);
    if (rpl_) mariadb_rpl_close(rpl_);
    s_->SetSocket(-1);
  }

  bool Open(StreamProblem* problem, std::string* reason);
  // Reads until the stream breaks; returns with *problem and *reason set.
  void Follow(StreamProblem* problem, std::string* reason);
  const BinlogServerInfo& info() const { return info_; }

 private:
  bool Fail(StreamProblem p, std::string why, StreamProblem* problem, std::string* reason) {
    *problem = p;
    *reason = std::move(why);
    return false;
  }
  bool Handle(const MARIADB_RPL_EVENT& ev, Commit* commit);
  void NoteRotate(const MARIADB_RPL_EVENT& ev);
  std::string MissingReplicationSlave(const std::string& error);
  // After mariadb_rpl_fetch returned nothing: true to keep reading.
  bool Classify(SteadyClock::time_point last_packet, StreamProblem* problem, std::string* reason);

  BinlogStream* s_;
  MariadbSession session_;
  BinlogServerInfo info_;
  MARIADB_RPL* rpl_ = nullptr;
  MARIADB_RPL_EVENT* event_ = nullptr;
  TransactionTracker tracker_;
};

bool BinlogStream::Session::Open(StreamProblem* problem, std::string* reason) {
  const BinlogOptions& o = s_->options_;
  const int read_timeout_s = std::max(1, (o.stall_timeout_ms + 999) / 1000);
  Status st = session_.Connect(o.mysql, read_timeout_s);
  if (!st.ok()) return Fail(StreamProblem::kConnect, st.message(), problem, reason);
  s_->SetSocket(session_.socket());
  std::vector<std::string> problems;
  st = InspectBinlogServer(session_, /*need_replication_slave=*/false, &info_, &problems);
  if (!st.ok()) return Fail(StreamProblem::kLost, st.message(), problem, reason);
  if (!info_.log_bin) return Fail(StreamProblem::kLogBinOff, problems.at(0), problem, reason);
  if (!problems.empty()) return Fail(StreamProblem::kGrant, problems[0], problem, reason);
  // What the library does not send: the checksum this replica understands
  // (without it the server refuses a CRC32 log, error 1236), the GTID
  // capability (MariaDB sends GTID events instead of dummies) and the
  // heartbeat period in ns. MySQL 8.0.26+ reads the @source_ names.
  const std::string hb = std::to_string(static_cast<int64_t>(o.heartbeat_ms) * 1000000);
  st = session_.Query(
      "SET @master_binlog_checksum = @@GLOBAL.binlog_checksum, "
      "@source_binlog_checksum = @@GLOBAL.binlog_checksum, @mariadb_slave_capability = 4, "
      "@master_heartbeat_period = " +
      hb + ", @source_heartbeat_period = " + hb);
  if (!st.ok()) return Fail(StreamProblem::kLost, st.message(), problem, reason);
  if (!(rpl_ = mariadb_rpl_init(session_.raw())))
    return Fail(StreamProblem::kLost, "mariadb_rpl_init failed", problem, reason);
  const uint32_t start = static_cast<uint32_t>(info_.position);
  mariadb_rpl_optionsv(rpl_, MARIADB_RPL_SERVER_ID, s_->server_id_);
  mariadb_rpl_optionsv(rpl_, MARIADB_RPL_FILENAME, info_.file.c_str(), info_.file.size());
  mariadb_rpl_optionsv(rpl_, MARIADB_RPL_START, static_cast<unsigned long>(start));
  mariadb_rpl_optionsv(rpl_, MARIADB_RPL_VERIFY_CHECKSUM, 1);
  mariadb_rpl_optionsv(rpl_, MARIADB_RPL_UNCOMPRESS, 1);
  // COM_REGISTER_SLAVE: SHOW REPLICA HOSTS then names this relay beside its
  // server_id, which is where an operator looks for a duplicate id.
  const std::string report_host = ReportHost(o.instance_id);
  mariadb_rpl_optionsv(rpl_, MARIADB_RPL_HOST, report_host.c_str());
  mariadb_rpl_optionsv(rpl_, MARIADB_RPL_PORT, 0u);
  s_->SetFile(info_.file);
  // A missing REPLICATION SLAVE (1227) fails the registration here, or the
  // dump request at Follow's first fetch.
  if (mariadb_rpl_open(rpl_) != 0) {
    const unsigned int code = mysql_errno(session_.raw());
    const std::string error =
        "MySQL error " + std::to_string(code) + ": " + mysql_error(session_.raw());
    // COM_REGISTER_SLAVE answers 1045 (its text lost by the library).
    if (code == kErrSpecificAccessDenied || code == kErrAccessDenied)
      return Fail(StreamProblem::kGrant,
                  MissingReplicationSlave("MySQL error " + std::to_string(code) +
                                          " when registering as a replica"),
                  problem, reason);
    return Fail(StreamProblem::kLost, "binlog dump request failed: " + error, problem, reason);
  }
  return true;
}

std::string BinlogStream::Session::MissingReplicationSlave(const std::string& error) {
  const std::string account = session_.Account();
  return "user " + account + " lacks REPLICATION SLAVE (needed to follow the binary log): " +
         "GRANT REPLICATION SLAVE ON *.* TO " + account + "; (" + error + ")";
}

void BinlogStream::Session::Follow(StreamProblem* problem, std::string* reason) {
  auto last_packet = SteadyClock::now();
  bool up = false;
  Commit commit;
  while (!s_->stopping()) {
    event_ = mariadb_rpl_fetch(rpl_, event_);
    if (!event_) {  // the library freed the event it was given
      if (Classify(last_packet, problem, reason)) continue;
      break;
    }
    last_packet = SteadyClock::now();
    if (!up) {
      up = true;
      s_->SetUp(info_.format, info_.table_granularity());
    }
    s_->CountEvent();
    if (Handle(*event_, &commit)) s_->Deliver(commit);
    s_->Progress();
  }
  // Broken mid-transaction: wake for what it touched rather than lose it.
  if (tracker_.Flush(&commit)) s_->Deliver(commit);
}

bool BinlogStream::Session::Handle(const MARIADB_RPL_EVENT& ev, Commit* commit) {
  const int type = ev.event_type;
  if (IsRowsEvent(type))
    return tracker_.OnRows(ev.event.rows.table_id, ev.event.rows.type == WRITE_ROWS,
                           (ev.event.rows.flags & STMT_END_F) != 0, commit);
  switch (type) {
    case GTID_EVENT:  // MariaDB
      tracker_.OnGtid((ev.event.gtid.flags & FL_STANDALONE) != 0);
      return false;
    case GTID_LOG_EVENT:  // MySQL: a BEGIN query follows for a transaction
    case ANONYMOUS_GTID_LOG_EVENT:
      tracker_.OnGtid(true);
      return false;
    case QUERY_EVENT:
    case QUERY_COMPRESSED_EVENT:
      return tracker_.OnQuery(View(ev.event.query.database), View(ev.event.query.statement),
                              commit);
    case TABLE_MAP_EVENT:
      tracker_.OnTableMap(ev.event.table_map.table_id, View(ev.event.table_map.database),
                          View(ev.event.table_map.table));
      return false;
    case XID_EVENT:
      return tracker_.OnXid(commit);
    case INCIDENT_EVENT:  // the primary may have lost events: wake everyone
      tracker_.OnUnknown();
      return tracker_.Flush(commit);
    case HEARTBEAT_LOG_EVENT:
      s_->CountHeartbeat();
      return false;
    case ROTATE_EVENT:
      NoteRotate(ev);
      return false;
    default:
      return false;
  }
}

// The file name of a ROTATE event, read from its raw bytes: Connector/C
// 3.3.20 decodes a real (non-artificial) rotate with a checksum 8 bytes off
// (docs/BINLOG.md). Layout: 19-byte header, 8-byte position, name, CRC32.
void BinlogStream::Session::NoteRotate(const MARIADB_RPL_EVENT& ev) {
  const size_t header = 19 + 8;
  const size_t crc = info_.checksum == "CRC32" ? 4 : 0;
  if (ev.raw_data_ofs + ev.event_length > ev.raw_data_size || ev.event_length <= header + crc)
    return;
  const char* start = reinterpret_cast<const char*>(ev.raw_data + ev.raw_data_ofs + header);
  s_->SetFile(std::string(start, ev.event_length - header - crc));
}

bool BinlogStream::Session::Classify(SteadyClock::time_point last_packet, StreamProblem* problem,
                                     std::string* reason) {
  MYSQL* m = session_.raw();
  const unsigned int code = mysql_errno(m);
  const std::string error =
      std::string("MySQL error ") + std::to_string(code) + ": " + mysql_error(m);
  const uint32_t rpl_code = mariadb_rpl_errno(rpl_);
  if (code == 0 && rpl_code == CR_UNKNOWN_BINLOG_EVENT) {
    // An event this library version cannot parse (e.g. MySQL's
    // TRANSACTION_PAYLOAD_EVENT); the packet was read, the stream goes on.
    rpl_clear_error(rpl_);
    tracker_.OnUnknown();
    return true;
  }
  const BinlogOptions& o = s_->options_;
  const std::string id = std::to_string(s_->server_id_);
  if (s_->stopping()) {
    Fail(StreamProblem::kStopped, "stopped", problem, reason);
  } else if (code == kErrSpecificAccessDenied) {
    Fail(StreamProblem::kGrant, MissingReplicationSlave(error), problem, reason);
  } else if (code == kErrSlaveSameId || Contains(error, "same server_uuid/server_id")) {
    Fail(StreamProblem::kDuplicateId,
         "another replica connected to " + s_->server_ + " with server_id " + id +
             " and the server dropped this stream (" + error +
             "): give each relay instance its own mysql.binlog_server_id (or instance_id)",
         problem, reason);
  } else if (code == kErrMasterFatalReadingBinlog &&
             (Contains(error, "find") || Contains(error, "purge") ||
              Contains(error, "> file size"))) {
    Fail(StreamProblem::kPurged,
         "the stream's binary log position is gone (PURGE BINARY LOGS or RESET MASTER): " + error,
         problem, reason);
  } else if (code == CR_SERVER_LOST &&
             SteadyClock::now() - last_packet >=
                 std::chrono::milliseconds(o.stall_timeout_ms) - std::chrono::milliseconds(500)) {
    Fail(StreamProblem::kStalled,
         "no event and no heartbeat for " + std::to_string(o.stall_timeout_ms) +
             " ms (heartbeat every " + std::to_string(o.heartbeat_ms) + " ms): stream stalled",
         problem, reason);
  } else if (code != 0) {
    Fail(StreamProblem::kLost, "replication connection lost: " + error, problem, reason);
  } else if (rpl_code != 0) {
    Fail(StreamProblem::kLost,
         std::string("cannot read the binary log: ") + mariadb_rpl_error(rpl_), problem, reason);
  } else {
    Fail(StreamProblem::kLost, "the server ended the binlog stream", problem, reason);
  }
  return false;
}

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
    std::lock_guard<std::mutex> lock(mu_);
    stopping_.store(true, std::memory_order_release);
    // Under mu_: the owner clears socket_ before it closes the descriptor.
    if (socket_ >= 0) ::shutdown(socket_, SHUT_RDWR);
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void BinlogStream::Reopen() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    reopen_ = true;
    ++state_.reopens;
    // Breaks the blocking read; a session still connecting is shut down by
    // SetSocket, and a backoff ends at the notify below.
    if (socket_ >= 0) ::shutdown(socket_, SHUT_RDWR);
  }
  cv_.notify_all();
}

bool BinlogStream::TakeReopen() {
  std::lock_guard<std::mutex> lock(mu_);
  const bool reopen = reopen_;
  reopen_ = false;
  return reopen;
}

void BinlogStream::SetSocket(int fd) {
  std::lock_guard<std::mutex> lock(mu_);
  socket_ = fd;
  if (fd >= 0 && (stopping() || reopen_)) ::shutdown(fd, SHUT_RDWR);
}

bool BinlogStream::up() const {
  std::lock_guard<std::mutex> lock(mu_);
  return state_.up;
}

std::string BinlogStream::reason() const {
  std::lock_guard<std::mutex> lock(mu_);
  return state_.reason;
}

StreamState BinlogStream::state() const {
  std::lock_guard<std::mutex> lock(mu_);
  StreamState s = state_;
  s.events = events_.load(std::memory_order_relaxed);
  s.heartbeats = heartbeats_.load(std::memory_order_relaxed);
  s.transactions = transactions_.load(std::memory_order_relaxed);
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

bool BinlogStream::RunSession(StreamProblem* problem, std::string* reason) {
  Session session(this);
  if (!session.Open(problem, reason)) return false;
  session.Follow(problem, reason);
  std::lock_guard<std::mutex> lock(mu_);
  return state_.up;
}

void BinlogStream::SetUp(const std::string& format, bool table_granularity) {
  StreamState snapshot;
  {
    std::lock_guard<std::mutex> lock(mu_);
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
    std::lock_guard<std::mutex> lock(mu_);
    changed = state_.up || state_.problem != problem || state_.reason != reason;
    state_.up = false;
    state_.problem = problem;
    state_.reason = reason;
    ++state_.down_events;
    snapshot = state_;
  }
  if (changed && problem != StreamProblem::kStopped)
    LogWarn("binlog: wake-ups off, services poll instead",
            {{"server", server_}, {"problem", ToString(problem)}, {"error", reason}});
  if (changed && on_state_) on_state_(snapshot);
}

void BinlogStream::Backoff(int ms) {
  const auto deadline = SteadyClock::now() + std::chrono::milliseconds(ms);
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping() && !reopen_ && SteadyClock::now() < deadline) {
    cv_.wait_until(lock, std::min(deadline, SteadyClock::now() + std::chrono::seconds(1)));
    lock.unlock();
    Progress();
    lock.lock();
  }
}

void BinlogStream::Progress() {
  if (options_.on_progress) options_.on_progress();
}

void BinlogStream::SetFile(std::string file) {
  std::lock_guard<std::mutex> lock(mu_);
  state_.file = std::move(file);
}

void BinlogStream::Deliver(const Commit& commit) {
  transactions_.fetch_add(1, std::memory_order_relaxed);
  if (on_commit_) on_commit_(commit);
}

}  // namespace binlog
}  // namespace outbox
