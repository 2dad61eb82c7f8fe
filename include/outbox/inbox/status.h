#pragma once

#include <string>
#include <utility>

namespace outbox::inbox {

// What a handler's Apply says about one event (docs/CONSUMERS.md, "Library"). Anything but kOk
// rolls the inbox transaction back, the handler's own statements and the inbox row with it:
//   kOk         commit: the effect and the inbox row together
//   kRetriable  the event is fine, something it needs is not (a database, a
//               remote service): its partition waits and retries, for as
//               long as it takes; never a dead letter
//   kPermanent  this event can never succeed: dead-lettered at once
//   kPoison     this event failed and may not succeed: retried, then
//               dead-lettered after max_attempts
// A Connector/C++ exception the handler lets through is classified as the
// inbox's own statements are: a value the database refuses is kPoison,
// anything else (lost connection, deadlock, lock wait timeout) kRetriable.
class [[nodiscard]] Status {
 public:
  enum class Code { kOk, kRetriable, kPermanent, kPoison };

  static Status Ok() { return Status(Code::kOk, ""); }
  static Status Retriable(std::string why) { return Status(Code::kRetriable, std::move(why)); }
  static Status Permanent(std::string why) { return Status(Code::kPermanent, std::move(why)); }
  static Status Poison(std::string why) { return Status(Code::kPoison, std::move(why)); }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  // Why, for the log line and the dead letter's dlq_reason header.
  const std::string& message() const { return message_; }

 private:
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}
  Code code_;
  std::string message_;
};

}  // namespace outbox::inbox
