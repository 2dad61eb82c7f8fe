#pragma once

// A service writing events while a test watches: on a thread and a
// connection of its own (SqlClient), one INSERT into t_outbox, its own
// transaction, at a time. Stop() (or the destructor) ends it.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>

namespace outbox::testing {

class OutboxWriter {
 public:
  // The row numbered i (0, 1, ...): the VALUES of t_outbox's (id,
  // aggregate_type, aggregate_id, event_type, event_key, payload), written
  // NEW and due now; rows `period` apart at a steady rate, `max_rows` of
  // them at the most.
  using RowFn = std::function<std::string(int64_t i)>;
  OutboxWriter(const std::string& database, std::chrono::microseconds period, int64_t max_rows,
               RowFn row);
  ~OutboxWriter() { Stop(); }
  OutboxWriter(const OutboxWriter&) = delete;
  OutboxWriter& operator=(const OutboxWriter&) = delete;

  void Stop();
  int64_t written() const { return written_.load(); }

 private:
  void Run(const std::string& database, std::chrono::microseconds period, int64_t max_rows,
           const RowFn& row);

  std::atomic<bool> stop_{false};
  std::atomic<int64_t> written_{0};
  std::thread thread_;  // last: starts once the counters exist
};

}  // namespace outbox::testing
