#include "schema/schema_cache.h"

#include "common/enum_names.h"

namespace outbox {

namespace {

constexpr const char* kLatest = "latest";

bool Transient(const Status& s) {
  return s.code() == StatusCode::kUnavailable || s.code() == StatusCode::kPermission;
}

std::string Describe(const RegisteredSchema& r) {
  if (r.subject.empty()) return "schema id " + std::to_string(r.id);
  return "subject " + r.subject + " version " + std::to_string(r.version) + " (id " +
         std::to_string(r.id) + ")";
}

}  // namespace

Status ResolveSchema(const RegisteredSchema& r, ResolvedSchemaPtr* out) {
  if (r.has_references)
    return Status::Invalid(Describe(r) +
                           " refers to schemas under other subjects (references), which the "
                           "relay does not resolve");
  auto resolved = std::make_shared<ResolvedSchema>();
  resolved->id = r.id;
  resolved->subject = r.subject;
  resolved->version = r.version;
  if (r.type == "JSON") {
    resolved->type = SchemaType::kJson;
  } else if (r.type == "AVRO") {
    resolved->type = SchemaType::kAvro;
    if (Status s = AvroSchema::Parse(r.schema, &resolved->avro); !s.ok())
      return Status::Invalid(Describe(r) + ": " + s.message());
  } else {
    return Status::Invalid(Describe(r) + ": schema type " + r.type +
                           " is not one the relay encodes (AVRO or JSON)");
  }
  *out = std::move(resolved);
  return Status::Ok();
}

SchemaCache::SchemaCache(SchemaRegistryPtr registry, ClockPtr clock, Options options,
                         SchemaCacheObserver* observer)
    : registry_(std::move(registry)),
      clock_(std::move(clock)),
      options_(options),
      observer_(observer != nullptr ? observer : &default_observer_) {}

Status SchemaCache::BySubject(const std::string& subject, const std::string& version,
                              ResolvedSchemaPtr* out) {
  return Lookup({subject, version}, out);
}

Status SchemaCache::ById(int32_t id, ResolvedSchemaPtr* out) {
  return Lookup({"", std::to_string(id)}, out);
}

bool SchemaCache::Holds(const std::string& subject, const std::string& version) {
  MutexLock lock(&mu_);
  auto it = entries_.find({subject, version});
  return it != entries_.end() && clock_->Now() < it->second.fresh_until;
}

Status SchemaCache::Lookup(const Key& key, ResolvedSchemaPtr* out) {
  {
    MutexLock lock(&mu_);
    auto it = entries_.find(key);
    if (it != entries_.end() && clock_->Now() < it->second.fresh_until) {
      if (!it->second.schema) return it->second.error;
      *out = it->second.schema;
      observer_->OnCacheHit(key.first.empty() ? SchemaLookup::kById : SchemaLookup::kBySubject);
      return Status::Ok();
    }
  }
  return Fetch(key, out);
}

Status SchemaCache::Refresh(const std::string& subject, ResolvedSchemaPtr* out) {
  const Key key{subject, kLatest};
  {
    MutexLock lock(&mu_);
    auto it = entries_.find(key);
    if (it != entries_.end() && clock_->Now() - it->second.requested_at < options_.min_refresh) {
      if (!it->second.schema) return it->second.error;
      *out = it->second.schema;
      return Status::Ok();
    }
  }
  return Fetch(key, out);
}

Status SchemaCache::Fetch(const Key& key, ResolvedSchemaPtr* out) {
  RegisteredSchema registered;
  const bool by_id = key.first.empty();
  Status s = by_id ? registry_->GetSchemaById(std::stoi(key.second), &registered)
                   : registry_->GetSubjectVersion(key.first, key.second, &registered);
  observer_->OnLookup(by_id ? SchemaLookup::kById : SchemaLookup::kBySubject, s);
  ResolvedSchemaPtr resolved;
  if (s.ok()) s = ResolveSchema(registered, &resolved);
  return Record(key, std::move(s), std::move(resolved), out);
}

Status SchemaCache::Record(const Key& key, Status result, ResolvedSchemaPtr resolved,
                           ResolvedSchemaPtr* out) {
  ResolvedSchemaPtr stale;
  {
    MutexLock lock(&mu_);
    Entry& e = entries_[key];
    const Clock::TimePoint now = clock_->Now();
    e.requested_at = now;
    if (result.ok()) {
      // An id and a pinned version never change; only "latest" moves on.
      e.fresh_until = key.second == kLatest ? now + options_.latest_ttl : Clock::TimePoint::max();
      e.schema = resolved;
      e.error = Status::Ok();
      // Its id is known now too: a row naming it needs no request.
      if (!key.first.empty())
        entries_[{"", std::to_string(resolved->id)}] =
            Entry{resolved, Status::Ok(), now, Clock::TimePoint::max()};
    } else {
      e.fresh_until = now + options_.failure_backoff;
      if (!Transient(result)) e.schema = nullptr;  // gone or unusable: never served again
      e.error = result;
      stale = e.schema;
    }
  }
  if (result.ok()) {
    *out = std::move(resolved);
    return Status::Ok();
  }
  if (!stale) return result;
  observer_->OnStaleServed(key.first, result);
  *out = std::move(stale);
  return Status::Ok();
}

namespace {

// The `result` label of a registry lookup, by StatusCode (an unclassified
// error counts as invalid).
constexpr const char* const kLookupResults[] = {"ok",     "invalid",   "unavailable",
                                                "denied", "not_found", "invalid"};
static_assert(NamesEveryValue(kLookupResults, StatusCode::kInvalid));

}  // namespace

const char* LookupResultLabel(const Status& result) {
  return NameOf(kLookupResults, result.code(), "invalid");
}

}  // namespace outbox
