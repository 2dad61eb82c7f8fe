#pragma once

#include <memory>
#include <string>

#include "common/clock.h"
#include "outbox/inbox/config.h"
#include "outbox/inbox/event.h"
#include "outbox/inbox/observer.h"
#include "schema/schema_cache.h"
#include "schema/schema_registry.h"

namespace outbox::inbox {

// What became of an event's value (ValueReader::Read).
struct ValueRead {
  enum class Kind {
    kOk,          // Event's value fields are set: hand the event on
    kWait,        // the registry does not answer: the partition waits, then tries again
    kDeadLetter,  // the value cannot be read, now or ever: a dead letter with `reason`
  };
  Kind kind = Kind::kOk;
  std::string reason;  // kWait, kDeadLetter: what and where, for the log and dlq_reason
  std::string label;   // kDeadLetter: unknown_schema | unusable_schema | not_avro | invalid_json
};

// Sets ev's schema_id and body from its payload's wire header (0 and all of
// the payload without one) and clears schema_type and json; true when the
// payload has the header. Pure.
bool ReadWireHeader(Event* ev);

// Reads an event's value as values.decode asks (docs/CONSUMERS.md "Values
// with a schema"): the wire header, the schema id looked up in the Schema
// Registry through src/schema/'s cache (an id is read once and kept), and
// with decode json the value decoded (AvroSchema::Decode) or, for a JSON
// Schema, checked to be JSON. Registry errors are sorted as the relay sorts
// them (value_encoder.cc): no answer, 5xx, 429 or 401/403 is a wait; its
// 404 (unknown_schema) or another error of its API (unusable_schema) a
// dead letter. Reports lookups and the registry's state to *observer.
// Thread-safe (the cache is); one per consumer-group member.
class ValueReader {
 public:
  // `registry` null: no registry (decode raw only: ids are not checked).
  // *observer (may be null) outlives the reader.
  ValueReader(ValueDecode decode, outbox::SchemaRegistryPtr registry, outbox::ClockPtr clock,
              ConsumerObserver* observer);
  ~ValueReader();
  ValueReader(const ValueReader&) = delete;
  ValueReader& operator=(const ValueReader&) = delete;

  // Sets ev's schema_id, body, schema_type and json from ev->payload.
  ValueRead Read(Event* ev) const;

 private:
  class Reports;
  ValueRead LookupFailed(int32_t id, const outbox::Status& s) const;

  const ValueDecode decode_;
  std::unique_ptr<Reports> reports_;
  std::shared_ptr<outbox::SchemaCache> cache_;  // null without a registry
};

// The registry client of `config` (HttpSchemaRegistry); null when it has
// no url. False with *error (naming the key) when the url or the CA file
// cannot be used.
bool MakeRegistry(const RegistryConfig& config, outbox::SchemaRegistryPtr* out, std::string* error);

}  // namespace outbox::inbox
