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
};

// Every reason a failure can have, in the order metrics export them.
inline constexpr std::array<FailureReason, 8> kFailureReasons = {
    FailureReason::kTimeout,      FailureReason::kBrokerDown,    FailureReason::kMessageTooLarge,
    FailureReason::kInvalidTopic, FailureReason::kBrokerError,   FailureReason::kProducerFatal,
    FailureReason::kRouting,      FailureReason::kQueueFull};

// The metric label: "timeout", "broker_down", ... ("" for kNone).
constexpr std::string_view ToLabel(FailureReason r) {
  switch (r) {
    case FailureReason::kNone: return "";
    case FailureReason::kTimeout: return "timeout";
    case FailureReason::kBrokerDown: return "broker_down";
    case FailureReason::kMessageTooLarge: return "message_too_large";
    case FailureReason::kInvalidTopic: return "invalid_topic";
    case FailureReason::kBrokerError: return "broker_error";
    case FailureReason::kProducerFatal: return "producer_fatal";
    case FailureReason::kRouting: return "routing";
    case FailureReason::kQueueFull: return "queue_full";
  }
  return "broker_error";
}

}  // namespace outbox
