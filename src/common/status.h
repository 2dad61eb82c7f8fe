#pragma once

#include <optional>
#include <string>
#include <utility>

namespace outbox {

// Expected failures on the data plane are values, not exceptions.
class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status Ok() { return Status(); }
  static Status Error(std::string message) { return Status(std::move(message)); }

  bool ok() const { return !message_.has_value(); }
  const std::string& message() const {
    static const std::string kOk = "ok";
    return message_ ? *message_ : kOk;
  }

 private:
  explicit Status(std::string message) : message_(std::move(message)) {}
  std::optional<std::string> message_;
};

}  // namespace outbox
