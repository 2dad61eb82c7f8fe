#include "relay/router.h"

#include <nlohmann/json.hpp>

#include "common/time_format.h"

namespace outbox {

Router::Router(const ServiceConfig& service) : service_(service.name), overrides_(service.topics) {
  std::string err;
  // The loader validated the template already.
  (void)TopicTemplate::Parse(service.topic, &template_, &err);
}

std::string Router::TopicFor(const OutboxRow& row) const {
  if (row.topic && !row.topic->empty()) return *row.topic;
  if (auto it = overrides_.find(row.event_type); it != overrides_.end()) return it->second;
  return template_.Render(row.aggregate.type, row.event_type, service_);
}

std::optional<Message> Router::Route(const OutboxRow& row, std::string* error) const {
  Message m;
  m.topic = TopicFor(row);
  std::string why;
  if (!IsValidTopicName(m.topic, &why)) {
    *error = "invalid topic for row " + std::to_string(row.id) + ": " + why;
    return std::nullopt;
  }
  m.key = std::to_string(row.aggregate.id);
  m.value = row.payload;
  m.headers = {{"outbox_id", std::to_string(row.id)},
               {"event_key", row.event_key},
               {"event_type", row.event_type},
               {"aggregate_type", row.aggregate.type},
               {"created_at", FormatRfc3339Utc(row.created_at_unix)}};
  // Consumers check order with it without parsing event_key (SPEC §9's
  // version check); among the standard headers, so no row can override it.
  if (row.aggregate_version)
    m.headers.emplace_back("aggregate_version", std::to_string(*row.aggregate_version));
  if (!AddRowHeaders(row, &m, error)) return std::nullopt;
  return m;
}

bool Router::AddRowHeaders(const OutboxRow& row, Message* m, std::string* error) {
  if (!row.headers || row.headers->empty()) return true;
  nlohmann::json h = nlohmann::json::parse(*row.headers, nullptr, /*allow_exceptions=*/false);
  if (h.is_null() && *row.headers == "null") return true;
  if (!h.is_object()) {
    *error = "headers column of row " + std::to_string(row.id) + " is not a JSON object of strings";
    return false;
  }
  const size_t standard = m->headers.size();
  for (auto it = h.begin(); it != h.end(); ++it) {
    // A second event_key (or outbox_id ...) would let a row override what
    // consumers deduplicate on: Java's lastHeader() returns the row's one.
    for (size_t i = 0; i < standard; ++i) {
      if (m->headers[i].first == it.key()) {
        *error = "headers column of row " + std::to_string(row.id) + ": \"" + it.key() +
                 "\" is a header the relay sets itself";
        return false;
      }
    }
    if (!it.value().is_string()) {
      *error = "headers column of row " + std::to_string(row.id) + ": value of \"" + it.key() +
               "\" is not a string";
      return false;
    }
    m->headers.emplace_back(it.key(), it.value().get<std::string>());
  }
  return true;
}

}  // namespace outbox
