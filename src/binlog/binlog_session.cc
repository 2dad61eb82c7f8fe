#include "binlog/binlog_stream.h"

// One connection of a BinlogStream (BinlogStream::Session): connect, check,
// dump, follow, classify failures.

// mysql.h first: mariadb_rpl.h and errmsg.h use its types.
#include <mysql.h>
// (keep this order)
#include <errmsg.h>
#include <mariadb_rpl.h>

#include <algorithm>
#include <chrono>

#include "binlog/binlog_check.h"
#include "binlog/mariadb_session.h"
#include "common/mysql_error.h"

namespace outbox {
namespace binlog {

namespace {

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
  // Open's steps: the session and its checks, then the dump request.
  bool Connect(StreamProblem* problem, std::string* reason);
  bool RequestDump(StreamProblem* problem, std::string* reason);
  bool Handle(const MARIADB_RPL_EVENT& ev, Commit* commit);
  void NoteRotate(const MARIADB_RPL_EVENT& ev);
  std::string MissingReplicationSlave(const std::string& error);
  // After mariadb_rpl_fetch returned nothing: true to keep reading.
  bool Classify(Clock::TimePoint last_packet, StreamProblem* problem, std::string* reason);
  // Classify's cases: an error that names what the server refused (true),
  // and the others: a stall, a lost connection, an unreadable or ended log.
  bool Refused(unsigned int code, const std::string& error, StreamProblem* problem,
               std::string* reason);
  void Broken(unsigned int code, const std::string& error, Clock::TimePoint last_packet,
              StreamProblem* problem, std::string* reason);

  BinlogStream* s_;
  MariadbSession session_;
  BinlogServerInfo info_;
  MARIADB_RPL* rpl_ = nullptr;
  MARIADB_RPL_EVENT* event_ = nullptr;
  TransactionTracker tracker_;
};

bool BinlogStream::Session::Open(StreamProblem* problem, std::string* reason) {
  return Connect(problem, reason) && RequestDump(problem, reason);
}

bool BinlogStream::Session::Connect(StreamProblem* problem, std::string* reason) {
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
  return true;
}

bool BinlogStream::Session::RequestDump(StreamProblem* problem, std::string* reason) {
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
  const std::string report_host = ReportHost(s_->options_.instance_id);
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
    if (IsMysqlError(code, MysqlError::kSpecificAccessDenied) ||
        IsMysqlError(code, MysqlError::kAccessDenied))
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
  const ClockPtr& clock = s_->options_.clock;
  auto last_packet = clock->Now();
  bool up = false;
  Commit commit;
  while (!s_->stopping()) {
    event_ = mariadb_rpl_fetch(rpl_, event_);
    if (!event_) {  // the library freed the event it was given
      if (Classify(last_packet, problem, reason)) continue;
      break;
    }
    last_packet = clock->Now();
    if (!up) {
      up = true;
      s_->SetUp(info_.format, info_.table_granularity());
    }
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

bool BinlogStream::Session::Classify(Clock::TimePoint last_packet, StreamProblem* problem,
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
  if (s_->stopping())
    Fail(StreamProblem::kStopped, "stopped", problem, reason);
  else if (!Refused(code, error, problem, reason))
    Broken(code, error, last_packet, problem, reason);
  return false;
}

bool BinlogStream::Session::Refused(unsigned int code, const std::string& error,
                                    StreamProblem* problem, std::string* reason) {
  const std::string id = std::to_string(s_->server_id_);
  if (IsMysqlError(code, MysqlError::kSpecificAccessDenied)) {
    Fail(StreamProblem::kGrant, MissingReplicationSlave(error), problem, reason);
  } else if (IsMysqlError(code, MysqlError::kSlaveSameId) ||
             Contains(error, "same server_uuid/server_id")) {
    Fail(StreamProblem::kDuplicateId,
         "another replica connected to " + s_->server_ + " with server_id " + id +
             " and the server dropped this stream (" + error +
             "): give each relay instance its own mysql.binlog_server_id (or instance_id)",
         problem, reason);
  } else if (IsMysqlError(code, MysqlError::kBinlogReadFatal) &&
             (Contains(error, "find") || Contains(error, "purge") ||
              Contains(error, "> file size"))) {
    Fail(StreamProblem::kPurged,
         "the stream's binary log position is gone (PURGE BINARY LOGS or RESET MASTER): " + error,
         problem, reason);
  } else {
    return false;
  }
  return true;
}

void BinlogStream::Session::Broken(unsigned int code, const std::string& error,
                                   Clock::TimePoint last_packet, StreamProblem* problem,
                                   std::string* reason) {
  const BinlogOptions& o = s_->options_;
  const uint32_t rpl_code = mariadb_rpl_errno(rpl_);
  if (code == CR_SERVER_LOST &&
      o.clock->Now() - last_packet >=
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
}

bool BinlogStream::RunSession(StreamProblem* problem, std::string* reason) {
  Session session(this);
  if (!session.Open(problem, reason)) return false;
  session.Follow(problem, reason);
  MutexLock lock(&mu_);
  return state_.up;
}

}  // namespace binlog
}  // namespace outbox
