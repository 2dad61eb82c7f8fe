#include "metrics/schema_metrics.h"

#include <catch2/catch.hpp>

#include "metrics/metrics.h"

using namespace outbox;

TEST_CASE("a service's schema series exist from its start and go with its last encoder",
          "[metrics]") {
  Metrics metrics;
  SchemaMetrics schema(*metrics.registry());
  schema.Add("orders");
  std::string text = metrics.Serialize();
  CHECK(text.find("outbox_schema_registry_up{service=\"orders\"} 1") != std::string::npos);
  CHECK(text.find("outbox_schema_conversion_failures_total{reason=\"missing_field\","
                  "service=\"orders\"} 0") != std::string::npos);
  CHECK(text.find("outbox_schema_registry_lookups_total{result=\"unavailable\","
                  "service=\"orders\"} 0") != std::string::npos);
  schema.AddLookup("orders", "unavailable");
  schema.SetRegistryUp("orders", false);
  text = metrics.Serialize();
  CHECK(text.find("outbox_schema_registry_lookups_total{result=\"unavailable\","
                  "service=\"orders\"} 1") != std::string::npos);
  CHECK(text.find("outbox_schema_registry_up{service=\"orders\"} 0") != std::string::npos);
  schema.Add("orders");  // a restart's new encoder, before the old one is gone
  schema.Remove("orders");
  CHECK(metrics.Serialize().find("outbox_schema_registry_up{service=\"orders\"}") !=
        std::string::npos);
  schema.Remove("orders");
  CHECK(metrics.Serialize().find("service=\"orders\"") == std::string::npos);
}
