#include "support/metrics_text.h"

#include <cmath>
#include <cstdlib>
#include <sstream>

namespace outbox::testing {

namespace {

// `line` as a sample; false for a comment or a line that is not one.
bool ParseSample(const std::string& line, MetricSample* out) {
  if (line.empty() || line[0] == '#') return false;
  const size_t space = line.rfind(' ');
  const size_t end = line.find_first_of("{ ");
  if (space == std::string::npos || end == 0 || end > space) return false;
  const std::string value = line.substr(space + 1);
  char* parsed_end = nullptr;
  out->value = std::strtod(value.c_str(), &parsed_end);
  if (value.empty() || *parsed_end != '\0') return false;
  out->name = line.substr(0, end);
  out->labels.clear();
  if (line[end] == '{') {
    const size_t close = line.rfind('}', space);
    if (close == std::string::npos || close < end) return false;
    out->labels = line.substr(end + 1, close - end - 1);
  }
  return true;
}

std::string SampleText(const MetricSample& s) {
  return s.labels.empty() ? s.name : s.name + "{" + s.labels + "}";
}

}  // namespace

std::vector<MetricSample> ParseMetricSamples(const std::string& exposition) {
  std::vector<MetricSample> out;
  std::istringstream in(exposition);
  MetricSample s;
  for (std::string line; std::getline(in, line);)
    if (ParseSample(line, &s)) out.push_back(s);
  return out;
}

double MetricValue(const std::string& exposition, const std::string& sample) {
  for (const MetricSample& s : ParseMetricSamples(exposition))
    if (SampleText(s) == sample) return s.value;
  return std::nan("");
}

double MetricSum(const std::string& exposition, const std::string& name,
                 const std::string& label_filter) {
  double sum = 0;
  for (const MetricSample& s : ParseMetricSamples(exposition))
    if (s.name == name && s.labels.find(label_filter) != std::string::npos) sum += s.value;
  return sum;
}

}  // namespace outbox::testing
