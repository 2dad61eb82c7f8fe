#include "paced_writer.h"

#include <cppconn/exception.h>
#include <mysql_driver.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "util.h"

namespace outbox {
namespace bench {

PacedWriter::PacedWriter(const DbParams& params, std::vector<std::string> databases,
                         const std::string& table, int connections, int64_t first_id)
    : databases_(std::move(databases)), table_(table) {
  if (databases_.empty() || connections < 1)
    throw std::invalid_argument("PacedWriter: no databases or no connections");
  for (int c = 0; c < connections; ++c) conns_.push_back(std::make_unique<Db>(params));
  next_id_.assign(databases_.size(), first_id);
  next_aggregate_ = first_id;  // aggregate ids (and so event keys) unique per first_id too
}

PacedWriter::~PacedWriter() = default;

PacedWriter::Result PacedWriter::Run(double rate, double seconds) {
  const int64_t n = static_cast<int64_t>(rate * seconds);
  const int64_t dbs = static_cast<int64_t>(databases_.size());
  const int64_t nconn = static_cast<int64_t>(conns_.size());
  const int64_t aggregate0 = next_aggregate_;
  next_aggregate_ += n;
  std::atomic<int64_t> written{0}, max_lag_us{0};
  std::mutex mu;
  std::string error;
  const double t0 = MonoSeconds();
  auto writer = [&](int64_t c) {
    sql::mysql::get_mysql_driver_instance()->threadInit();
    try {
      for (int64_t g = 0; g < n; ++g) {
        const int64_t d = g % dbs;
        if (d % nconn != c) continue;
        const double due = t0 + static_cast<double>(g) / rate;
        const double late = MonoSeconds() - due;
        if (late < 0) SleepSeconds(-late);
        int64_t lag = static_cast<int64_t>(std::max(0.0, late) * 1e6), prev = max_lag_us.load();
        while (lag > prev && !max_lag_us.compare_exchange_weak(prev, lag)) {
        }
        const std::string agg = std::to_string(aggregate0 + g);
        conns_[static_cast<size_t>(c)]->Exec(
            "INSERT INTO `" + databases_[static_cast<size_t>(d)] + "`.`" + table_ +
            "` (id, aggregate_type, aggregate_id, event_type, event_key, payload, status,"
            " retry_count, next_retry_at, created_at, updated_at) VALUES (" +
            std::to_string(next_id_[static_cast<size_t>(d)]++) + ", 'Lat', " + agg +
            ", 'LatCreated', 'LatCreated:" + agg + ":0', '{\"ts_us\":" +
            std::to_string(WallMicros()) + "}', 'NEW', 0, NOW(), NOW(), NOW())");
        ++written;
      }
    } catch (const sql::SQLException& e) {
      std::lock_guard<std::mutex> lock(mu);
      error = e.what();
    }
    sql::mysql::get_mysql_driver_instance()->threadEnd();
  };
  std::vector<std::thread> threads;
  for (int64_t c = 0; c < nconn; ++c) threads.emplace_back(writer, c);
  for (auto& t : threads) t.join();
  if (!error.empty()) throw std::runtime_error("paced writer: " + error);
  return {written.load(), static_cast<double>(max_lag_us.load()) / 1000.0};
}

}  // namespace bench
}  // namespace outbox
