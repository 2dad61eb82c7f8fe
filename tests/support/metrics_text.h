#pragma once

// Reading the Prometheus text format (/metrics, Metrics::Serialize()) in
// tests: the one parser every test that checks a metric goes through.

#include <string>
#include <vector>

namespace outbox::testing {

// One sample line: `name{labels} value` (labels without the braces, "" when
// there are none, in the order the exposition wrote them).
struct MetricSample {
  std::string name;
  std::string labels;
  double value = 0;
};

// The samples of `exposition`, in order; comments (# HELP, # TYPE), blank and
// unparsable lines are skipped.
std::vector<MetricSample> ParseMetricSamples(const std::string& exposition);

// The value of the sample written exactly as `sample` (e.g.
// `outbox_database_up{service="orders"}` or `outbox_kafka_up`); NaN when
// absent.
double MetricValue(const std::string& exposition, const std::string& sample);

// The sum of every sample of metric `name` whose labels contain
// `label_filter` (e.g. `service="orders"`; "" sums them all); 0 when absent.
double MetricSum(const std::string& exposition, const std::string& name,
                 const std::string& label_filter = "");

}  // namespace outbox::testing
