#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "outbox/mysql_connection.h"
#include "outbox/row.h"

namespace outbox {

// Operator actions on DEAD rows (README "Commands"). Safe while relays run: a replay
// only touches rows that are still DEAD, under row locks.

struct DeadRow {
  int64_t id = 0;
  AggregateKey aggregate;
  std::string event_type;
  std::string event_key;
  int retry_count = 0;
  std::optional<std::string> last_error;
  int64_t created_at_unix = 0;
  int64_t age_s = 0;  // since updated_at (when it became DEAD), database clock
};

struct DeadSelector {
  std::vector<int64_t> ids;
  std::optional<std::string> event_type;
  bool all = false;
};

Status ListDead(MysqlConnection& conn, int limit, std::vector<DeadRow>* out);
// DEAD -> NEW with retry_count = 0 and next_retry_at = NOW(). With dry_run,
// only reports what it would change. *changed gets the rows (as they were).
Status ReplayDead(MysqlConnection& conn, const DeadSelector& selector, bool dry_run,
                  std::vector<DeadRow>* changed);

}  // namespace outbox
