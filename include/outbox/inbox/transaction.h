#pragma once

#include <string>

#include "outbox/inbox/export.h"

namespace sql {
class PreparedStatement;
}  // namespace sql

namespace outbox::inbox {

// The inbox transaction a handler runs its statements in: the same
// connection and the same transaction as the event's inbox row, so that
// the effect and the dedupe commit together or not at all. The library
// begins, commits and rolls back; a handler never does (a COMMIT of its
// own would commit the inbox row before the effect is complete).
// Valid only during the Handler::Apply call it is passed to.
class OUTBOX_INBOX_EXPORT Transaction {
 public:
  virtual ~Transaction() = default;

  // A statement prepared on the transaction's connection (MySQL
  // Connector/C++, <cppconn/prepared_statement.h>), cached by its text: set
  // its parameters and execute it. The reference is valid until Apply
  // returns. The connection keeps DbConfig::statement_cache statements,
  // the least recently used first out (never one the running Apply used),
  // so bind values with `?` rather than writing them into the text.
  // Throws sql::SQLException as Connector/C++ does; let it through (a
  // caught deadlock is found and the event tried again, a caught statement
  // failure is not: docs/CONSUMERS.md "Library").
  virtual sql::PreparedStatement& Prepare(const std::string& statement) = 0;

  // t_inbox.consumer: the name this service processes events under.
  virtual const std::string& consumer() const = 0;
};

}  // namespace outbox::inbox
