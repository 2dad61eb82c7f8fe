#pragma once

#include <spdlog/spdlog.h>

#include <string>

namespace outbox {

// Configures the default spdlog logger: level (debug|info|warn|error) and
// format (json|text). Safe to call again; the last call wins.
void ConfigureLogging(const std::string& level, const std::string& format,
                      const std::string& instance_id);

// Escapes a string for inclusion in a JSON log line.
std::string JsonEscape(const std::string& s);

}  // namespace outbox
