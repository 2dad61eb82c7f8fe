#include "relay/router.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/text.h"
#include "common/time_format.h"

namespace outbox {

namespace {

// The headers the CloudEvents envelope sets, or may set: ce_datacontenttype
// is what content-type carries in binary mode, the two trace names come with
// trace context.
constexpr std::string_view kCloudEventsNames[] = {
    "ce_specversion", "ce_id",        "ce_source",          "ce_type",        "ce_subject",
    "ce_time",        "content-type", "ce_datacontenttype", "ce_traceparent", "ce_tracestate"};

// traceparent and tracestate, with `prefix` ("" or "ce_") before their names.
void AddTraceHeaders(const OutboxRow& row, const char* prefix, Message* m) {
  m->headers.emplace_back(std::string(prefix) + "traceparent", *row.traceparent);
  if (row.tracestate && !row.tracestate->empty())
    m->headers.emplace_back(std::string(prefix) + "tracestate", *row.tracestate);
}

}  // namespace

bool HasTraceparent(const OutboxRow& row) { return row.traceparent && !row.traceparent->empty(); }

TraceparentCheck RowTraceparent(const OutboxRow& row) {
  return HasTraceparent(row) ? CheckTraceparent(*row.traceparent) : TraceparentCheck{};
}

Router::Router(const ServiceConfig& service)
    : service_(service.name), overrides_(service.topics), envelope_(service.envelope) {
  std::string err;
  // The loader validated the templates already.
  (void)TopicTemplate::Parse(service.topic, &template_, &err);
  (void)TopicTemplate::Parse(service.cloudevents.source, &ce_source_, &err,
                             TopicTemplate::Syntax::kUriReference);
  (void)TopicTemplate::Parse(service.cloudevents.type, &ce_type_, &err,
                             TopicTemplate::Syntax::kText);
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
  m.schema_id = row.schema_id;
  m.headers = {{"outbox_id", std::to_string(row.id)},
               {"event_key", row.event_key},
               {"event_type", row.event_type},
               {"aggregate_type", row.aggregate.type},
               {"created_at", FormatRfc3339Utc(row.created_at_unix)}};
  // Consumers check order with it without parsing event_key (the inbox's
  // version check, docs/CONSUMERS.md "Order: the per-aggregate version check"); among the standard
  // headers, so no row can override it.
  if (row.aggregate_version)
    m.headers.emplace_back("aggregate_version", std::to_string(*row.aggregate_version));
  // Propagated as written, only when valid: OpenTelemetry's propagators
  // would start a new trace from a malformed one anyway.
  const bool traced = RowTraceparent(row).valid;
  if (traced) AddTraceHeaders(row, "", &m);
  if (envelope_ == Envelope::kCloudEvents && !AddCloudEvents(row, traced, &m, error))
    return std::nullopt;
  if (!AddRowHeaders(row, &m, error)) return std::nullopt;
  return m;
}

bool Router::AddCloudEvents(const OutboxRow& row, bool traced, Message* m,
                            std::string* error) const {
  std::string source = ce_source_.Render(row.aggregate.type, row.event_type, service_);
  std::string type = ce_type_.Render(row.aggregate.type, row.event_type, service_);
  // The binding requires id, source and type to be non-empty.
  const char* empty = row.event_key.empty() ? "ce_id (the row's event_key)"
                      : source.empty()      ? "ce_source (from cloudevents.source)"
                      : type.empty()        ? "ce_type (from cloudevents.type)"
                                            : nullptr;
  if (empty != nullptr) {
    *error = "CloudEvents attribute ";
    error->append(empty).append(" of row ").append(std::to_string(row.id)).append(" is empty");
    return false;
  }
  m->headers.emplace_back("ce_specversion", "1.0");
  m->headers.emplace_back("ce_id", row.event_key);
  m->headers.emplace_back("ce_source", std::move(source));
  m->headers.emplace_back("ce_type", std::move(type));
  m->headers.emplace_back("ce_subject", std::to_string(row.aggregate.id));
  m->headers.emplace_back("ce_time", FormatRfc3339Utc(row.created_at_unix));
  m->headers.emplace_back("content-type", "application/json");
  // The distributed-tracing extension, for CloudEvents SDKs and routers.
  if (traced) AddTraceHeaders(row, "ce_", m);
  return true;
}

bool Router::IsRelayHeader(std::string_view name, const OutboxRow& row, const Message& m,
                           size_t standard) const {
  // A second event_key (or outbox_id ...) would let a row override what
  // consumers deduplicate on: Java's lastHeader() returns the row's one.
  for (size_t i = 0; i < standard; ++i)
    if (m.headers[i].first == name) return true;
  // The trace and CloudEvents names come from HTTP, where case does not
  // count, and SDKs look them up in lower case: "Traceparent" is taken too.
  // A row without a traceparent keeps the trace names for its headers column.
  const std::string lower = AsciiLower(std::string(name));
  if (HasTraceparent(row) && (lower == "traceparent" || lower == "tracestate")) return true;
  if (envelope_ != Envelope::kCloudEvents) return false;
  return std::find(std::begin(kCloudEventsNames), std::end(kCloudEventsNames), lower) !=
         std::end(kCloudEventsNames);
}

bool Router::AddRowHeaders(const OutboxRow& row, Message* m, std::string* error) const {
  if (!row.headers || row.headers->empty()) return true;
  nlohmann::json h = nlohmann::json::parse(*row.headers, nullptr, /*allow_exceptions=*/false);
  if (h.is_null() && *row.headers == "null") return true;
  if (!h.is_object()) {
    *error = "headers column of row " + std::to_string(row.id) + " is not a JSON object of strings";
    return false;
  }
  const size_t standard = m->headers.size();
  for (auto it = h.begin(); it != h.end(); ++it) {
    if (IsRelayHeader(it.key(), row, *m, standard)) {
      *error = "headers column of row " + std::to_string(row.id) + ": \"" + it.key() +
               "\" is a header the relay sets itself";
      return false;
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
