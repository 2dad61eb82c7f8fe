#pragma once

#include <optional>
#include <string>
#include <utility>

namespace outbox {

// What kind of failure a Status is, for callers that react differently:
// readiness tells an outage (retry, it heals) from a grant or schema problem
// (an operator must act). Values are stable; add new ones at the end.
enum class StatusCode {
  kOk = 0,
  kError,        // unclassified
  kUnavailable,  // the peer is down, unreachable, restarting or timed out: retrying heals it
  kPermission,   // the account lacks a privilege or cannot log in: a GRANT or a secret fixes it
  kSchema,       // the table, a column or the database is missing or differs
  kInvalid,      // the request or data cannot work as given (e.g. a value out of range)
};

const char* ToString(StatusCode code);

// Expected failures on the data plane are values, not exceptions.
class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status Ok() { return Status(); }
  static Status Error(std::string message) {
    return Status(StatusCode::kError, std::move(message));
  }
  static Status Error(StatusCode code, std::string message) {
    return Status(code == StatusCode::kOk ? StatusCode::kError : code, std::move(message));
  }
  static Status Unavailable(std::string m) { return Error(StatusCode::kUnavailable, std::move(m)); }
  static Status Schema(std::string m) { return Error(StatusCode::kSchema, std::move(m)); }
  static Status Invalid(std::string m) { return Error(StatusCode::kInvalid, std::move(m)); }

  bool ok() const { return !message_.has_value(); }
  StatusCode code() const { return code_; }
  const std::string& message() const {
    static const std::string kOk = "ok";
    return message_ ? *message_ : kOk;
  }

 private:
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  StatusCode code_ = StatusCode::kOk;
  std::optional<std::string> message_;
};

inline const char* ToString(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "ok";
    case StatusCode::kUnavailable:
      return "unavailable";
    case StatusCode::kPermission:
      return "permission";
    case StatusCode::kSchema:
      return "schema";
    case StatusCode::kInvalid:
      return "invalid";
    case StatusCode::kError:
      break;
  }
  return "error";
}

}  // namespace outbox
