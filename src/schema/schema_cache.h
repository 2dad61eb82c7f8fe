#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "common/clock.h"
#include "common/mutex.h"
#include "common/status.h"
#include "schema/avro_schema.h"
#include "schema/schema_registry.h"

namespace outbox {

// The kinds of schema the formats know.
enum class SchemaType { kAvro, kJson };

// A schema ready to encode with: read from the registry and, for Avro,
// parsed by avro-c.
struct ResolvedSchema {
  int32_t id = 0;
  std::string subject;  // "" when resolved by id
  int version = 0;      // 0 when resolved by id
  SchemaType type = SchemaType::kAvro;
  AvroSchemaPtr avro;  // kAvro only
};
using ResolvedSchemaPtr = std::shared_ptr<const ResolvedSchema>;

// Which of the two reads a lookup was, for metrics.
enum class SchemaLookup { kBySubject, kById };

// What the cache reports, for metrics and logs (the relay's implementation
// counts; the default does nothing). Called on the caller's thread, without
// the cache's lock held.
class SchemaCacheObserver {
 public:
  virtual ~SchemaCacheObserver() = default;
  // A request to the registry ended with `result`.
  virtual void OnLookup(SchemaLookup, const Status& /*result*/) {}
  // An answer from the cache without a request.
  virtual void OnCacheHit(SchemaLookup) {}
  // The registry could not be asked to refresh a subject's latest version;
  // the cached one is used meanwhile.
  virtual void OnStaleServed(const std::string& /*subject*/, const Status& /*why*/) {}
};

// Every schema the relay encodes with, in front of the registry
// (docs/FORMATS.md, "The registry"):
//  - by id, and by subject with a pinned version: read once, kept for good
//    (neither ever changes in a registry);
//  - a subject's latest: kept for `latest_ttl`, then read again; while the
//    registry cannot answer (kUnavailable, kPermission) the one held is used
//    (OnStaleServed); Refresh reads it again at once (a payload that did not
//    fit may fit the version just registered), at most once per
//    `min_refresh` per subject;
//  - a failed read is not repeated for `failure_backoff`: meanwhile its
//    error is the answer (a registry that is down costs a caller its
//    timeout once per backoff, not once per row).
// Errors are the seam's (schema_registry.h), plus kInvalid for a schema
// that cannot be used: avro-c refuses it, it is PROTOBUF, or it refers to
// other subjects' schemas.
// Thread-safe; no request is made under the lock, so a slow registry holds
// up only the callers that need it.
class SchemaCache {
 public:
  struct Options {
    // How old a subject's latest version may get before it is read again: a
    // newly registered version is used within this.
    std::chrono::milliseconds latest_ttl{std::chrono::seconds(60)};
    // Refresh reads a subject again at most this often: a stream of
    // payloads that fit no version costs the registry one request a second.
    std::chrono::milliseconds min_refresh{std::chrono::seconds(1)};
    // How long a failed read stands before the registry is asked again.
    std::chrono::milliseconds failure_backoff{std::chrono::seconds(5)};
  };

  // REQUIRES: `registry` and `clock` not null; `*observer` (if given)
  // outlives the cache.
  SchemaCache(SchemaRegistryPtr registry, ClockPtr clock, Options options,
              SchemaCacheObserver* observer = nullptr);

  // The schema of `subject` at `version` ("latest" or a number).
  Status BySubject(const std::string& subject, const std::string& version, ResolvedSchemaPtr* out)
      EXCLUDES(mu_);
  // The schema with `id`.
  Status ById(int32_t id, ResolvedSchemaPtr* out) EXCLUDES(mu_);
  // Reads `subject`'s latest version again now, unless it was read within
  // min_refresh; *out is the one held afterwards.
  Status Refresh(const std::string& subject, ResolvedSchemaPtr* out) EXCLUDES(mu_);
  // True when BySubject (or ById) would answer from the cache, without a
  // request.
  bool Holds(const std::string& subject, const std::string& version) EXCLUDES(mu_);
  bool HoldsId(int32_t id) EXCLUDES(mu_) { return Holds("", std::to_string(id)); }

 private:
  // {subject, version}, or {"", id} for a read by id.
  using Key = std::pair<std::string, std::string>;
  struct Entry {
    ResolvedSchemaPtr schema;  // null after a failure with nothing held
    Status error;              // that failure
    Clock::TimePoint requested_at;
    Clock::TimePoint fresh_until;
  };
  // The answer for `key`: from the entry while it is fresh, else a request.
  Status Lookup(const Key& key, ResolvedSchemaPtr* out) EXCLUDES(mu_);
  // Asks the registry for `key` and records the outcome.
  Status Fetch(const Key& key, ResolvedSchemaPtr* out) EXCLUDES(mu_);
  // Records a request's outcome; returns what the caller gets.
  Status Record(const Key& key, Status result, ResolvedSchemaPtr resolved, ResolvedSchemaPtr* out)
      EXCLUDES(mu_);

  const SchemaRegistryPtr registry_;
  const ClockPtr clock_;
  const Options options_;
  SchemaCacheObserver default_observer_;
  SchemaCacheObserver* const observer_;

  Mutex mu_;
  std::map<Key, Entry> entries_ GUARDED_BY(mu_);
};

// A request's result as the lookup metrics label it (the relay's
// outbox_schema_registry_lookups_total, the inbox library's
// outbox_consumer_schema_lookups_total): ok | unavailable | denied |
// not_found | invalid. Pure.
const char* LookupResultLabel(const Status& result);

// The registry's schema made ready (parsed when Avro); kInvalid when it
// cannot be used. Pure; thread-safe.
Status ResolveSchema(const RegisteredSchema& registered, ResolvedSchemaPtr* out);

}  // namespace outbox
