#include "binlog/binlog_stream.h"

namespace outbox {
namespace binlog {

const char* ToString(StreamProblem p) {
  switch (p) {
    case StreamProblem::kNone:
      return "none";
    case StreamProblem::kStarting:
      return "starting";
    case StreamProblem::kConnect:
      return "connect";
    case StreamProblem::kLogBinOff:
      return "log_bin_off";
    case StreamProblem::kGrant:
      return "grant";
    case StreamProblem::kPurged:
      return "purged";
    case StreamProblem::kDuplicateId:
      return "duplicate_server_id";
    case StreamProblem::kStalled:
      return "stalled";
    case StreamProblem::kLost:
      return "lost";
    case StreamProblem::kStopped:
      return "stopped";
  }
  return "?";
}

}  // namespace binlog
}  // namespace outbox
