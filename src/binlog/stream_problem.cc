#include "binlog/binlog_stream.h"
#include "common/enum_names.h"

namespace outbox {
namespace binlog {

namespace {

// In StreamProblem's order (binlog_stream.h): a new value's name goes at the end.
constexpr const char* const kStreamProblemNames[] = {
    "none",    "starting", "connect", "log_bin_off", "grant", "purged", "duplicate_server_id",
    "stalled", "lost",     "stopped"};
static_assert(NamesEveryValue(kStreamProblemNames, StreamProblem::kStopped));

}  // namespace

const char* ToString(StreamProblem p) { return NameOf(kStreamProblemNames, p, "?"); }

}  // namespace binlog
}  // namespace outbox
