#pragma once

// The pure analysis of outbox-check: given every row of an outbox table and
// every message read back from Kafka, decide whether the relay kept its
// contract (README "Guarantees" and "How it works"). No I/O here; tools/outbox_check_main.cc reads
// the table and the topics, tests/tools/outbox_check_test.cc feeds it by hand.
//
// The checker deliberately does not use the relay's own code (router, topic
// template, time formatting): it is an independent second opinion.

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace outbox::check {

// One row of the outbox table, as the relay would read it.
struct Row {
  int64_t id = 0;
  std::string aggregate_type;
  int64_t aggregate_id = 0;
  std::string event_type;
  std::string event_key;
  std::string payload;  // the payload column's bytes
  std::string status;   // NEW / SENDING / SENT / DEAD (anything else is reported)
  int64_t created_at_unix = 0;
  std::optional<std::string> topic;    // optional `topic` column
  std::optional<std::string> headers;  // optional `headers` column (JSON text)
};

// One message read back from Kafka.
struct Message {
  std::string topic;
  int32_t partition = 0;
  int64_t offset = 0;
  std::optional<std::string> key;  // nullopt: null key
  std::string value;
  std::vector<std::pair<std::string, std::string>> headers;
};

// How the relay is expected to have built each message (README "How it works").
struct Expectations {
  std::string service;  // for {service}
  std::string topic_template = "outbox.event.{aggregate_type}";
  std::map<std::string, std::string> topic_overrides;  // event_type -> topic
  bool check_value = true;                             // value == payload bytes
  // Partitions per topic; when known, each message must sit in the partition
  // Kafka's Java client picks for its key (murmur2). Empty: not checked.
  std::map<std::string, int32_t> partition_counts;
};

struct Options {
  Expectations expect;
  // Every row must be SENT (and therefore in Kafka). Off: rows in NEW,
  // SENDING or DEAD are reported but are not violations.
  bool expect_all_sent = true;
  // Even when unsent rows are allowed, a row left in SENDING is a violation.
  bool forbid_sending = false;
  // ordering: per_aggregate. Off for ordering: none.
  bool check_order = true;
  // dead_policy: skip lets later events of an aggregate pass its DEAD event.
  bool dead_policy_skip = false;
  std::optional<int64_t> max_duplicates;  // extra copies allowed in total
  std::optional<int64_t> expect_rows;     // the table must hold exactly this many rows
  size_t sample = 20;                     // ids listed per finding
  // Partitions whose log no longer starts at offset 0 ("topic/partition"
  // -> low watermark): messages below it were deleted by the broker's
  // retention (librdkafka's mock cluster keeps a few MB per partition)
  // before they could be read, so the lost and never-published counts cannot
  // be trusted. Filled by the reader; any fails the verdict.
  std::map<std::string, int64_t> truncated_partitions;
};

// What was found. Every count has a sample of ids (or descriptions).
struct Report {
  int64_t rows = 0;
  int64_t messages = 0;
  std::map<std::string, int64_t> rows_by_status;
  int64_t distinct_published = 0;  // rows with at least one message

  int64_t lost = 0;               // SENT in the table, absent from Kafka
  int64_t never_published = 0;    // not SENT and absent from Kafka
  int64_t published_unsent = 0;   // in Kafka but the row is not SENT (at-least-once window)
  int64_t duplicate_copies = 0;   // messages beyond the first per row
  int64_t duplicated_events = 0;  // rows with more than one message
  int64_t order_violations = 0;   // first occurrences out of id order within an aggregate
  int64_t split_aggregates = 0;   // an aggregate on more than one partition of a topic
  int64_t overtaken = 0;          // published while an older event of its aggregate never was
  int64_t mismatched_messages = 0;
  std::map<std::string, int64_t> mismatches_by_field;  // key, topic, value, partition, header:NAME
  int64_t unmatched_messages = 0;                      // no outbox_id header, or no such row
  int64_t sending_rows = 0;
  int64_t unknown_status_rows = 0;
  int64_t deleted_by_retention = 0;  // messages below the low watermarks

  std::map<std::string, std::vector<std::string>> samples;  // finding -> examples
  std::vector<std::string> failures;  // why the verdict is not OK; empty when OK
  bool ok() const { return failures.empty(); }
};

Report Analyze(const std::vector<Row>& rows, const std::vector<Message>& messages,
               const Options& options);

nlohmann::json ToJson(const Report& report);
// A few human-readable lines.
std::string Summary(const Report& report);

// Kafka's Java default partitioner for a non-null key: murmur2 of the key
// bytes, positive, modulo the partition count.
int32_t JavaPartition(const std::string& key, int32_t partitions);
// "2024-05-01T12:00:00Z" for a unix time.
std::string Rfc3339Utc(int64_t unix_seconds);
// Expands {aggregate_type}, {event_type}, {service} in `tmpl`.
std::string ExpandTopic(const std::string& tmpl, const Row& row, const std::string& service);

}  // namespace outbox::check
