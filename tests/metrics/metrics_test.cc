// The exposition (src/metrics/metrics.h): build info and the failure
// reasons exported from the start.
#include "metrics/metrics.h"

#include <catch2/catch.hpp>

#include "common/build_info.h"

namespace outbox {
namespace {

TEST_CASE("the exposition names the version and the revision and the instance", "[metrics]") {
  Metrics metrics;
  metrics.SetInstance("relay-a");
  metrics.ForService("orders");
  std::string text = metrics.Serialize();
  CHECK(text.find("outbox_relay_build_info{instance_id=\"relay-a\",revision=\"" +
                  std::string(BuildRevision()) + "\",version=\"" OUTBOX_VERSION "\"} 1") !=
        std::string::npos);
  CHECK(text.find("outbox_retention_failures_total{service=\"orders\"} 0") != std::string::npos);
}

TEST_CASE(
    "every publish failure reason is exported at 0 from the start so that rate() counts its "
    "first failures",
    "[metrics]") {
  Metrics metrics;
  ServiceMetrics& m = metrics.ForService("orders");
  std::string text = metrics.Serialize();
  for (FailureReason r : kFailureReasons) {
    const std::string reason(ToLabel(r));
    INFO(reason);
    CHECK(text.find("outbox_publish_failures_total{reason=\"" + reason +
                    "\",service=\"orders\"} 0") != std::string::npos);
  }
  m.PublishFailures("timeout").Increment();
  CHECK(metrics.Serialize().find(
            "outbox_publish_failures_total{reason=\"timeout\",service=\"orders\"} 1") !=
        std::string::npos);
}

}  // namespace
}  // namespace outbox
