#pragma once

// The inbox library in this process, for the tests that drive its public
// API (outbox/inbox/consumer.h, testing.h) against a ConsumerDatabase and a
// ConsumerRig: the consumer account's DbConfig, a consumer's config on the
// rig, and a Consumer run on a thread of its own.
#include <functional>
#include <string>

#include "outbox/inbox/consumer.h"
#include "support/consumer_harness.h"

namespace outbox::testing {

// The tests' own account (TestMysql) on `database`, TLS off: what a service's
// test fills in for the test kit or CreateTables.
inbox::DbConfig RootInboxDb(const std::string& database);

// The consumer user (ConsumerDatabase::kUser) on `db`, TLS off, with short
// timeouts (1 s to connect, 5 s a statement) so a failure shows quickly.
inbox::DbConfig InboxDb(const ConsumerDatabase& db);

// Consumer "fulfillment" (its group too) of the rig's Order topic on its
// broker and database, with the tests' group timing (kGroupTiming).
inbox::ConsumerConfig InboxConfig(ConsumerRig& rig);

// Runs `consumer` on a thread of its own until `done` holds (60 s at most)
// and then stops it: its exit code; *settled says whether `done` held.
int RunUntil(inbox::Consumer& consumer, const std::function<bool()>& done, bool* settled);

}  // namespace outbox::testing
