#pragma once

// Steady single-row inserts into the outbox tables of several databases, for
// the services stage (one relay serving many databases). outbox-load writes
// one table; this writes many, the way many services' writers would.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "db.h"

namespace outbox::bench {

class PacedWriter {
 public:
  // Opens `connections` connections now, so that their setup statements fall
  // outside a measured window. `databases`: each holds an outbox table
  // `table`. Ids and aggregate ids start at first_id in every table (give
  // each writer on the same tables its own range). Throws sql::SQLException.
  PacedWriter(const DbParams& params, std::vector<std::string> databases, const std::string& table,
              int connections, int64_t first_id);
  ~PacedWriter();

  struct Result {
    int64_t written = 0;
    double max_lag_ms = 0;  // how late the latest insert started against its schedule
  };
  // Writes `rate` events/s in total for `seconds`: event g goes to database
  // g % N, due g / rate seconds after the start, one autocommit INSERT with
  // {"ts_us": <wall clock just before the INSERT>} as its payload and
  // aggregate type "Lat". Connection c writes the databases with index % C ==
  // c, so every table gets its ids in order. Blocks until done; throws on
  // a write error.
  Result Run(double rate, double seconds);
  int connections() const { return static_cast<int>(conns_.size()); }

 private:
  std::vector<std::string> databases_;
  std::string table_;
  std::vector<std::unique_ptr<Db>> conns_;
  std::vector<int64_t> next_id_;  // per database
  int64_t next_aggregate_ = 1;
};

}  // namespace outbox::bench
