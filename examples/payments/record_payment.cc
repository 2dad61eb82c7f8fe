#include "record_payment.h"

#include <cppconn/prepared_statement.h>

namespace payments {

outbox::inbox::Status RecordPayment::Apply(outbox::inbox::Transaction& tx,
                                           const outbox::inbox::Event& event) {
  if (event.event_type != "OrderPaid") return outbox::inbox::Status::Ok();
  // Values bound with `?`: one prepared statement whatever the event.
  sql::PreparedStatement& insert =
      tx.Prepare("INSERT INTO t_payment (event_key, order_id, outbox_id) VALUES (?, ?, ?)");
  insert.setString(1, event.event_key);
  insert.setInt64(2, event.aggregate_id);
  insert.setInt64(3, event.outbox_id);
  insert.executeUpdate();  // an exception is let through: the library retries or dead-letters
  return outbox::inbox::Status::Ok();
}

}  // namespace payments
