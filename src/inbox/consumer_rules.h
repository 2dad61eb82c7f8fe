#pragma once

// The rules a consumer config obeys, one place for both ways in: the YAML
// loader (consumer_config.cc) reports a broken rule at the key's
// file:line:col, outbox::inbox::Validate (outbox/inbox/config.h) at the
// key's path, with the same words. Each check returns what is wrong, or ""
// when nothing is.

#include <optional>
#include <string>
#include <vector>

#include "outbox/inbox/config.h"

namespace outbox::inbox::rules {

// "must be an integer between MIN and MAX (got V)".
std::string Range(long v, int min, int max);
std::string OneOf(const std::string& v, const std::vector<std::string>& values);
std::string Topic(const std::string& name);
std::string TopicRegex(const std::string& re);
// kafka.dead_letter_topic: a valid name for any topic, never one of kafka.topics.
std::string DeadLetter(const ConsumerKafkaConfig& k);
// One kafka.properties entry.
std::string Property(const std::string& key, const std::string& value);
std::string Listen(const std::string& listen);

// A broken rule: the key's path ("kafka.topics[0]") and what is wrong.
struct Problem {
  std::string path;
  std::string what;
};
// mysql.tls: the CA a verify mode needs, cert and key together.
std::optional<Problem> Tls(const DbConfig& d);
// schema_registry: an http(s) URL the registry client can use, the
// timeouts in range, a username with a password.
std::optional<Problem> Registry(const RegistryConfig& r);
// Every rule over a whole config, in the order the loader reads the keys:
// the first broken one. An empty kafka.group_id stands for the consumer
// name (the loader fills it in).
std::optional<Problem> FirstProblem(const ConsumerConfig& c);

}  // namespace outbox::inbox::rules
