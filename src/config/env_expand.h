#pragma once

#include <functional>
#include <optional>
#include <string>

namespace outbox {

using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;

// The process environment.
EnvLookup ProcessEnv();

// Replaces ${VAR} and ${VAR:-default} in `in`; "$$" is a literal "$".
// Returns the expanded text, or sets *error (and returns "") when a variable
// without default is unset or the syntax is broken.
std::string ExpandEnv(const std::string& in, const EnvLookup& env, std::string* error);

}  // namespace outbox
