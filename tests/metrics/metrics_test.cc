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
  for (const FailureReasonLabel& l : kFailureReasonLabels) {
    const std::string reason(ToLabel(l.reason));
    INFO(reason);
    CHECK(text.find("outbox_publish_failures_total{reason=\"" + reason +
                    "\",service=\"orders\"} 0") != std::string::npos);
  }
  m.AddPublishFailure("timeout");
  CHECK(metrics.Serialize().find(
            "outbox_publish_failures_total{reason=\"timeout\",service=\"orders\"} 1") !=
        std::string::npos);
}

TEST_CASE("a gauge read from the database has no sample until its first successful read",
          "[metrics]") {
  Metrics metrics;
  ServiceMetrics& m = metrics.ForService("orders");
  CHECK(metrics.Serialize().find("outbox_backlog_events{") == std::string::npos);
  CHECK(metrics.Serialize().find("outbox_last_poll_timestamp_seconds{") == std::string::npos);
  m.Set(ServiceStats::Gauge::kBacklog, 0);
  CHECK(metrics.Serialize().find("outbox_backlog_events{service=\"orders\"} 0") !=
        std::string::npos);
  m.Clear(ServiceStats::Gauge::kBacklog);
  CHECK(metrics.Serialize().find("outbox_backlog_events{") == std::string::npos);
}

TEST_CASE("a removed service leaves no series behind and the others keep theirs", "[metrics]") {
  Metrics metrics;
  for (const char* name : {"orders", "billing"}) {
    ServiceMetrics& m = metrics.ForService(name);
    m.Set(ServiceStats::Gauge::kBacklog, 3);
    m.Add(ServiceStats::Counter::kEventsDead);
    m.AddPublished("outbox.event.Order");
    m.Observe(ServiceStats::Histogram::kPublishLatency, 0.01);
  }
  metrics.RemoveService("orders");
  const std::string text = metrics.Serialize();
  CHECK(text.find("service=\"orders\"") == std::string::npos);
  CHECK(text.find("outbox_backlog_events{service=\"billing\"} 3") != std::string::npos);
  CHECK(text.find(
            "outbox_events_published_total{service=\"billing\",topic=\"outbox.event.Order\"} 1") !=
        std::string::npos);
  // Added again (a reload that brings it back): counters start at 0.
  metrics.ForService("orders");
  CHECK(metrics.Serialize().find("outbox_events_dead_total{service=\"orders\"} 0") !=
        std::string::npos);
}

}  // namespace
}  // namespace outbox
