#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "config/config.h"
#include "outbox/row.h"
#include "outbox/table_schema.h"

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
  int64_t age_s = 0;                       // since updated_at (when it became DEAD), database clock
  std::optional<std::string> traceparent;  // the optional column, as written
};

struct DeadSelector {
  std::vector<int64_t> ids;
  std::optional<std::string> event_type;
  bool all = false;
};

// Each call opens its own connection with `config` and closes it: no
// Connector/C++ type crosses this header (src/app/ includes it; the client
// library stays inside src/outbox/, scripts/check-layering).
Status ListDead(const MysqlConfig& config, int limit, std::vector<DeadRow>* out);
// DEAD -> NEW with retry_count = 0 and next_retry_at = NOW(). With dry_run,
// only reports what it would change. *changed gets the rows (as they were).
Status ReplayDead(const MysqlConfig& config, const DeadSelector& selector, bool dry_run,
                  std::vector<DeadRow>* changed);

// What `outbox-relay check --connect` learns about a service's table.
struct TableAccess {
  TableSchema schema;                       // InspectTable's result
  std::string granted;                      // the privileges that work, e.g. "SELECT, UPDATE"
  std::vector<std::string> grant_problems;  // ProbeGrants' problems, one line each
};
// Connects with `config`, inspects the table and, when it exists with every
// required column, probes the grants (outbox/grant_probe.h; DELETE when
// `need_delete`). Fails only when connecting or inspecting fails; a grant
// probe that fails is reported as one of grant_problems.
Status CheckTableAccess(const MysqlConfig& config, bool need_delete, TableAccess* out);

}  // namespace outbox
