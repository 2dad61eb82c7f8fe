#pragma once

#include <array>
#include <string_view>

namespace outbox {

// Why a publish attempt failed: the `reason` label of
// outbox_publish_failures_total and the `reason` field of log lines, one
// vocabulary (docs/METRICS.md lists what each means).
enum class FailureReason {
  kNone,             // no failure
  kTimeout,          // no acknowledgement within message.timeout.ms, broker up
  kBrokerDown,       // no broker reachable
  kMessageTooLarge,  // larger than the broker or topic accepts (permanent)
  kInvalidTopic,     // the topic name is invalid or refused (permanent)
  kBrokerError,      // any other broker error
  kProducerFatal,    // the idempotent producer failed fatally and was replaced
  kRouting,          // no topic: the template or the row's topic resolves to nothing (permanent)
  kQueueFull,        // the producer's local queue is full (no attempt counted)
  kPurged,           // taken back from the producer's queue unsent: its claim's budget ended,
                     // or no broker was reachable (no attempt counted)
  kSchema,           // the value cannot be encoded as its value_format asks: an unknown
                     // subject, a payload that does not fit its schema (permanent)
  kSchemaRegistry,   // not sent: the schema registry did not answer within the claim's
                     // budget (no attempt counted)
};

// Every reason a failure can have with its metric label, in the order
// metrics export them: the one list of the vocabulary.
struct FailureReasonLabel {
  FailureReason reason;
  std::string_view label;
};
inline constexpr std::array<FailureReasonLabel, 11> kFailureReasonLabels = {
    {{FailureReason::kTimeout, "timeout"},
     {FailureReason::kBrokerDown, "broker_down"},
     {FailureReason::kMessageTooLarge, "message_too_large"},
     {FailureReason::kInvalidTopic, "invalid_topic"},
     {FailureReason::kBrokerError, "broker_error"},
     {FailureReason::kProducerFatal, "producer_fatal"},
     {FailureReason::kRouting, "routing"},
     {FailureReason::kQueueFull, "queue_full"},
     {FailureReason::kPurged, "purged"},
     {FailureReason::kSchema, "schema"},
     {FailureReason::kSchemaRegistry, "schema_registry"}}};

// The table lists every reason after kNone once, in the enum's order, up
// to kSchemaRegistry: a reason inserted into the enum and not here fails to
// compile (the check the switch it replaced had); one appended after
// kSchemaRegistry must move the last reason named below.
constexpr bool ListsEveryReason() {
  for (size_t i = 0; i < kFailureReasonLabels.size(); ++i)
    if (static_cast<size_t>(kFailureReasonLabels[i].reason) != i + 1) return false;
  return kFailureReasonLabels.back().reason == FailureReason::kSchemaRegistry;
}
static_assert(ListsEveryReason(), "kFailureReasonLabels must list every FailureReason in order");

// The metric label: "timeout", "broker_down", ... ("" for kNone).
constexpr std::string_view ToLabel(FailureReason r) {
  if (r == FailureReason::kNone) return "";
  for (const FailureReasonLabel& l : kFailureReasonLabels)
    if (l.reason == r) return l.label;
  return "broker_error";
}

}  // namespace outbox
