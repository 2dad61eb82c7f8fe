#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace outbox {

// Plain configuration structs. Each default's reason is written beside it.
// Parsed and validated once by LoadConfig (config_loader.h); never mutated after.

enum class Ordering { kPerAggregate, kNone };
enum class DeadPolicy { kBlock, kSkip };
// How a service's claim loop learns of new rows (docs/CONFIG.md "wakeup").
enum class WakeupMode { kPoll, kBinlog };
// mysql.tls.mode, as the MySQL client's --ssl-mode names them.
enum class TlsMode { kDisabled, kPreferred, kRequired, kVerifyCa, kVerifyIdentity };
// What a message carries besides the relay's own headers (docs/CONFIG.md
// "envelope"): nothing more, or the CloudEvents Kafka binding's binary mode.
enum class Envelope { kPlain, kCloudEvents };

// The config file's spelling of each value ("per_aggregate", "verify_ca", ...).
const char* ToString(Ordering o);
const char* ToString(DeadPolicy p);
const char* ToString(WakeupMode w);
const char* ToString(TlsMode m);
const char* ToString(Envelope e);
// mysql.tls.mode's spellings in TlsMode's order: the one list the parser
// reads and ToString writes.
const std::vector<std::string>& TlsModeNames();
// True for verify_ca and verify_identity: the server certificate is checked.
bool VerifiesServer(TlsMode m);

struct TlsConfig {
  // kPreferred matches the MySQL client's own default: encrypt when the server
  // offers it, without verifying. Production configs should say verify_identity.
  TlsMode mode = TlsMode::kPreferred;
  std::string ca;
  std::string cert;
  std::string key;
  bool operator==(const TlsConfig&) const = default;
};

struct MysqlConfig {
  std::string host = "127.0.0.1";
  int port = 3306;
  std::string user;
  std::string password;         // resolved from password_env / password_file; never logged
  std::string password_source;  // "env:NAME", "file:/path" or "none", for logs
  std::string database;
  std::string table = "t_outbox";
  std::optional<std::string> time_zone;  // zone of the DATETIME columns; default: server's
  TlsConfig tls;
  // A connect that takes longer than this is a dead database, not a slow one.
  int connect_timeout_ms = 5000;
  // Bounds every statement's network wait, so a database that stops answering
  // is noticed (and reconnected) instead of hanging the service's loop.
  int read_timeout_ms = 30000;
  // The replica server_id of the binlog stream for `wakeup: binlog` (one
  // stream per host:port; services on one server must agree). Unset: derived
  // from instance_id, host and port by the binlog component.
  std::optional<uint32_t> binlog_server_id;
  bool operator==(const MysqlConfig&) const = default;
};

// The database server a connection goes to, "host:port" with the host in
// lower case (host names are case-insensitive; "localhost" and "127.0.0.1"
// still count as two): services with one key share one binlog stream and
// must agree on its binlog_server_id.
std::string ServerKey(const MysqlConfig& mysql);

// A Schema Registry (Confluent's REST API) the relay reads schemas from
// (docs/FORMATS.md), per Kafka cluster.
struct SchemaRegistryConfig {
  std::string url;                       // http:// or https://, with an optional path prefix
  std::string username;                  // basic auth; empty: none
  std::string password;                  // resolved from password_env / password_file; never logged
  std::string password_source = "none";  // "env:NAME", "file:/path" or "none", for logs
  std::string ca;  // https: CA certificates (PEM) of the registry's; empty: the system's
  // A registry slower than this counts as down (the rows wait, as for a
  // broker outage): a request ties up the service's schema thread no longer.
  int timeout_ms = 5000;
  // A subject's latest version is read again this often: a newly
  // registered version is used within a minute, for one request a minute.
  int latest_refresh_ms = 60000;
  bool operator==(const SchemaRegistryConfig&) const = default;
};

struct KafkaConfig {
  std::string bootstrap_servers;
  std::map<std::string, std::string> properties;                       // passed to librdkafka as-is
  std::optional<SchemaRegistryConfig> schema_registry = std::nullopt;  // unset: only bytes values
  bool operator==(const KafkaConfig&) const = default;
};

struct RetryConfig {
  int max_attempts = 10;              // ~ 1+2+4+...+256 s ≈ 8.5 min of retrying before DEAD
  int64_t initial_backoff_ms = 1000;  // long enough for a broker leader election
  int64_t max_backoff_ms = 300000;    // a row is retried at least every 5 minutes
  bool operator==(const RetryConfig&) const = default;
};

struct RetentionConfig {
  std::optional<int> sent_days;  // unset: retention off (the relay never deletes)
  int batch_rows = 1000;         // rows per DELETE: short locks, small undo
  int pause_ms = 200;            // pause between DELETEs: retention yields to the relay
  int interval_s = 300;          // how often a retention pass starts
  bool operator==(const RetentionConfig&) const = default;
};

// What a message's value is (docs/FORMATS.md): the payload's bytes, or the
// payload after Confluent's wire header of its schema, as JSON or Avro.
enum class ValueFormat { kBytes, kJsonSchema, kAvro };
// What the payload column holds with value_format avro: JSON to convert, or
// Avro binary already.
enum class PayloadEncoding { kJson, kAvro };
// How a value's subject is named: Confluent's strategies, or a template.
enum class SubjectStrategy { kTopicName, kRecordName, kTopicRecordName, kTemplate };

const char* ToString(ValueFormat f);

// A service's value format, or one event_type's (services[].values).
struct ValueConfig {
  // bytes keeps the message format of a relay without a registry.
  ValueFormat format = ValueFormat::kBytes;
  PayloadEncoding payload_encoding = PayloadEncoding::kJson;
  // topic_name is Confluent's serializers' default: {topic}-value.
  SubjectStrategy strategy = SubjectStrategy::kTopicName;
  // record_name strategies: the record's full name, a template over the row
  // ({aggregate_type}, {event_type}, {service}).
  std::string record;
  // template strategy: the subject, a template that may also use {topic}.
  std::string subject = "{topic}-value";
  std::string version = "latest";  // or a version number
  bool operator==(const ValueConfig&) const = default;
};

// The CloudEvents attributes that come from templates (envelope: cloudevents).
// Placeholders {service}, {aggregate_type}, {event_type}, as in `topic`.
struct CloudEventsConfig {
  // A URI reference naming where events happen: the service and the kind of
  // aggregate, the same for every event of one aggregate type.
  std::string source = "/outbox/{service}/{aggregate_type}";
  // What happened: the event_type consumers already dispatch on.
  std::string type = "{event_type}";
  bool operator==(const CloudEventsConfig&) const = default;
};

struct ServiceConfig {
  std::string name;
  MysqlConfig mysql;
  std::string topic = "outbox.event.{aggregate_type}";
  std::map<std::string, std::string> topics;  // event_type -> topic
  int batch_size = 500;  // large enough to amortise round trips, small enough for short locks
  // The longest wait between polls of an empty table: 10 cheap statements/s
  // when idle. The wait is halved after a round that claimed events (down
  // to 1 ms) and doubled after one that found none (up to this).
  int poll_interval_ms = 100;
  // Polling is the correctness model and needs nothing but the table's
  // grants; binlog wake-up needs log_bin and replication grants, so it is
  // asked for explicitly.
  WakeupMode wakeup = WakeupMode::kPoll;
  int64_t lease_ms = 30000;  // must exceed the broker delivery timeout (see kafka_config.cc)
  Ordering ordering = Ordering::kPerAggregate;
  DeadPolicy dead_policy = DeadPolicy::kBlock;
  RetryConfig retry;
  RetentionConfig retention;
  KafkaConfig kafka;  // effective: top-level kafka merged with the service's override
  // The service's own kafka block alone (bootstrap_servers empty when it
  // names none): a reload that keeps the old top-level block merges it again
  // (config_diff.h).
  KafkaConfig kafka_override;
  // Batches published but not yet settled. Lets claiming, publishing and
  // settling overlap; bounds memory to max_inflight_batches * batch_size rows.
  int max_inflight_batches = 4;
  int gauge_interval_ms = 5000;  // table gauges refresh; 3 index-range queries each time
  // A service listed in the file relays. true stops its claims (maintenance,
  // a DEAD storm) while its gauges and liveness go on; applied by a reload.
  bool paused = false;
  // With a fleet: the shard (a partition of fleet.topic) the service belongs
  // to. Unset: murmur2(name) mod the partition count (src/fleet/shard.h), so
  // services spread over the shards without a list to keep.
  std::optional<int> shard;
  // Plain: the message without CloudEvents attributes; CloudEvents only
  // adds headers, so a consumer of plain messages reads both.
  Envelope envelope = Envelope::kPlain;
  CloudEventsConfig cloudevents;
  ValueConfig value = {};
  std::map<std::string, ValueConfig> values = {};  // event_type -> its own value format
  bool operator==(const ServiceConfig&) const = default;
};

// Relays sharing one file of services through a Kafka consumer group
// (docs/DEPLOY.md "A fleet"): each partition of `topic` is a shard, and a
// relay serves the services of the shards the group assigns to it.
struct FleetConfig {
  std::string group_id;
  std::string topic;
  // A relay silent this long loses its shards. 10 s rather than Kafka's 45 s:
  // a dead relay's databases wait at most about this long (plus a rebalance)
  // for their next owner, and a relay's heartbeat thread is not busy.
  int session_timeout_ms = 10000;
  // group.instance.id = instance_id: a restart within the session timeout
  // keeps its shards without a rebalance. Off by default: a stopping static
  // member does not leave the group, so its shards wait out the session
  // timeout instead of moving at once.
  bool static_membership = false;
  KafkaConfig kafka;  // the group's cluster: the top-level kafka block with this one on top
  bool operator==(const FleetConfig&) const = default;
};

struct Config {
  std::string path;  // the file it was loaded from
  std::string instance_id = "relay-1";
  std::string http_listen = "127.0.0.1:9464";  // loopback by default: metrics are not public
  std::string log_level = "info";
  std::string log_format = "json";
  KafkaConfig kafka;
  std::optional<FleetConfig> fleet;  // unset: this relay serves every service
  std::vector<ServiceConfig> services;
};

}  // namespace outbox
