#pragma once

#include <string>

#include "outbox/inbox/config.h"
#include "outbox/inbox/export.h"

namespace outbox::inbox {

// The inbox's tables (docs/CONSUMERS.md, "Tables"): t_inbox with its
// retention index, t_inbox_aggregate and t_inbox_parked, as the installed
// share/outbox-inbox/inbox_schema.sql holds them, in the order they
// apply: statements that end with ";" at the end of a line, no ";" in a
// comment. For a service's migrations, or to print.
OUTBOX_INBOX_EXPORT const std::string& InboxSchemaSql();

// Creates the inbox's tables in config.mysql's database, those it lacks
// only (existing ones are left as they are, a missing retention index is
// added): "" when they exist afterwards, else what failed
// ("t_inbox_parked: MySQL error 1142 (42000): CREATE command denied ...").
// Needs CREATE, ALTER and INDEX on the database, which the consumer's own
// account does not need otherwise (docs/CONSUMERS.md, "Grants"): for a
// deployment step, a test, or a development database. Blocks for up to
// config.mysql's timeouts; thread-safe.
OUTBOX_INBOX_EXPORT std::string CreateTables(const ConsumerConfig& config);

}  // namespace outbox::inbox
