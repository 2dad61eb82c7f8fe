#pragma once

#include <map>
#include <string>
#include <vector>

#include "config/config_loader.h"  // ConfigError, LoadOptions (env lookup, file reads)
#include "outbox/inbox/config.h"

namespace outbox::inbox {

// Parsing the consumer's YAML into the structs of outbox/inbox/config.h.

struct LoadedConsumerConfig {
  ConsumerConfig config;
  std::vector<std::string> warnings;  // e.g. a password file readable by others
  // The example binary's `log` section (ConfigureLogging's arguments); the
  // public loaders refuse the section, so `log_at` keeps where it was
  // ("file:line:col"; empty when the file has none).
  std::string log_level = "info";   // debug | info | warn | error
  std::string log_format = "json";  // json | text
  std::string log_at;
};

// Parses and validates. Throws outbox::ConfigError with
// "file:line:col: key.path: what is wrong".
LoadedConsumerConfig LoadConsumerConfigFile(const std::string& path,
                                            const outbox::LoadOptions& options = {});
LoadedConsumerConfig LoadConsumerConfigText(const std::string& text, const std::string& name,
                                            const outbox::LoadOptions& options = {});

// kafka.group_id, or the consumer name when it is empty.
inline const std::string& GroupId(const ConsumerConfig& c) {
  return c.kafka.group_id.empty() ? c.consumer : c.kafka.group_id;
}

// The dead-letter topic of a message read from `topic`.
std::string DeadLetterTopic(const std::string& tmpl, const std::string& topic);
// True if `topic` is DeadLetterTopic(tmpl, t) for some topic t.
bool IsDeadLetterTopic(const std::string& tmpl, const std::string& topic);

}  // namespace outbox::inbox
