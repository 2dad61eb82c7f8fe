#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "outbox/table_schema.h"

namespace outbox {

class MysqlConnection;

// The privileges the relay needs on its table, tried the way the relay uses
// them but on no row (`WHERE 1 = 0`: no row is read, locked or changed):
// SELECT of every column it reads, UPDATE of every column it writes, and
// DELETE when `need_delete` (retention). Appends one line per problem to
// *problems, naming the missing grant and the GRANT statement that fixes it;
// a read-only server is a problem too. *granted lists what works, e.g.
// "SELECT, UPDATE". Returns an error only when the connection fails.
// REQUIRES: schema is InspectTable's result for an existing table.
Status ProbeGrants(MysqlConnection& conn, const TableSchema& schema, bool need_delete,
                   std::string* granted, std::vector<std::string>* problems);

}  // namespace outbox
