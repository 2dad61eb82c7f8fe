#include "inbox/consumer_rules.h"

#include <fmt/format.h>
#include <librdkafka/rdkafka.h>
#include <regex.h>

#include <algorithm>
#include <map>

#include "config/registry_url.h"
#include "config/topic_template.h"  // IsValidTopicName
#include "inbox/consumer_config.h"  // DeadLetterTopic

namespace outbox::inbox::rules {
namespace {

// Keys the consumer sets itself: the algorithm depends on them (offsets are
// stored only after the database commit), or they have a key of their own.
const std::map<std::string, std::string> kOwnedProperties = {
    {"bootstrap.servers", "set kafka.bootstrap_servers instead"},
    {"group.id", "set kafka.group_id instead"},
    {"auto.offset.reset", "set kafka.auto_offset_reset instead"},
    {"enable.auto.offset.store",
     "the consumer stores each offset itself, after the database commit; leave it out"},
    {"enable.auto.commit",
     "the consumer commits stored offsets in the background and on revoke and shutdown; leave "
     "it out (auto.commit.interval.ms sets how often)"},
    {"transactional.id", "the dead-letter producer does not use Kafka transactions; remove it"},
};

bool IsAsciiDigit(char c) { return c >= '0' && c <= '9'; }

constexpr const char* kEmpty = "must not be empty";

}  // namespace

std::string Range(long v, int min, int max) {
  if (v >= min && v <= max) return "";
  return "must be an integer between " + std::to_string(min) + " and " + std::to_string(max) +
         " (got " + std::to_string(v) + ")";
}

std::string OneOf(const std::string& v, const std::vector<std::string>& values) {
  if (std::find(values.begin(), values.end(), v) != values.end()) return "";
  std::string list;
  for (const auto& x : values) list += (list.empty() ? "" : " | ") + x;
  return "must be one of " + list + " (got \"" + v + "\")";
}

std::string Topic(const std::string& name) {
  if (!name.empty() && name[0] == '^') return "a pattern goes in kafka.topic_regex, not in topics";
  std::string why;
  return outbox::IsValidTopicName(name, &why) ? "" : why;
}

std::string TopicRegex(const std::string& re) {
  if (re.empty()) return kEmpty;
  if (re[0] != '^')
    return "must start with ^ (librdkafka subscribes to a pattern only then), e.g. "
           "'^outbox\\.event\\.[A-Za-z0-9_]+$'";
  regex_t compiled;
  if (int rc = regcomp(&compiled, re.c_str(), REG_EXTENDED | REG_NOSUB); rc != 0) {
    char buf[256];
    regerror(rc, &compiled, buf, sizeof(buf));
    return std::string("is not a valid regular expression: ") + buf;
  }
  regfree(&compiled);
  return "";
}

std::string DeadLetter(const ConsumerKafkaConfig& k) {
  if (k.dead_letter_topic.empty()) return kEmpty;
  std::string why;
  // "x" stands for any topic: the fixed text must be valid in a topic name.
  if (!outbox::IsValidTopicName(DeadLetterTopic(k.dead_letter_topic, "x"), &why))
    return why + " ({topic} is the only placeholder, the message's topic)";
  // A dead letter must never come back to this consumer: it would fail
  // again and be dead-lettered again, forever. (With topic_regex, the
  // consumer skips such topics' messages at run time: InboxConsumer::Handle.)
  for (const auto& t : k.topics) {
    const std::string dlq = DeadLetterTopic(k.dead_letter_topic, t);
    if (std::find(k.topics.begin(), k.topics.end(), dlq) != k.topics.end())
      return fmt::format(
          "renders \"{}\" for topic \"{}\", which kafka.topics subscribes to: "
          "dead letters would be consumed again",
          dlq, t);
  }
  return "";
}

std::string Property(const std::string& key, const std::string& value) {
  if (auto it = kOwnedProperties.find(key); it != kOwnedProperties.end()) return it->second;
  rd_kafka_conf_t* probe = rd_kafka_conf_new();
  char err[512];
  const bool ok =
      rd_kafka_conf_set(probe, key.c_str(), value.c_str(), err, sizeof(err)) == RD_KAFKA_CONF_OK;
  rd_kafka_conf_destroy(probe);
  return ok ? "" : err;
}

std::string Listen(const std::string& l) {
  const size_t colon = l.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == l.size() ||
      !std::all_of(l.begin() + static_cast<std::ptrdiff_t>(colon) + 1, l.end(), IsAsciiDigit) ||
      l.size() - colon > 6 || std::stol(l.substr(colon + 1)) > 65535)
    return "must be HOST:PORT, e.g. 127.0.0.1:9465 (got \"" + l + "\")";
  return "";
}

std::optional<Problem> Tls(const DbConfig& d) {
  if (auto w =
          OneOf(d.tls_mode, {"disabled", "preferred", "required", "verify_ca", "verify_identity"});
      !w.empty())
    return Problem{"mysql.tls.mode", w};
  if (d.tls_mode.rfind("verify_", 0) == 0 && d.tls_ca.empty())
    return Problem{"mysql.tls.ca", "is required when mode is " + d.tls_mode};
  if (d.tls_cert.empty() != d.tls_key.empty())
    return Problem{"mysql.tls", "cert and key must be given together"};
  return std::nullopt;
}

namespace {

using Found = std::optional<Problem>;

Found Check(const std::string& path, const std::string& what) {
  if (what.empty()) return std::nullopt;
  return Problem{path, what};
}

Found Topics(const ConsumerKafkaConfig& k) {
  if (k.topics.empty() == k.topic_regex.empty())
    return Problem{"kafka", "set exactly one of topics (a list) and topic_regex"};
  for (size_t i = 0; i < k.topics.size(); ++i)
    if (Found f = Check("kafka.topics[" + std::to_string(i) + "]", Topic(k.topics[i]))) return f;
  if (!k.topic_regex.empty()) return Check("kafka.topic_regex", TopicRegex(k.topic_regex));
  return std::nullopt;
}

Found Kafka(const ConsumerKafkaConfig& k) {
  if (k.bootstrap_servers.empty()) return Problem{"kafka.bootstrap_servers", kEmpty};
  if (Found f = Topics(k)) return f;
  if (Found f =
          Check("kafka.auto_offset_reset", OneOf(k.auto_offset_reset, {"earliest", "latest"})))
    return f;
  if (Found f = Check("kafka.dead_letter_topic", DeadLetter(k))) return f;
  for (const auto& [key, value] : k.properties)
    if (Found f = Check("kafka.properties." + key, Property(key, value))) return f;
  return std::nullopt;
}

Found Mysql(const DbConfig& d) {
  if (d.host.empty()) return Problem{"mysql.host", kEmpty};
  if (Found f = Check("mysql.port", Range(d.port, 1, 65535))) return f;
  if (d.user.empty()) return Problem{"mysql.user", kEmpty};
  if (d.database.empty()) return Problem{"mysql.database", kEmpty};
  if (Found f = Tls(d)) return f;
  if (Found f = Check("mysql.connect_timeout_ms", Range(d.connect_timeout_ms, 100, 600000)))
    return f;
  if (Found f = Check("mysql.read_timeout_ms", Range(d.read_timeout_ms, 1000, 3600000))) return f;
  return Check("mysql.statement_cache", Range(d.statement_cache, 1, 16382));
}

Found Policies(const ConsumerConfig& c) {
  if (Found f = Check("max_attempts", Range(c.max_attempts, 1, 1000))) return f;
  if (Found f = Check("max_gap_age_s", Range(c.max_gap_age_s, 1, 30 * 86400))) return f;
  if (Found f = Check("inbox_retention_days", Range(c.inbox_retention_days, 0, 3650))) return f;
  return Check("concurrency", Range(c.concurrency, 1, 64));
}

}  // namespace

std::optional<Problem> Registry(const RegistryConfig& r) {
  if (r.url.empty()) return std::nullopt;
  outbox::RegistryUrl url;
  if (outbox::Status s = outbox::ParseRegistryUrl(r.url, &url); !s.ok())
    return Problem{"schema_registry.url", s.message()};
  if (!r.password.empty() && r.username.empty())
    return Problem{"schema_registry.username", "is required with a password (HTTP basic auth)"};
  if (Found f = Check("schema_registry.timeout_ms", Range(r.timeout_ms, 100, 120000))) return f;
  return Check("schema_registry.latest_refresh_ms", Range(r.latest_refresh_ms, 1000, 86400000));
}

std::optional<Problem> FirstProblem(const ConsumerConfig& c) {
  if (c.consumer.empty()) return Problem{"consumer", kEmpty};
  if (c.consumer.size() > 64)  // t_inbox.consumer is varchar(64)
    return Problem{"consumer", "must be at most 64 characters"};
  if (Found f = Kafka(c.kafka)) return f;
  if (Found f = Policies(c)) return f;
  if (Found f = Mysql(c.mysql)) return f;
  if (!c.http_listen.empty())
    if (Found f = Check("http.listen", Listen(c.http_listen))) return f;
  if (c.decode == ValueDecode::kJson && c.schema_registry.url.empty())
    return Problem{"schema_registry",
                   "is required with values.decode: json (the schemas to decode with)"};
  return Registry(c.schema_registry);
}

}  // namespace outbox::inbox::rules
