#pragma once

// The test kit (docs/CONSUMERS.md, "Testing a handler"): events built as
// the relay publishes them, and a handler run against a real MySQL or
// MariaDB inside the inbox transaction, as the consumer runs it, without
// Kafka. For a service's own tests:
//
//   outbox::inbox::testing::InboxRunner runner(db, "payments", handler);
//   const auto paid = outbox::inbox::testing::TestEvent("Order", 7, 1)
//                         .Type("OrderPaid").Payload(R"({"amount": 12})");
//   assert(runner.Apply(paid) == outbox::inbox::testing::Outcome::kApplied);
//   assert(runner.Apply(paid) == outbox::inbox::testing::Outcome::kDuplicate);

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "outbox/inbox/config.h"
#include "outbox/inbox/event.h"
#include "outbox/inbox/export.h"
#include "outbox/inbox/handler.h"

namespace outbox::inbox {

class InboxStore;

namespace testing {

// One event as the relay publishes it, owning what Event's views point to.
// The defaults make a valid event of type "Event", without
// aggregate_version, read from topic outbox.event.{aggregate_type},
// partition 0, offset outbox_id; event_key is
// "{event_type}-{aggregate_id}-{outbox_id}" unless Key sets it.
class OUTBOX_INBOX_EXPORT TestEvent {
 public:
  TestEvent(std::string aggregate_type, int64_t aggregate_id, int64_t outbox_id);
  // A copy's event() views its own key and payload.
  TestEvent(const TestEvent& other);
  TestEvent& operator=(const TestEvent& other);

  TestEvent& Type(std::string event_type);
  TestEvent& Key(std::string event_key);
  TestEvent& Version(int64_t aggregate_version);
  // The message value; one that starts with Confluent's wire header gives
  // the event its schema_id and body, as the consumer reads them.
  TestEvent& Payload(std::string payload);
  // What values.decode: json gives the handler for a value with a schema
  // (docs/CONSUMERS.md "Values with a schema"): Event::json and
  // Event::schema_type, as the library would have decoded them.
  TestEvent& Decoded(std::string json, std::string schema_type = "AVRO");
  // A header besides the relay's own (event_key, event_type,
  // aggregate_type, outbox_id, aggregate_version).
  TestEvent& Header(std::string name, std::string value);
  TestEvent& From(std::string topic, int32_t partition, int64_t offset);

  // The Event a handler is given. Valid until this TestEvent changes or
  // goes away.
  const Event& event() const { return event_; }

 private:
  void Rebuild();  // event_ from the values set so far

  Event event_;
  std::string key_, payload_, explicit_key_;
  std::vector<std::pair<std::string, std::string>> extra_headers_;
};

// What the consumer would do after one delivery of an event.
enum class Outcome {
  kApplied,      // committed: the handler's effect and the inbox row
  kDuplicate,    // the inbox had the event: the handler was not called
  kStale,        // older than the aggregate's last applied event: recorded, not applied
  kParked,       // version_check strict: a later version, parked until the gap fills
  kRetriable,    // rolled back; the handler said Retriable: the partition waits, tries again
  kPoison,       // rolled back; the handler said Poison or the database refused a value:
                 // tried again, dead-lettered after max_attempts
  kDeadLetter,   // rolled back; the handler said Permanent: dead-lettered at once
  kUnavailable,  // rolled back; the database failed: the partition waits, tries again
  // rolled back; the handler returned Ok after its transaction had been
  // rolled back under it (a deadlock or lost connection it caught): the
  // partition waits, tries again
  kLostTransaction,
};
OUTBOX_INBOX_EXPORT const char* OutcomeName(Outcome outcome);

// The inbox transaction on a real database, without Kafka: each Apply is
// one delivery of an event, with the inbox row, the version check and the
// handler in one transaction, committed or rolled back as the consumer
// does. `mysql` names a database with the inbox's tables (CreateTables,
// outbox/inbox/schema.h) and the handler's own; `consumer` is
// t_inbox.consumer. One connection, opened on first use. Not thread-safe.
// *handler must outlive the runner.
class OUTBOX_INBOX_EXPORT InboxRunner {
 public:
  InboxRunner(DbConfig mysql, std::string consumer, Handler& handler,
              VersionCheck check = VersionCheck::kNewer);
  ~InboxRunner();
  InboxRunner(const InboxRunner&) = delete;
  InboxRunner& operator=(const InboxRunner&) = delete;

  // *error (when not null) says why for an outcome that rolled back.
  Outcome Apply(const TestEvent& event, std::string* error = nullptr);

  // A statement on the runner's connection, between two Applys and outside
  // their transactions, committed at once: to set up the handler's rows or
  // clean them. Throws sql::SQLException as Connector/C++ does, and
  // std::runtime_error when the database cannot be reached.
  void Execute(const std::string& statement);
  // The first column of the first row of `query`, read on the runner's
  // connection (what the handler committed): 0 or "" when there is no row
  // or it is NULL. Throws as Execute does.
  int64_t QueryInt(const std::string& query);
  std::string QueryString(const std::string& query);

 private:
  std::unique_ptr<InboxStore> store_;
};

}  // namespace testing
}  // namespace outbox::inbox
