#include "counter_handler.h"

#include <cppconn/prepared_statement.h>

namespace inbox {
namespace {

// One statement for every version_check: it creates the aggregate's row
// (none; newer and strict have created and locked it already) or counts
// the event in it. MySQL evaluates the assignments left to right, each
// seeing the columns already assigned: out_of_order must compare before
// last_outbox_id moves.
constexpr const char* kCount =
    "INSERT INTO t_aggregate_effect "
    "(aggregate_type, aggregate_id, applied, last_outbox_id, last_version, out_of_order) "
    "VALUES (?, ?, 1, ?, ?, 0) ON DUPLICATE KEY UPDATE "
    "out_of_order = out_of_order + (? < last_outbox_id), applied = applied + 1, "
    "last_outbox_id = GREATEST(last_outbox_id, ?), last_version = GREATEST(last_version, ?)";

}  // namespace

Status CounterHandler::Apply(Transaction& tx, const Event& ev) {
  sql::PreparedStatement& st = tx.Prepare(kCount);
  st.setString(1, ev.aggregate_type);
  st.setInt64(2, ev.aggregate_id);
  st.setInt64(3, ev.outbox_id);
  st.setInt64(4, ev.aggregate_version);
  st.setInt64(5, ev.outbox_id);
  st.setInt64(6, ev.outbox_id);
  st.setInt64(7, ev.aggregate_version);
  st.executeUpdate();
  return Status::Ok();
}

}  // namespace inbox
