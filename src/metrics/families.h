#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <string>

namespace outbox {

// A family of series registered in `registry` under `name` with its help
// text: what every metric of the relay is built from (its series are added
// to it, one per label set). The family lives as long as the registry.
inline prometheus::Family<prometheus::Gauge>* AddGauge(prometheus::Registry& registry,
                                                       const std::string& name,
                                                       const std::string& help) {
  return &prometheus::BuildGauge().Name(name).Help(help).Register(registry);
}

inline prometheus::Family<prometheus::Counter>* AddCounter(prometheus::Registry& registry,
                                                           const std::string& name,
                                                           const std::string& help) {
  return &prometheus::BuildCounter().Name(name).Help(help).Register(registry);
}

inline prometheus::Family<prometheus::Histogram>* AddHistogram(prometheus::Registry& registry,
                                                               const std::string& name,
                                                               const std::string& help) {
  return &prometheus::BuildHistogram().Name(name).Help(help).Register(registry);
}

}  // namespace outbox
