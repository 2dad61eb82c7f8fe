#include "schema/schema_cache.h"

#include <catch2/catch.hpp>

#include "fakes/fake_clock.h"
#include "fakes/fake_registry.h"

using namespace outbox;
using namespace std::chrono_literals;
using outbox::testing::FakeClock;
using outbox::testing::FakeSchemaRegistry;

namespace {

constexpr const char* kV1 =
    R"({"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"}]})";
constexpr const char* kV2 = R"({"type": "record", "name": "Order", "fields": [
  {"name": "id", "type": "long"}, {"name": "note", "type": ["null", "string"], "default": null}]})";

// Counts what the cache reports.
struct CountingObserver : SchemaCacheObserver {
  int lookups = 0, failed = 0, hits = 0, stale = 0;
  void OnLookup(SchemaLookup, const Status& result) override {
    ++lookups;
    if (!result.ok()) ++failed;
  }
  void OnCacheHit(SchemaLookup) override { ++hits; }
  void OnStaleServed(const std::string&, const Status&) override { ++stale; }
};

struct Bed {
  std::shared_ptr<FakeSchemaRegistry> registry = std::make_shared<FakeSchemaRegistry>();
  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>();
  CountingObserver observer;
  SchemaCache cache{registry, clock, SchemaCache::Options(), &observer};
};

}  // namespace

TEST_CASE("an id is read from the registry once and kept for good", "[schema]") {
  Bed bed;
  const int id = bed.registry->Register("orders-value", kV1);
  ResolvedSchemaPtr s;
  REQUIRE(bed.cache.ById(id, &s).ok());
  CHECK(s->id == id);
  REQUIRE(s->avro);
  bed.clock->Advance(24h);
  REQUIRE(bed.cache.ById(id, &s).ok());
  CHECK(bed.registry->requests() == 1);
  CHECK(bed.observer.lookups == 1);
  CHECK(bed.observer.hits == 1);
}

TEST_CASE("a subject's latest version is read again after its ttl and a pinned one never",
          "[schema]") {
  Bed bed;
  const int v1 = bed.registry->Register("orders-value", kV1);
  ResolvedSchemaPtr latest, pinned;
  REQUIRE(bed.cache.BySubject("orders-value", "latest", &latest).ok());
  REQUIRE(bed.cache.BySubject("orders-value", "1", &pinned).ok());
  CHECK(latest->id == v1);
  CHECK(latest->version == 1);
  const int v2 = bed.registry->Register("orders-value", kV2);
  bed.clock->Advance(59s);
  REQUIRE(bed.cache.BySubject("orders-value", "latest", &latest).ok());
  CHECK(latest->id == v1);  // within the ttl: the one held
  bed.clock->Advance(2s);
  REQUIRE(bed.cache.BySubject("orders-value", "latest", &latest).ok());
  CHECK(latest->id == v2);
  CHECK(latest->version == 2);
  REQUIRE(bed.cache.BySubject("orders-value", "1", &pinned).ok());
  CHECK(pinned->id == v1);
  CHECK(bed.registry->requests() == 3);
}

TEST_CASE("a refresh reads the latest version at once but at most once a second", "[schema]") {
  Bed bed;
  bed.registry->Register("orders-value", kV1);
  ResolvedSchemaPtr s;
  REQUIRE(bed.cache.BySubject("orders-value", "latest", &s).ok());
  const int v2 = bed.registry->Register("orders-value", kV2);
  REQUIRE(bed.cache.Refresh("orders-value", &s).ok());
  CHECK(s->id != v2);  // read a moment ago: not again yet
  bed.clock->Advance(1s);
  REQUIRE(bed.cache.Refresh("orders-value", &s).ok());
  CHECK(s->id == v2);
  // The id came with the subject's answer: no request for it.
  REQUIRE(bed.cache.ById(v2, &s).ok());
  CHECK(bed.registry->requests() == 2);
}

TEST_CASE("while the registry is down a held latest version is used and a new one waits",
          "[schema]") {
  Bed bed;
  bed.registry->Register("orders-value", kV1);
  ResolvedSchemaPtr s;
  REQUIRE(bed.cache.BySubject("orders-value", "latest", &s).ok());
  bed.registry->set_failure(Status::Unavailable("connect: Connection refused"));
  bed.clock->Advance(61s);
  REQUIRE(bed.cache.BySubject("orders-value", "latest", &s).ok());
  CHECK(bed.observer.stale == 1);
  const Status unknown = bed.cache.BySubject("payments-value", "latest", &s);
  CHECK(unknown.code() == StatusCode::kUnavailable);
  // Within the failure backoff the failure is the answer, without a request.
  const int asked = bed.registry->requests();
  CHECK(bed.cache.BySubject("payments-value", "latest", &s).code() == StatusCode::kUnavailable);
  CHECK(bed.registry->requests() == asked);
  bed.registry->set_failure(Status::Ok());
  bed.registry->Register("payments-value", kV2);
  bed.clock->Advance(5s);
  REQUIRE(bed.cache.BySubject("payments-value", "latest", &s).ok());
}

TEST_CASE("an unknown subject or id is a schema error and an unusable schema an invalid one",
          "[schema]") {
  Bed bed;
  ResolvedSchemaPtr s;
  CHECK(bed.cache.BySubject("nobody-value", "latest", &s).code() == StatusCode::kSchema);
  CHECK(bed.cache.ById(99, &s).code() == StatusCode::kSchema);
  const int proto = bed.registry->Register("p-value", "syntax = \"proto3\";", "PROTOBUF");
  const Status p = bed.cache.ById(proto, &s);
  CHECK(p.code() == StatusCode::kInvalid);
  CHECK(p.message() == "schema id " + std::to_string(proto) +
                           ": schema type PROTOBUF is not one the relay encodes (AVRO or JSON)");
  const int bad = bed.registry->Register("b-value", R"({"type": "nonsense"})");
  CHECK(bed.cache.ById(bad, &s).code() == StatusCode::kInvalid);
  const int json = bed.registry->Register("j-value", R"({"type": "object"})", "JSON");
  REQUIRE(bed.cache.ById(json, &s).ok());
  CHECK(s->type == SchemaType::kJson);
  CHECK(s->avro == nullptr);
}
