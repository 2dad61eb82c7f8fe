#pragma once

#include <memory>
#include <string>

#include "config/config.h"
#include "kafka/publisher.h"
#include "metrics/schema_metrics.h"
#include "schema/schema_cache.h"
#include "schema/schema_publisher.h"

namespace outbox {

// One service's Schema Registry reports: the registry's metrics
// (metrics/schema_metrics.h) and its log lines ("schema registry does not
// answer; rows wait" / "schema registry answers again"). Thread-safe.
// `*metrics` must outlive it.
class SchemaReports final : public SchemaCacheObserver, public SchemaPublisherObserver {
 public:
  SchemaReports(SchemaMetrics* metrics, std::string service);
  ~SchemaReports() override;  // removes the service's series

  void OnLookup(SchemaLookup lookup, const Status& result) override;
  void OnCacheHit(SchemaLookup lookup) override;
  void OnConversionFailure(const std::string& reason, const std::string& error) override;
  void OnRegistryChange(const std::string& why) override;

 private:
  SchemaMetrics* const metrics_;
  const std::string service_;
};

// True when a value format of `s` is not bytes.
bool UsesSchemaRegistry(const ServiceConfig& s);

// The SchemaPublisher in front of `inner` for `s` (UsesSchemaRegistry),
// over an HttpSchemaRegistry of s.kafka.schema_registry with its cache; it
// keeps the service's SchemaReports. A registry client that cannot be made
// (a CA file OpenSSL refuses) is logged, and the rows wait with that reason
// as for a registry that does not answer.
std::shared_ptr<SchemaPublisher> MakeSchemaPublisher(const ServiceConfig& s, PublisherPtr inner,
                                                     SchemaMetrics* metrics);

}  // namespace outbox
