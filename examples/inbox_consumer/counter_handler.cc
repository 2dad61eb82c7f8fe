#include "counter_handler.h"

#include <cppconn/prepared_statement.h>

namespace example {

using outbox::inbox::Event;
using outbox::inbox::Status;
using outbox::inbox::Transaction;
namespace {

// One statement: it creates the aggregate's row or counts the event in it.
// MySQL evaluates the assignments left to right, each seeing the columns
// already assigned: out_of_order must compare before last_outbox_id moves.
// The version check's state is the library's (t_inbox_aggregate), not this.
constexpr const char* kCount =
    "INSERT INTO t_aggregate_effect "
    "(aggregate_type, aggregate_id, applied, last_outbox_id, out_of_order) "
    "VALUES (?, ?, 1, ?, 0) ON DUPLICATE KEY UPDATE "
    "out_of_order = out_of_order + (? < last_outbox_id), applied = applied + 1, "
    "last_outbox_id = GREATEST(last_outbox_id, ?)";

}  // namespace

Status CounterHandler::Apply(Transaction& tx, const Event& ev) {
  sql::PreparedStatement& st = tx.Prepare(kCount);
  st.setString(1, ev.aggregate_type);
  st.setInt64(2, ev.aggregate_id);
  st.setInt64(3, ev.outbox_id);
  st.setInt64(4, ev.outbox_id);
  st.setInt64(5, ev.outbox_id);
  st.executeUpdate();
  return Status::Ok();
}

}  // namespace example
