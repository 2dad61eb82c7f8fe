// Every bad configuration gets one exact, actionable line and exit code 2:
// each case is checked in-process (LoadConfigFile) and through the real
// binary (`outbox-relay check --config F`).

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <map>

#include "config/config_loader.h"
#include "support/process.h"

using namespace outbox;
using namespace outbox::testing;

namespace {

struct BadConfig {
  std::string yaml;     // "@DIR@" stands for the test's temporary directory
  std::string message;  // exact; "c.yaml" stands for the file, "@DIR@" as above
  std::map<std::string, std::string> env = {};
};

// A minimal valid service; cases append keys on line 5.
std::string Svc(const std::string& extra = "", const std::string& mysql_extra = "") {
  return "kafka: {bootstrap_servers: k:9092}\nservices:\n  - name: a\n    mysql: {user: u, "
         "database: d" +
         mysql_extra + "}\n" + extra;
}

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size()))
    s.replace(p, from.size(), to);
  return s;
}

// YAML syntax: the parser's own errors, with a hint where a common mistake causes them.
std::vector<BadConfig> YamlSyntaxCases() {
  return {
      {"services: [\n  - name: a\n    mysql: {", "c.yaml:2:3: yaml: illegal block entry"},
      {"kafka:\n\tbootstrap_servers: k\n",
       "c.yaml:2:19: yaml: illegal map value (the line is indented with a tab; YAML allows only "
       "spaces)"},
      {"kafka:\n  bootstrap_servers: k\n bad: 1\n", "c.yaml:3:2: yaml: end of map not found"},
      {Svc("", ", port: ${PORT}"),
       "c.yaml:4:42: yaml: end of map flow not found (inside {...} or [...], quote a value with "
       "${VAR}: \"${VAR}\")",
       {{"PORT", "3306"}}},
      {Svc("", ", table: `t_outbox`"),
       "c.yaml:4:42: yaml: unknown token (a value starting with ` must be quoted)"},
      {"http:\n  listen: [::1]:9464\n" + Svc(),
       "c.yaml:2:16: yaml: end of map not found (a value starting with [ is a list: quote an IPv6 "
       "address, \"[::1]:9464\")"},
      {"http: {listen: [::1]:9464}\n" + Svc(),
       "c.yaml:1:21: yaml: end of map flow not found (a value starting with [ is a list: quote an "
       "IPv6 address, \"[::1]:9464\")"},
      {"instance_id: *nope\n", "c.yaml:1:14: yaml: the referenced anchor is not defined"},
      // yaml-cpp itself reads an unclosed quote to the end of the file.
      {"instance_id: \"x\n" + Svc(),
       "c.yaml:1:14: yaml: illegal EOF in scalar (the \" opened here is never closed)"},
      {"instance_id: 'it''s\n" + Svc(),
       "c.yaml:1:14: yaml: illegal EOF in scalar (the ' opened here is never closed)"},
      {"instance_id: a\n---\ninstance_id: b\n",
       "c.yaml:2:1: yaml: more than one YAML document (a second \"---\"); the config is one "
       "document"},
      {"instance_id: a\n---\n",
       "c.yaml:1:1: services: is required (a list of at least one "
       "service)"},
      // A stray ',' made yaml-cpp's LoadAll loop forever allocating (found by fuzzing).
      {",instance_id: a\n",
       "c.yaml:1:1: yaml: unexpected ',' (a comma separates items only "
       "inside [...] or {...})"},
      {"- a\n,\n",
       "c.yaml:2:1: yaml: unexpected ',' (a comma separates items only inside [...] "
       "or {...})"},
      {"", "c.yaml:1:1: (top level): the file is empty"},
      {"# only a comment\n", "c.yaml:1:1: (top level): the file is empty"},
      {"- a\n- b\n", "c.yaml:1:1: (top level): must be a mapping (key: value pairs)"},
      {"hello\n", "c.yaml:1:1: (top level): must be a mapping (key: value pairs)"},
  };
}

// A value of the wrong type.
std::vector<BadConfig> WrongTypeCases() {
  return {
      {Svc("    batch_size: [1]\n"),
       "c.yaml:5:17: services[0].batch_size: must be an integer, not a list"},
      {Svc("    batch_size: ten\n"),
       "c.yaml:5:17: services[0].batch_size: must be an integer (got \"ten\")"},
      {Svc("    batch_size: 1.5\n"),
       "c.yaml:5:17: services[0].batch_size: must be an integer (got \"1.5\")"},
      {Svc("    lease_ms: 30s\n"),
       "c.yaml:5:15: services[0].lease_ms: must be an integer (got \"30s\")"},
      {Svc("    batch_size: \" 10\"\n"),
       "c.yaml:5:17: services[0].batch_size: must be an integer (got \" 10\")"},
      {"kafka: {bootstrap_servers: k:9092}\nservices:\n  - name: a\n    mysql: db\n",
       "c.yaml:4:12: services[0].mysql: must be a mapping (key: value pairs)"},
      {"kafka: {bootstrap_servers: k:9092}\nservices: {a: 1}\n",
       "c.yaml:2:11: services: must be a list of at least one service"},
      {"kafka: {bootstrap_servers: k:9092}\nservices: []\n",
       "c.yaml:2:11: services: must be a list of at least one service"},
      {Svc("    topics: [a]\n"),
       "c.yaml:5:13: services[0].topics: must be a mapping (key: value pairs)"},
      {Svc("    kafka: {properties: {linger.ms: [1]}}\n"),
       "c.yaml:5:37: services[0].kafka.properties.linger.ms: must be a string, not a list"},
      {Svc("    ordering: [x]\n"),
       "c.yaml:5:15: services[0].ordering: must be one of per_aggregate | none, not a list"},
      {Svc("", ", host: "), "c.yaml:4:41: services[0].mysql.host: must be a string, not empty"},
      {Svc("    ? [a]\n    : 1\n"),
       "c.yaml:5:7: services[0]: a key must be a plain string, not a list or mapping"},
      {Svc("    <<: {batch_size: 1}\n"),
       "c.yaml:5:5: services[0].<<: YAML merge keys (<<) are not supported: write the keys out, "
       "or use ${VAR} for shared values"},
      {Svc("    retry: 3\n"),
       "c.yaml:5:12: services[0].retry: must be a mapping (key: value pairs)"},
  };
}

// Unknown, forbidden and duplicate keys.
std::vector<BadConfig> UnknownKeyCases() {
  return {
      {Svc("    batch_sise: 10\n"),
       "c.yaml:5:5: services[0].batch_sise: unknown key (did you mean \"batch_size\"?)"},
      {Svc("", ", pasword_env: PW"),
       "c.yaml:4:35: services[0].mysql.pasword_env: unknown key (did you mean \"password_env\"?)"},
      {"kafka: {bootstrap_servers: k:9092}\nservises: []\n",
       "c.yaml:2:1: servises: unknown key (did you mean \"services\"?)"},
      {Svc("    colour: red\n"),
       "c.yaml:5:5: services[0].colour: unknown key (known keys: name mysql topic topics "
       "batch_size poll_interval_ms wakeup lease_ms ordering dead_policy retry retention kafka "
       "max_inflight_batches gauge_interval_ms paused shard envelope cloudevents value_format "
       "payload_encoding schema values)"},
      {Svc("", ", password: hunter2"),
       "c.yaml:4:45: services[0].mysql.password: a password is never written in the config file: "
       "use password_env (the name of an environment variable holding it) or password_file (a "
       "file holding it)"},
      {Svc("    kafka: {properties: {transactional.id: relay-1}}\n"),
       "c.yaml:5:25: services[0].kafka.properties.transactional.id: the relay does not use Kafka "
       "transactions (its producer is idempotent; consumers deduplicate by event_key): remove it"},
      {Svc("    kafka: {properties: {bootstrap.servers: x:1}}\n"),
       "c.yaml:5:25: services[0].kafka.properties.bootstrap.servers: set kafka.bootstrap_servers "
       "instead"},
      {Svc("    batch_size: 10\n    batch_size: 20\n"),
       "c.yaml:6:5: services[0].batch_size: duplicate key"},
      {Svc("    topics: {A: a, A: b}\n"), "c.yaml:5:20: services[0].topics.A: duplicate key"},
      {Svc("    retry: {max_attempt: 3}\n"),
       "c.yaml:5:13: services[0].retry.max_attempt: unknown key (did you mean "
       "\"max_attempts\"?)"},
      // from the former substring table (tests/config/config_test.cc)
      {Svc("    mysql2: {}\n"),
       "c.yaml:5:5: services[0].mysql2: unknown key (did you mean \"mysql\"?)"},
  };
}

// Missing required keys.
std::vector<BadConfig> MissingKeyCases() {
  return {
      {"kafka: {bootstrap_servers: k:9092}\nservices:\n  - name: a\n    mysql: {database: d}\n",
       "c.yaml:4:12: services[0].mysql.user: is required"},
      {"kafka: {bootstrap_servers: k:9092}\nservices:\n  - name: a\n    mysql: {user: u}\n",
       "c.yaml:4:12: services[0].mysql.database: is required"},
      {"kafka: {bootstrap_servers: k:9092}\nservices:\n  - mysql: {user: u, database: d}\n",
       "c.yaml:3:5: services[0].name: is required"},
      {"kafka: {bootstrap_servers: k:9092}\nservices:\n  - name: a\n",
       "c.yaml:3:5: services[0].mysql: is required"},
      {"kafka: {bootstrap_servers: k:9092}\n",
       "c.yaml:1:1: services: is required (a list of at least one service)"},
      {"services:\n  - name: a\n    mysql: {user: u, database: d}\n",
       "c.yaml:2:5: services[0].kafka.bootstrap_servers: is required (here or in the top-level "
       "kafka block)"},
      {Svc("", ", tls: {mode: verify_ca}"),
       "c.yaml:4:40: services[0].mysql.tls.ca: is required when mode is verify_ca"},
      {Svc("", ", tls: {cert: @DIR@/pw-ok}"),
       "c.yaml:4:40: services[0].mysql.tls: cert and key must be given together"},
  };
}

// Numbers out of range.
std::vector<BadConfig> OutOfRangeCases() {
  return {
      {Svc("    batch_size: 0\n"),
       "c.yaml:5:17: services[0].batch_size: must be between 1 and 10000 (got 0)"},
      {Svc("    batch_size: 10001\n"),
       "c.yaml:5:17: services[0].batch_size: must be between 1 and 10000 (got 10001)"},
      {Svc("", ", port: 70000"),
       "c.yaml:4:41: services[0].mysql.port: must be between 1 and 65535 (got 70000)"},
      {Svc("", ", port: -1"),
       "c.yaml:4:41: services[0].mysql.port: must be between 1 and 65535 (got -1)"},
      {Svc("    lease_ms: 1999\n"),
       "c.yaml:5:15: services[0].lease_ms: must be between 2000 and 86400000 (got 1999)"},
      {Svc("    batch_size: 99999999999999999999999\n"),
       "c.yaml:5:17: services[0].batch_size: must be between 1 and 10000 (got "
       "\"99999999999999999999999\")"},
      {Svc("    retry: {initial_backoff_ms: 5000, max_backoff_ms: 1000}\n"),
       "c.yaml:5:55: services[0].retry.max_backoff_ms: must be >= initial_backoff_ms (5000)"},
      {Svc("    max_inflight_batches: 65\n"),
       "c.yaml:5:27: services[0].max_inflight_batches: must be between 1 and 64 (got 65)"},
      {"http: {listen: 127.0.0.1:99999}\n" + Svc(),
       "c.yaml:1:16: http.listen: must be host:port, e.g. 127.0.0.1:9464 (got "
       "\"127.0.0.1:99999\")"},
      // from the former substring table (tests/config/config_test.cc)
      {Svc("    retry: {max_attempts: 0}\n"),
       "c.yaml:5:27: services[0].retry.max_attempts: must be between 1 and 1000 (got 0)"},
  };
}

// ${VAR} expansion and password_env.
std::vector<BadConfig> EnvironmentCases() {
  return {
      {Svc("    topic: x.${NOPE}\n"),
       "c.yaml:5:12: services[0].topic: environment variable NOPE is not set (write "
       "${NOPE:-default} to give a default)"},
      {Svc("    topic: x.${1BAD}\n"),
       "c.yaml:5:12: services[0].topic: invalid variable name \"1BAD\" in ${1BAD}"},
      {Svc("    topic: x.${OPEN\n"),
       "c.yaml:5:12: services[0].topic: unterminated ${ in \"x.${OPEN\""},
      {Svc("    topic: \"x.${A:-${B}}\"\n"),
       "c.yaml:5:12: services[0].topic: a default cannot hold ${...} (nested variables are not "
       "supported) in ${A:-${B}"},
      {Svc("    topics: {\"${EV}\": order.paid}\n"),
       "c.yaml:5:14: services[0].topics.${EV}: keys are never expanded (${VAR} works in values "
       "only); write the key itself",
       {{"EV", "OrderPaid"}}},
      {Svc("    kafka: {properties: {\"${P}\": x}}\n"),
       "c.yaml:5:26: services[0].kafka.properties.${P}: keys are never expanded (${VAR} works in "
       "values only); write the key itself"},
      {Svc("    batch_size: ${BATCH}\n"),
       "c.yaml:5:17: services[0].batch_size: must be an integer (got \"abc\")",
       {{"BATCH", "abc"}}},
      {Svc("    batch_size: ${BATCH}\n"),
       "c.yaml:5:17: services[0].batch_size: environment variable BATCH is not set (write "
       "${BATCH:-default} to give a default)"},
      {Svc("", ", password_env: \"${PW}\""),
       "c.yaml:4:49: services[0].mysql.password_env: takes the name of an environment variable, "
       "not its value: write password_env: ORDER_DB_PASSWORD, without ${}",
       {{"PW", "hunter2"}}},
      {Svc("", ", password_env: NOT_SET"),
       "c.yaml:4:49: services[0].mysql.password_env: environment variable NOT_SET is not set"},
      {Svc("", ", password_env: my-password"),
       "c.yaml:4:49: services[0].mysql.password_env: must be an environment variable name "
       "([A-Za-z_][A-Za-z0-9_]*) (got \"my-password\")"},
      {Svc("", ", password_env: PW, password_file: @DIR@/pw-ok"),
       "c.yaml:4:68: services[0].mysql.password_file: give either password_env or password_file, "
       "not both",
       {{"PW", "x"}}},
  };
}

// password_file and TLS files.
std::vector<BadConfig> FileCases() {
  return {
      {Svc("", ", password_file: @DIR@/missing"),
       "c.yaml:4:50: services[0].mysql.password_file: cannot read \"@DIR@/missing\": No such file "
       "or directory"},
      {Svc("", ", password_file: @DIR@"),
       "c.yaml:4:50: services[0].mysql.password_file: cannot read \"@DIR@\": not a regular file"},
      {Svc("", ", password_file: @DIR@/pw-empty"),
       "c.yaml:4:50: services[0].mysql.password_file: \"@DIR@/pw-empty\" is empty; leave out "
       "password_file to connect without a password"},
      {Svc("", ", password_file: \"\""),
       "c.yaml:4:50: services[0].mysql.password_file: must not be empty"},
      {Svc("", ", password_file: \"${PW}\""),
       "c.yaml:4:50: services[0].mysql.password_file: cannot read \"${PW} (expanded)\": No such "
       "file or directory",
       {{"PW", "hunter2"}}},
      {Svc("", ", tls: {mode: verify_identity, ca: @DIR@/no-ca.pem}"),
       "c.yaml:4:68: services[0].mysql.tls.ca: cannot read \"@DIR@/no-ca.pem\": No such file or "
       "directory"},
  };
}

// Names, identifiers and enumerations.
std::vector<BadConfig> NameCases() {
  return {
      {Svc("  - name: a\n    mysql: {user: u, database: d}\n"),
       "c.yaml:5:11: services[1].name: duplicate service name \"a\""},
      {"kafka: {bootstrap_servers: k:9092}\nservices:\n  - name: my service\n    mysql: {user: u, "
       "database: d}\n",
       "c.yaml:3:11: services[0].name: must be 1-64 characters of [A-Za-z0-9_.-] (got \"my "
       "service\")"},
      {Svc("", ", table: \"t; drop table x\""),
       "c.yaml:4:42: services[0].mysql.table: must be a plain identifier ([A-Za-z_][A-Za-z0-9_$]*, "
       "at most 64) (got \"t; drop table x\")"},
      {Svc("", ", table: t-outbox"),
       "c.yaml:4:42: services[0].mysql.table: must be a plain identifier ([A-Za-z_][A-Za-z0-9_$]*, "
       "at most 64) (got \"t-outbox\")"},
      {Svc("", ", table: \"`t_outbox`\""),
       "c.yaml:4:42: services[0].mysql.table: must be a plain identifier ([A-Za-z_][A-Za-z0-9_$]*, "
       "at most 64) (got \"`t_outbox`\")"},
      {"kafka: {bootstrap_servers: k:9092}\nservices:\n  - name: a\n    mysql: {user: u, "
       "database: " +
           std::string(65, 'd') + "}\n",
       "c.yaml:4:32: services[0].mysql.database: must be a plain identifier "
       "([A-Za-z_][A-Za-z0-9_$]*, at most 64) (got \"" +
           std::string(65, 'd') + "\")"},
      {Svc("", ", time_zone: Mars/Olympus Mons"),
       "c.yaml:4:46: services[0].mysql.time_zone: must be an offset like +08:00, SYSTEM or a zone "
       "name like Asia/Shanghai (got \"Mars/Olympus Mons\")"},
      {Svc("", ", tls: {mode: sometimes}"),
       "c.yaml:4:47: services[0].mysql.tls.mode: must be one of disabled | preferred | required | "
       "verify_ca | verify_identity (got \"sometimes\")"},
      {"log: {level: verbose}\n" + Svc(),
       "c.yaml:1:14: log.level: must be one of debug | info | warn | error (got \"verbose\")"},
      {"http: {listen: 9464}\n" + Svc(),
       "c.yaml:1:16: http.listen: must be host:port, e.g. 127.0.0.1:9464 (got \"9464\")"},
  };
}

// Topic templates and topic names.
std::vector<BadConfig> TopicTemplateCases() {
  return {
      {Svc("    topic: x.{aggregate}\n"),
       "c.yaml:5:12: services[0].topic: unknown placeholder {aggregate} (known: {aggregate_type}, "
       "{event_type}, {service})"},
      {Svc("    topic: x.{aggregate_type\n"),
       "c.yaml:5:12: services[0].topic: unterminated '{' at offset 2 in \"x.{aggregate_type\""},
      {Svc("    topic: x}.{aggregate_type}\n"),
       "c.yaml:5:12: services[0].topic: unmatched '}' at offset 1 in \"x}.{aggregate_type}\""},
      {Svc("    topic: \"\"\n"), "c.yaml:5:12: services[0].topic: topic template is empty"},
      {Svc("    topic: order events.{aggregate_type}\n"),
       "c.yaml:5:12: services[0].topic: character ' ' at offset 5 of \"order "
       "events.{aggregate_type}\" can never be in a Kafka topic name (allowed: [A-Za-z0-9._-])"},
      {Svc("    topic: orders/{event_type}\n"),
       "c.yaml:5:12: services[0].topic: character '/' at offset 6 of \"orders/{event_type}\" can "
       "never be in a Kafka topic name (allowed: [A-Za-z0-9._-])"},
      {Svc("    topic: \"outbox.\\u00e9v\\u00e9nement.{aggregate_type}\"\n"),
       "c.yaml:5:12: services[0].topic: character '\\xc3' at offset 7 of "
       "\"outbox.\xc3\xa9v\xc3\xa9nement.{aggregate_type}\" can never be in a Kafka topic name "
       "(allowed: [A-Za-z0-9._-])"},
      {Svc("    topic: " + std::string(250, 't') + "{aggregate_type}\n"),
       "c.yaml:5:12: services[0].topic: renders topic names of at least 250 characters; Kafka "
       "allows 249"},
      {"kafka: {bootstrap_servers: k:9092}\nservices:\n  - name: \"..\"\n    mysql: {user: u, "
       "database: d}\n    topic: \"{service}\"\n",
       "c.yaml:5:12: services[0].topic: renders an invalid Kafka topic name: topic name cannot be "
       "\".\" or \"..\""},
      {Svc("    topics: {OrderPaid: \"order paid\"}\n"),
       "c.yaml:5:25: services[0].topics.OrderPaid: topic name \"order paid\" has a character "
       "outside [A-Za-z0-9._-]"},
      {Svc("    topics: {OrderPaid: \"{aggregate_type}\"}\n"),
       "c.yaml:5:25: services[0].topics.OrderPaid: topic name \"{aggregate_type}\" has a character "
       "outside [A-Za-z0-9._-] (topics values are topic names taken literally; placeholders work "
       "only in topic)"},
      // control characters stay on one line
      {Svc("    topic: \"a\\nb\"\n"),
       "c.yaml:5:12: services[0].topic: character '\\x0a' at offset 1 of \"a\\nb\" can never be in "
       "a Kafka topic name (allowed: [A-Za-z0-9._-])"},
  };
}

// wakeup and the binlog stream's server_id (docs/CONFIG.md "wakeup").
std::vector<BadConfig> WakeupCases() {
  return {
      {Svc("    wakeup: push\n"),
       "c.yaml:5:13: services[0].wakeup: must be one of poll | binlog (got \"push\")"},
      {Svc("    wakup: binlog\n"),
       "c.yaml:5:5: services[0].wakup: unknown key (did you mean \"wakeup\"?)"},
      {Svc("", ", binlog_server_id: 0"),
       "c.yaml:4:53: services[0].mysql.binlog_server_id: must be between 1 and 4294967295 (got 0)"},
      {Svc("", ", binlog_server_id: 4294967296"),
       "c.yaml:4:53: services[0].mysql.binlog_server_id: must be between 1 and 4294967295 (got "
       "4294967296)"},
      {Svc("", ", binlog_server_id: -1"),
       "c.yaml:4:53: services[0].mysql.binlog_server_id: must be between 1 and 4294967295 (got "
       "-1)"},
      {"kafka: {bootstrap_servers: k:9092}\nservices:\n  - name: a\n    wakeup: binlog\n    mysql: "
       "{user: u, database: d, binlog_server_id: 7}\n  - name: b\n    wakeup: binlog\n    mysql: "
       "{user: u, database: e, binlog_server_id: 8}\n",
       "c.yaml:8:53: services[1].mysql.binlog_server_id: is 8 while "
       "services[0].mysql.binlog_server_id "
       "is 7 on the same server 127.0.0.1:3306: services with wakeup: binlog on one server share "
       "one stream and its server_id; give them the same value"},
      {"kafka: {bootstrap_servers: k:9092}\nservices:\n  - name: a\n    wakeup: binlog\n    mysql: "
       "{user: u, database: d, binlog_server_id: 7}\n  - name: b\n    wakeup: binlog\n    mysql: "
       "{user: u, database: e}\n",
       "c.yaml:8:12: services[1].mysql.binlog_server_id: is unset while "
       "services[0].mysql.binlog_server_id is 7 on the same server 127.0.0.1:3306: services with "
       "wakeup: binlog on one server share one stream and its server_id; give them the same value"},
      // Host names are case-insensitive: one server, one stream (config/config.h ServerKey).
      {"kafka: {bootstrap_servers: k:9092}\nservices:\n  - name: a\n    wakeup: binlog\n    mysql: "
       "{host: DB.example, user: u, database: d, binlog_server_id: 7}\n  - name: b\n    wakeup: "
       "binlog\n    mysql: {host: db.example, user: u, database: e, binlog_server_id: 8}\n",
       "c.yaml:8:71: services[1].mysql.binlog_server_id: is 8 while "
       "services[0].mysql.binlog_server_id is 7 on the same server db.example:3306: services with "
       "wakeup: binlog on one server share one stream and its server_id; give them the same value"},
  };
}

// The fleet block and services[].shard (docs/CONFIG.md "fleet").
std::vector<BadConfig> FleetCases() {
  return {
      {"fleet: {topic: shards}\n" + Svc(), "c.yaml:1:8: fleet.group_id: is required"},
      {"fleet: {group_id: g}\n" + Svc(), "c.yaml:1:8: fleet.topic: is required"},
      {"fleet: {group_id: g, topic: \"a b\"}\n" + Svc(),
       "c.yaml:1:29: fleet.topic: topic name \"a b\" has a character outside [A-Za-z0-9._-]"},
      {"fleet: {group_id: g, topic: t, sesion_timeout_ms: 5000}\n" + Svc(),
       "c.yaml:1:32: fleet.sesion_timeout_ms: unknown key (did you mean \"session_timeout_ms\"?)"},
      {"fleet: {group_id: g, topic: t, session_timeout_ms: 10}\n" + Svc(),
       "c.yaml:1:52: fleet.session_timeout_ms: must be between 1000 and 1800000 (got 10)"},
      {"fleet: {group_id: g, topic: t}\n" + Svc("    shard: -1\n"),
       "c.yaml:6:12: services[0].shard: must be between 0 and 99999 (got -1)"},
      {Svc("    shard: 3\n"),
       "c.yaml:5:12: services[0].shard: needs a fleet block: without one every relay serves "
       "every service"},
  };
}

// envelope and the CloudEvents templates (docs/CONFIG.md "envelope").
std::vector<BadConfig> EnvelopeCases() {
  return {
      {Svc("    envelope: cloud\n"),
       "c.yaml:5:15: services[0].envelope: must be one of plain | cloudevents (got \"cloud\")"},
      {Svc("    envelope: cloudevents\n    cloudevents: {source: orders service}\n"),
       "c.yaml:6:27: services[0].cloudevents.source: character ' ' at offset 6 of \"orders "
       "service\" is not allowed in a URI reference (RFC 3986): percent-encode it"},
      {Svc("    envelope: cloudevents\n    cloudevents: {source: /a/%zz}\n"),
       "c.yaml:6:27: services[0].cloudevents.source: '%' at offset 3 of \"/a/%zz\" does not "
       "start a %XX escape"},
      {Svc("    envelope: cloudevents\n    cloudevents: {source: \"/{aggregate}\"}\n"),
       "c.yaml:6:27: services[0].cloudevents.source: unknown placeholder {aggregate} (known: "
       "{aggregate_type}, {event_type}, {service})"},
      {Svc("    envelope: cloudevents\n    cloudevents: {type: \"\"}\n"),
       "c.yaml:6:25: services[0].cloudevents.type: template is empty"},
      {Svc("    envelope: cloudevents\n    cloudevents: {type: \"a\\tb\"}\n"),
       "c.yaml:6:25: services[0].cloudevents.type: control character '\\x09' at offset 1 of "
       "\"a\\tb\""},
      {Svc("    envelope: cloudevents\n    cloudevents: {typ: x}\n"),
       "c.yaml:6:19: services[0].cloudevents.typ: unknown key (did you mean \"type\"?)"},
      {Svc("    envelope: cloudevents\n    cloudevents: [a]\n"),
       "c.yaml:6:18: services[0].cloudevents: must be a mapping (key: value pairs)"},
  };
}

const std::vector<BadConfig>& Cases() {
  static const std::vector<BadConfig> cases = [] {
    std::vector<BadConfig> all;
    for (auto section : {YamlSyntaxCases, WrongTypeCases, UnknownKeyCases, MissingKeyCases,
                         OutOfRangeCases, EnvironmentCases, FileCases, NameCases,
                         TopicTemplateCases, WakeupCases, FleetCases, EnvelopeCases}) {
      for (BadConfig& c : section()) all.push_back(std::move(c));
    }
    return all;
  }();
  return cases;
}

struct Fixture {
  Fixture() {
    dir.Write("pw-ok", "s3cret\n", 0600);
    dir.Write("pw-open", "s3cret\n", 0644);
    dir.Write("pw-empty", "\n", 0600);
  }
  TempDir dir;
};

}  // namespace

TEST_CASE(
    "each bad config is rejected with one exact file:line:col key-path message and exit code 2",
    "[config][bad]") {
  Fixture fx;
  const std::string dir = fx.dir.path();
  int n = 0;
  for (const auto& c : Cases()) {
    const std::string file =
        fx.dir.Write("bad-" + std::to_string(n++) + ".yaml", Replace(c.yaml, "@DIR@", dir));
    std::string expected = Replace(Replace(c.message, "@DIR@", dir), "c.yaml", file);
    INFO("case " << n - 1 << ":\n" << c.yaml);

    // In-process, with the same environment the binary gets.
    LoadOptions o;
    o.env = [&c](const std::string& name) -> std::optional<std::string> {
      auto it = c.env.find(name);
      if (it == c.env.end()) return std::nullopt;
      return it->second;
    };
    std::string got = "no error";
    try {
      LoadConfigFile(file, o);
    } catch (const ConfigError& e) {
      got = e.what();
    }
    CHECK(got == expected);

    std::vector<std::string> env;
    for (const auto& [k, v] : c.env) env.push_back(k + "=" + v);
    ProcessResult r = RunProcess({OUTBOX_BINARY, "check", "--config", file}, ChildEnv(env));
    CHECK(r.exit_code == 2);
    CHECK(r.err == expected + "\n");
    CHECK(r.out.empty());
  }
}

TEST_CASE("every problem of a file is reported in one run in file order each with its position",
          "[config][bad]") {
  TempDir dir;
  const std::string file =
      dir.Write("multi.yaml",
                "instance_id: \"\"\n"
                "log: {level: loud}\n"
                "kafka: {bootstrap_servers: k:9092}\n"
                "services:\n"
                "  - name: order\n"
                "    mysql: {user: u, database: d, port: 70000, pasword_env: X}\n"
                "    batch_size: 0\n"
                "    ordering: random\n"
                "    retry: {max_attempts: 0}\n"
                "  - name: \"bad name\"\n"
                "    mysql: {database: d}\n");
  const std::vector<std::string> expected = {
      file + ":1:14: instance_id: must not be empty",
      file + ":2:14: log.level: must be one of debug | info | warn | error (got \"loud\")",
      file + ":6:41: services[0].mysql.port: must be between 1 and 65535 (got 70000)",
      file + ":6:48: services[0].mysql.pasword_env: unknown key (did you mean \"password_env\"?)",
      file + ":7:17: services[0].batch_size: must be between 1 and 10000 (got 0)",
      file + ":8:15: services[0].ordering: must be one of per_aggregate | none (got \"random\")",
      file + ":9:27: services[0].retry.max_attempts: must be between 1 and 1000 (got 0)",
      file +
          ":10:11: services[1].name: must be 1-64 characters of [A-Za-z0-9_.-] (got \"bad name\")",
      file + ":11:12: services[1].mysql.user: is required",
  };
  std::string joined;
  for (const auto& e : expected) joined += e + "\n";

  try {
    LoadConfigFile(file);
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK(e.problems() == expected);
    CHECK(std::string(e.what()) + "\n" == joined);
  }
  ProcessResult r = RunProcess({OUTBOX_BINARY, "check", "--config", file}, ChildEnv());
  CHECK(r.exit_code == 2);
  CHECK(r.err == joined);
}

TEST_CASE("a file with more than 20 problems shows the first 20 and how many more there are",
          "[config][bad]") {
  std::string yaml = "kafka: {bootstrap_servers: k:9092}\nservices:\n";
  for (int i = 0; i < 25; ++i)
    yaml += "  - name: s" + std::to_string(i) + "\n    mysql: {user: u, database: d}\n" +
            "    batch_size: 0\n";
  TempDir dir;
  const std::string file = dir.Write("many.yaml", yaml);
  try {
    LoadConfigFile(file);
    FAIL("no error");
  } catch (const ConfigError& e) {
    REQUIRE(e.problems().size() == 20);
    CHECK(e.problems().front() ==
          file + ":5:17: services[0].batch_size: must be between 1 and 10000 (got 0)");
    CHECK(e.problems().back() ==
          file + ":62:17: services[19].batch_size: must be between 1 and 10000 (got 0)");
    const std::string what = e.what();
    CHECK(what.substr(what.rfind('\n') + 1) ==
          file + ": 5 more problem(s) not shown: fix these and check again");
  }
}
