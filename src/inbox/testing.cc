// The test kit of outbox/inbox/testing.h, on the consumer's own InboxStore.
#include "outbox/inbox/testing.h"

#include <cppconn/resultset.h>
#include <cppconn/statement.h>

#include <stdexcept>

#include "common/enum_names.h"
#include "inbox/inbox_store.h"
#include "inbox/value_reader.h"

namespace outbox::inbox::testing {

TestEvent::TestEvent(std::string aggregate_type, int64_t aggregate_id, int64_t outbox_id) {
  event_.event_type = "Event";
  event_.aggregate_type = std::move(aggregate_type);
  event_.aggregate_id = aggregate_id;
  event_.outbox_id = outbox_id;
  event_.source = {"outbox.event." + event_.aggregate_type, 0, outbox_id};
  Rebuild();
}

TestEvent::TestEvent(const TestEvent& other)
    : event_(other.event_),
      payload_(other.payload_),
      explicit_key_(other.explicit_key_),
      extra_headers_(other.extra_headers_) {
  Rebuild();
}

TestEvent& TestEvent::operator=(const TestEvent& other) {
  if (this == &other) return *this;
  event_ = other.event_;
  payload_ = other.payload_;
  explicit_key_ = other.explicit_key_;
  extra_headers_ = other.extra_headers_;
  Rebuild();
  return *this;
}

TestEvent& TestEvent::Type(std::string event_type) {
  event_.event_type = std::move(event_type);
  Rebuild();
  return *this;
}

TestEvent& TestEvent::Key(std::string event_key) {
  explicit_key_ = std::move(event_key);
  Rebuild();
  return *this;
}

TestEvent& TestEvent::Version(int64_t aggregate_version) {
  event_.aggregate_version = aggregate_version;
  Rebuild();
  return *this;
}

TestEvent& TestEvent::Payload(std::string payload) {
  payload_ = std::move(payload);
  Rebuild();
  return *this;
}

TestEvent& TestEvent::Decoded(std::string json, std::string schema_type) {
  event_.json = std::move(json);
  event_.schema_type = std::move(schema_type);
  Rebuild();
  return *this;
}

TestEvent& TestEvent::Header(std::string name, std::string value) {
  extra_headers_.emplace_back(std::move(name), std::move(value));
  Rebuild();
  return *this;
}

TestEvent& TestEvent::From(std::string topic, int32_t partition, int64_t offset) {
  event_.source = {std::move(topic), partition, offset};
  Rebuild();
  return *this;
}

void TestEvent::Rebuild() {
  Event& e = event_;
  e.event_key = !explicit_key_.empty() ? explicit_key_
                                       : e.event_type + "-" + std::to_string(e.aggregate_id) + "-" +
                                             std::to_string(e.outbox_id);
  key_ = std::to_string(e.aggregate_id);
  e.key = key_;
  e.payload = payload_;
  // The wire header's fields from the payload; what Decoded set stays.
  std::string json = std::move(e.json), schema_type = std::move(e.schema_type);
  ReadWireHeader(&e);
  e.json = std::move(json);
  e.schema_type = std::move(schema_type);
  e.headers = {{"event_key", e.event_key},
               {"event_type", e.event_type},
               {"aggregate_type", e.aggregate_type},
               {"outbox_id", std::to_string(e.outbox_id)}};
  if (e.aggregate_version > 0)
    e.headers.emplace_back("aggregate_version", std::to_string(e.aggregate_version));
  e.headers.insert(e.headers.end(), extra_headers_.begin(), extra_headers_.end());
}

namespace {

constexpr const char* const kOutcomeNames[] = {"applied",     "duplicate",   "stale",
                                               "parked",      "retriable",   "poison",
                                               "dead_letter", "unavailable", "lost_transaction"};
static_assert(NamesEveryValue(kOutcomeNames, Outcome::kLostTransaction));

}  // namespace

const char* OutcomeName(Outcome outcome) { return NameOf(kOutcomeNames, outcome, "?"); }

InboxRunner::InboxRunner(DbConfig mysql, std::string consumer, Handler& handler, VersionCheck check)
    : store_(std::make_unique<InboxStore>(std::move(mysql), std::move(consumer), check, handler)) {}

InboxRunner::~InboxRunner() = default;

Outcome InboxRunner::Apply(const TestEvent& event, std::string* error) {
  const Event& e = event.event();
  std::string why;
  const ApplyResult r = store_->Apply(e, e.source, &why);
  if (error) *error = why;
  switch (r) {
    case ApplyResult::kApplied:
      return Outcome::kApplied;
    case ApplyResult::kDuplicate:
      return Outcome::kDuplicate;
    case ApplyResult::kStale:
      return Outcome::kStale;
    case ApplyResult::kParked:
      return Outcome::kParked;
    case ApplyResult::kRetryLater:
      return Outcome::kRetriable;
    case ApplyResult::kRejected:
      return Outcome::kPoison;
    case ApplyResult::kDeadLetter:
      return Outcome::kDeadLetter;
    case ApplyResult::kLostTransaction:
      return Outcome::kLostTransaction;
    case ApplyResult::kUnavailable:
      break;
  }
  return Outcome::kUnavailable;
}

namespace {

// The first column of the first row, or nullopt-like "" / 0 for none.
template <typename T, typename Read>
T FirstValue(InboxStore& store, const std::string& query, Read read) {
  sql::Connection& conn = store.connection();
  std::unique_ptr<sql::Statement> st(conn.createStatement());
  std::unique_ptr<sql::ResultSet> rs(st->executeQuery(query));
  T value{};
  if (rs->next() && !rs->isNull(1)) value = read(*rs);
  conn.commit();  // ends the read's transaction: the next one sees newer commits
  return value;
}

}  // namespace

void InboxRunner::Execute(const std::string& statement) {
  sql::Connection& conn = store_->connection();
  std::unique_ptr<sql::Statement> st(conn.createStatement());
  st->execute(statement);
  conn.commit();
}

int64_t InboxRunner::QueryInt(const std::string& query) {
  return FirstValue<int64_t>(*store_, query, [](sql::ResultSet& rs) { return rs.getInt64(1); });
}

std::string InboxRunner::QueryString(const std::string& query) {
  return FirstValue<std::string>(*store_, query,
                                 [](sql::ResultSet& rs) { return std::string(rs.getString(1)); });
}

}  // namespace outbox::inbox::testing
