#include "support/outbox_writer.h"

#include "support/test_env.h"

namespace outbox::testing {

OutboxWriter::OutboxWriter(const std::string& database, std::chrono::microseconds period,
                           int64_t max_rows, RowFn row)
    : thread_([this, database, period, max_rows, row = std::move(row)] {
        Run(database, period, max_rows, row);
      }) {}

void OutboxWriter::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void OutboxWriter::Run(const std::string& database, std::chrono::microseconds period,
                       int64_t max_rows, const RowFn& row) {
  SqlClient sql(database);  // its own: a TestDatabase's connection is not shared
  auto next = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < max_rows && !stop_; ++i) {
    sql.Exec(
        "INSERT INTO t_outbox (id, aggregate_type, aggregate_id, event_type, event_key, payload, "
        "status, next_retry_at, created_at, updated_at) VALUES (" +
        row(i) + ", 'NEW', NOW(), NOW(), NOW())");
    ++written_;
    next += period;
    std::this_thread::sleep_until(next);
  }
}

}  // namespace outbox::testing
