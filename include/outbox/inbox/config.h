#pragma once

#include <map>
#include <string>
#include <vector>

#include "outbox/inbox/export.h"

namespace outbox::inbox {

// The consumer's configuration (docs/CONSUMERS.md, "The example consumer").
// Plain values: filled in by a service's own code, or parsed and validated
// once from YAML (LoadConfigFile, below); never mutated after. Each
// default's reason is written beside it.

struct DbConfig {
  std::string host = "127.0.0.1";
  int port = 3306;
  std::string user;
  std::string password;         // from password_env / password_file; never logged
  std::string password_source;  // "env:NAME", "file:/path" or "none", for logs
  std::string database;
  // "preferred" is the MySQL client's own default; production says verify_identity.
  std::string tls_mode =
      "preferred";  // disabled | preferred | required | verify_ca | verify_identity
  std::string tls_ca, tls_cert, tls_key;
  int connect_timeout_ms = 5000;  // a connect slower than this is a dead database
  int read_timeout_ms = 30000;    // bounds every statement, so a hung server is noticed
  // The handler's prepared statements (Transaction::Prepare) one connection
  // keeps, least recently used first out. 256 holds every statement of any
  // handler that binds its values, and with MySQL's default
  // max_prepared_stmt_count (16382, for all clients together) leaves room
  // for dozens of connections; a handler that puts values in its SQL text
  // gets a new statement per value and is bounded by it.
  int statement_cache = 256;
};

struct ConsumerKafkaConfig {
  std::string bootstrap_servers;
  std::string group_id;             // empty: the consumer name
  std::vector<std::string> topics;  // exactly one of topics and topic_regex is set
  std::string topic_regex;          // starts with '^' (librdkafka's mark of a pattern)
  // A new group reads what is already in the topic: an event published before
  // the consumer first started is still an event to apply.
  std::string auto_offset_reset = "earliest";  // earliest | latest
  std::string dead_letter_topic = "{topic}.dlq";
  std::map<std::string, std::string>
      properties;  // librdkafka, for the consumer and the DLQ producer
};

// What the consumer does with an event that is not the next one for its
// aggregate (docs/CONSUMERS.md "Order: the per-aggregate version check").
enum class VersionCheck {
  kNone,    // apply every new event; a late one is counted in out_of_order
  kNewer,   // apply only an event newer than the last applied; an older one is stale
  kStrict,  // apply only the next version; park later ones until the gap fills
};

// How the consumer reads a value that starts with Confluent's wire header
// (docs/CONSUMERS.md "Values with a schema"). A value without it is passed
// as it is either way.
enum class ValueDecode {
  kRaw,   // Event::schema_id and Event::body from the header; Event::json empty
  kJson,  // and the value decoded into Event::json (needs schema_registry)
};

// The Schema Registry the schema ids are looked up in: the keys of the
// relay's kafka.schema_registry (docs/CONFIG.md). Empty url: none; then
// decode raw passes ids unchecked.
struct RegistryConfig {
  std::string url;                       // http:// or https://, with an optional path prefix
  std::string username;                  // basic auth; empty: none
  std::string password;                  // from password_env / password_file; never logged
  std::string password_source = "none";  // "env:NAME", "file:/path" or "none", for logs
  std::string ca;  // https: CA certificates (PEM) of the registry's; empty: the system's
  // A registry slower than this counts as down: the partition waits and
  // the lookup is tried again, as the relay's rows wait.
  int timeout_ms = 5000;
  // Accepted so that a block copied from the relay's config loads; the
  // consumer reads schemas by id, and an id never changes in a registry.
  int latest_refresh_ms = 60000;
};

struct ConsumerConfig {
  std::string path;
  std::string consumer;  // t_inbox.consumer: which service processed the event
  ConsumerKafkaConfig kafka;
  // A message that cannot be processed (bad headers or key, a value the
  // database refuses) is tried this often before it goes to the DLQ. Small:
  // such failures are deterministic, and the partition waits meanwhile.
  int max_attempts = 5;
  // newer: never lets an old event undo a newer one, and needs nothing from
  // the producer (outbox_id stands in when aggregate_version is absent).
  VersionCheck version_check = VersionCheck::kNewer;
  // strict: a gap older than this is logged and alerted on. 5 minutes is
  // well past a relay's retry backoff, so an older gap is an event that is
  // not coming by itself.
  int max_gap_age_s = 300;
  // Processed inbox rows older than this are deleted (0: never). Two weeks
  // is longer than any replay a team runs from Kafka's default 7-day
  // retention, so a replayed event still finds its inbox row.
  int inbox_retention_days = 14;
  // Consumer-group members in this process, each on a thread of its own
  // with its own Kafka client and database connection; the group spreads
  // the partitions over them. One unless the handler's work, not the
  // broker, is what limits a partition's throughput; more members than
  // partitions wait idle. With more than one, the handler is called from
  // several threads at once.
  int concurrency = 1;
  // HOST:PORT for /metrics, /healthz, /readyz; empty: no HTTP server.
  std::string http_listen;
  DbConfig mysql;
  // values.decode: raw hands a handler the bytes after the header, which
  // costs nothing; json decodes them, which a handler asks for.
  ValueDecode decode = ValueDecode::kRaw;
  RegistryConfig schema_registry;
  // No log settings: the library logs through ConsumerOptions::log or
  // spdlog's default logger, which the service configures (consumer.h).
};

// The consumer's YAML (docs/CONSUMERS.md "The example consumer"), parsed and
// validated: ${VAR} and ${VAR:-default} expanded from the environment,
// the password read from password_env or password_file. Throws
// std::runtime_error whose what() says "file:line:col: key.path: what is
// wrong". *warnings (when not null) receives what is allowed but unwise
// (a password file readable by others), for the service to log. A `log`
// section is refused: it is the example binary's (outbox-inbox-consumer),
// and a service's logging is its own (ConsumerOptions::log).
OUTBOX_INBOX_EXPORT ConsumerConfig LoadConfigFile(const std::string& path,
                                                  std::vector<std::string>* warnings = nullptr);
// The same from text; `name` stands for the file in messages.
OUTBOX_INBOX_EXPORT ConsumerConfig LoadConfigText(const std::string& text, const std::string& name,
                                                  std::vector<std::string>* warnings = nullptr);

// A config filled in by a service's own code, checked by the rules the
// loader applies to YAML: "" when it is valid, else the first problem in
// the loader's words without its file:line:col, e.g.
//   kafka.bootstrap_servers: must not be empty
// An empty kafka.group_id stands for `consumer`, as a left-out group_id
// does in YAML. Consumer's constructor calls it and refuses a config with
// a problem (std::invalid_argument).
OUTBOX_INBOX_EXPORT std::string Validate(const ConsumerConfig& config);

}  // namespace outbox::inbox
