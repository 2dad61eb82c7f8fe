#include "inbox_consumer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <thread>

namespace inbox {
namespace {

using std::chrono::milliseconds;

// A failing database or broker is retried after 200 ms, then 400 ms, ... up
// to 10 s: quick after a blip, about six attempts a minute in a long outage.
constexpr milliseconds kStallInitialBackoff{200};
constexpr milliseconds kStallMaxBackoff{10000};
// A message that cannot be processed is retried after 100 ms, 200 ms, ...
// up to 2 s; max_attempts 5 keeps its partition waiting 1.5 s in all.
constexpr milliseconds kAttemptBackoff{100};
constexpr milliseconds kMaxAttemptBackoff{2000};

std::string Header(const rd_kafka_message_t* m, const char* name, bool* found) {
  rd_kafka_headers_t* hdrs = nullptr;
  const void* value = nullptr;
  size_t size = 0;
  *found = rd_kafka_message_headers(m, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR &&
           rd_kafka_header_get_last(hdrs, name, &value, &size) == RD_KAFKA_RESP_ERR_NO_ERROR &&
           value != nullptr;
  return *found ? std::string(static_cast<const char*>(value), size) : std::string();
}

// Decimal digits of a positive BIGINT (the relay writes ids that way).
bool ParseId(const std::string& s, int64_t* out) {
  if (s.empty() || s.size() > 19 || !std::all_of(s.begin(), s.end(), ::isdigit)) return false;
  const unsigned long long v = std::stoull(s);
  if (v == 0 || v > static_cast<unsigned long long>(INT64_MAX)) return false;
  *out = static_cast<int64_t>(v);
  return true;
}

// Characters of valid UTF-8 (the columns are utf8mb4, their lengths count
// characters); -1 for bytes that are not UTF-8.
int64_t Utf8Length(const std::string& s) {
  int64_t n = 0;
  for (size_t i = 0; i < s.size(); ++n) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t len = c < 0x80         ? 1
                       : (c >> 5) == 6  ? 2
                       : (c >> 4) == 14 ? 3
                       : (c >> 3) == 30 ? 4
                                        : 0;
    if (len == 0 || i + len > s.size()) return -1;
    for (size_t k = 1; k < len; ++k)
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 2) return -1;
    i += len;
  }
  return n;
}

bool TextHeader(const rd_kafka_message_t* m, const char* name, int64_t max_chars, std::string* out,
                std::string* reason) {
  bool found = false;
  *out = Header(m, name, &found);
  const int64_t chars = Utf8Length(*out);
  if (!found || out->empty())
    *reason = std::string("missing header ") + name;
  else if (chars < 0)
    *reason = std::string("header ") + name + " is not UTF-8";
  else if (chars > max_chars)
    *reason = std::string("header ") + name + " is longer than " + std::to_string(max_chars) +
              " characters";
  else
    return true;
  return false;
}

}  // namespace

bool ParseEvent(const rd_kafka_message_t* m, Event* ev, std::string* reason) {
  // Lengths are the columns' (sql/t_inbox.sql, sql/t_aggregate_effect.sql):
  // a value that cannot be stored is this message's fault, found here.
  if (!TextHeader(m, "event_key", 128, &ev->event_key, reason) ||
      !TextHeader(m, "event_type", 64, &ev->event_type, reason) ||
      !TextHeader(m, "aggregate_type", 32, &ev->aggregate_type, reason))
    return false;
  bool found = false;
  const std::string outbox_id = Header(m, "outbox_id", &found);
  if (!ParseId(outbox_id, &ev->outbox_id)) {
    *reason = found ? "header outbox_id is not a positive decimal id" : "missing header outbox_id";
    return false;
  }
  const std::string key = m->key ? std::string(static_cast<const char*>(m->key), m->key_len) : "";
  if (!ParseId(key, &ev->aggregate_id)) {
    *reason = "the message key is not a decimal aggregate_id";
    return false;
  }
  return true;
}

InboxConsumer::InboxConsumer(const ConsumerConfig& config, ConsumerOptions options)
    : config_(config),
      options_(std::move(options)),
      store_(config.mysql, config.consumer, options_.use_inbox),
      dlq_(config),
      backoff_(kStallInitialBackoff) {
  if (options_.before_db_commit) store_.set_before_commit(options_.before_db_commit);
}

InboxConsumer::~InboxConsumer() {
  if (rk_) rd_kafka_destroy(rk_);
}

bool InboxConsumer::Start(std::string* error) {
  if (!dlq_.Start(error)) return false;
  const ConsumerKafkaConfig& k = config_.kafka;
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  // The offset rule: an offset is *stored* only after its database
  // transaction committed (or its dead letter was acknowledged);
  // librdkafka commits the stored offsets every auto.commit.interval.ms (1 s
  // here unless kafka.properties sets it), and this consumer commits them
  // itself, synchronously, before it gives up partitions and at shutdown.
  // A crash loses at most the last second of offset commits: those messages
  // come again and the inbox skips them.
  std::map<std::string, std::string> settings = {
      {"bootstrap.servers", k.bootstrap_servers},
      {"group.id", k.group_id},
      {"client.id", "outbox-inbox-consumer"},
      {"auto.offset.reset", k.auto_offset_reset},
      {"auto.commit.interval.ms", "1000"},
      // A topic created after the consumer started, or a new one that
      // topic_regex matches, is found within 10 s instead of librdkafka's 5 min.
      {"topic.metadata.refresh.interval.ms", "10000"},
  };
  for (const auto& [key, value] : k.properties) settings[key] = value;
  settings["enable.auto.commit"] = "true";
  settings["enable.auto.offset.store"] = "false";
  char err[512];
  for (const auto& [key, value] : settings) {
    if (rd_kafka_conf_set(conf, key.c_str(), value.c_str(), err, sizeof(err)) != RD_KAFKA_CONF_OK) {
      *error = "kafka property " + key + ": " + err;
      rd_kafka_conf_destroy(conf);
      return false;
    }
  }
  rd_kafka_conf_set_log_cb(conf, KafkaLogToSpdlog);
  rd_kafka_conf_set_rebalance_cb(conf, &InboxConsumer::OnRebalance);
  // Served by rd_kafka_consumer_poll, on this thread.
  rd_kafka_conf_set_error_cb(conf, &InboxConsumer::OnError);
  rd_kafka_conf_set_opaque(conf, this);
  rk_ = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
  if (!rk_) {
    rd_kafka_conf_destroy(conf);
    *error = std::string("cannot create the Kafka consumer: ") + err;
    return false;
  }
  // One queue: rebalances, errors and messages are all served by
  // rd_kafka_consumer_poll, on this thread, between two messages.
  rd_kafka_poll_set_consumer(rk_);
  std::vector<std::string> topics = k.topics;
  if (!k.topic_regex.empty()) topics = {k.topic_regex};
  rd_kafka_topic_partition_list_t* sub = rd_kafka_topic_partition_list_new(1);
  for (const auto& t : topics) rd_kafka_topic_partition_list_add(sub, t.c_str(), -1);
  rd_kafka_resp_err_t e = rd_kafka_subscribe(rk_, sub);
  rd_kafka_topic_partition_list_destroy(sub);
  if (e) {
    *error = std::string("cannot subscribe: ") + rd_kafka_err2str(e);
    return false;
  }
  return true;
}

int InboxConsumer::Run(const std::atomic<bool>& stop) {
  std::string error;
  if (!Start(&error)) {
    spdlog::error("{}", error);
    return 1;
  }
  spdlog::info("consumer {} started: group {}, {}, dead letters to {}, database {}@{}:{}/{}",
               config_.consumer, config_.kafka.group_id,
               config_.kafka.topic_regex.empty()
                   ? std::to_string(config_.kafka.topics.size()) + " topic(s)"
                   : "topics matching " + config_.kafka.topic_regex,
               config_.kafka.dead_letter_topic, config_.mysql.user, config_.mysql.host,
               config_.mysql.port, config_.mysql.database);
  next_stats_at_ = Clock::now() + std::chrono::minutes(1);
  // The stop flag is read between messages only: a message that has started
  // is finished (committed, its offset stored) before the consumer stops.
  while (!stop.load() && exit_code_ < 0) {
    MaybeResume();
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk_, 100);
    dlq_.Poll();
    if (Clock::now() >= next_stats_at_) LogStats("progress");
    if (!m) continue;
    if (m->err)
      OnKafkaError(m->err, rd_kafka_message_errstr(m));
    else if (stalled_)
      Rewind(m);  // fetched before the pause took effect: read it again after
    else
      Handle(m);
    rd_kafka_message_destroy(m);
    if (options_.stop_after_messages && stats_.messages >= options_.stop_after_messages) break;
  }
  // Shutdown: commit what was stored, synchronously, then leave the group
  // (its revoke callback commits again, finding nothing new).
  rd_kafka_resp_err_t e = rd_kafka_commit(rk_, nullptr, 0);
  if (e && e != RD_KAFKA_RESP_ERR__NO_OFFSET)
    spdlog::warn(
        "offset commit at shutdown failed: {}; those messages come again and the inbox "
        "skips them",
        rd_kafka_err2str(e));
  rd_kafka_consumer_close(rk_);
  LogStats("stopped");
  return exit_code_ < 0 ? 0 : exit_code_;
}

void InboxConsumer::Handle(rd_kafka_message_t* m) {
  if (first_at_ == Clock::time_point{}) first_at_ = Clock::now();
  // A topic_regex such as '^outbox\.event\..*' also matches the dead-letter
  // topics ("{topic}.dlq"). Their messages failed here already: processing
  // them again would dead-letter them again, to "{topic}.dlq.dlq", forever.
  const std::string topic = rd_kafka_topic_name(m->rkt);
  if (IsDeadLetterTopic(config_.kafka.dead_letter_topic, topic)) {
    ++stats_.dead_letters_read;
    if (skipped_topics_.insert(topic).second)
      spdlog::warn(
          "skipping messages of {}: a dead-letter topic of this consumer "
          "(kafka.topic_regex matches it; anchor the pattern to leave it out)",
          topic);
    return Done(m);
  }
  Event ev;
  std::string reason;
  for (int attempt = 1;; ++attempt) {
    ApplyResult r =
        ParseEvent(m, &ev, &reason) ? store_.Apply(ev, &reason) : ApplyResult::kRejected;
    if (r == ApplyResult::kUnavailable) return Stall(m, "database: " + reason);
    if (r != ApplyResult::kRejected) {
      if (r == ApplyResult::kApplied && options_.after_db_commit) options_.after_db_commit();
      ++(r == ApplyResult::kApplied ? stats_.applied : stats_.duplicates);
      spdlog::debug("{} event {} ({} {} {}, outbox_id {}) from {}/{}/{}",
                    r == ApplyResult::kApplied ? "applied" : "skipped duplicate", ev.event_key,
                    ev.event_type, ev.aggregate_type, ev.aggregate_id, ev.outbox_id,
                    rd_kafka_topic_name(m->rkt), m->partition, m->offset);
      return Done(m);
    }
    ++stats_.failed_attempts;
    if (attempt >= config_.max_attempts) break;
    const auto wait =
        std::min(kAttemptBackoff * (1 << std::min(attempt - 1, 10)), kMaxAttemptBackoff);
    spdlog::debug("message {}/{}/{} cannot be processed (attempt {} of {}): {}",
                  rd_kafka_topic_name(m->rkt), m->partition, m->offset, attempt,
                  config_.max_attempts, reason);
    std::this_thread::sleep_for(wait);
  }
  if (DeadLetter(m, reason)) Done(m);
}

bool InboxConsumer::DeadLetter(rd_kafka_message_t* m, const std::string& reason) {
  const std::string source = rd_kafka_topic_name(m->rkt);
  const std::string topic = DeadLetterTopic(config_.kafka.dead_letter_topic, source);
  std::string error;
  if (!dlq_.Send(m, topic, reason, &error)) {
    Stall(m, "broker: " + error);
    return false;
  }
  ++stats_.dead_lettered;
  spdlog::warn("message {}/{}/{} sent to dead-letter topic {} after {} attempt(s): {}", source,
               m->partition, m->offset, topic, config_.max_attempts, reason);
  return true;
}

// The message is finished: its transaction committed (or its dead letter was
// acknowledged). Only now is its offset stored for the next commit.
void InboxConsumer::Done(rd_kafka_message_t* m) {
  rd_kafka_topic_partition_list_t* l = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(l, rd_kafka_topic_name(m->rkt), m->partition)->offset =
      m->offset + 1;  // a committed offset names the next message to read
  rd_kafka_offsets_store(rk_, l);
  rd_kafka_topic_partition_list_destroy(l);
  ++stats_.messages;
  last_at_ = Clock::now();
  backoff_ = kStallInitialBackoff;
  if (recovering_) {
    recovering_ = false;
    spdlog::info("resumed: the database and the broker answer again");
  }
}

// A database or broker failure: never a reason to dead-letter. Pause the
// whole assignment, rewind this partition to the unfinished message, and try
// again after the backoff. Polling goes on meanwhile (paused partitions
// return nothing), so the group membership and rebalances keep working.
void InboxConsumer::Stall(rd_kafka_message_t* m, const std::string& what) {
  ++stats_.stalls;
  spdlog::warn("{}; pausing consumption, retrying {}/{}/{} in {} ms", what,
               rd_kafka_topic_name(m->rkt), m->partition, m->offset, backoff_.count());
  rd_kafka_topic_partition_list_t* assigned = nullptr;
  if (rd_kafka_assignment(rk_, &assigned) == RD_KAFKA_RESP_ERR_NO_ERROR) {
    rd_kafka_pause_partitions(rk_, assigned);
    rd_kafka_topic_partition_list_destroy(assigned);
  }
  stalled_ = true;
  recovering_ = true;
  rewound_.clear();
  Rewind(m);
  resume_at_ = Clock::now() + backoff_;
  backoff_ = std::min(backoff_ * 2, kStallMaxBackoff);
}

// Seek the message's partition back to it, so it is read again on resume.
// Only the first (lowest) unfinished offset of a partition counts: a seek
// drops whatever was fetched after it.
void InboxConsumer::Rewind(rd_kafka_message_t* m) {
  const std::string topic = rd_kafka_topic_name(m->rkt);
  if (!rewound_.emplace(std::make_pair(topic, m->partition), m->offset).second) return;
  rd_kafka_topic_partition_list_t* l = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(l, topic.c_str(), m->partition)->offset = m->offset;
  rd_kafka_pause_partitions(rk_, l);  // first pause, then seek: resume starts at the seek
  if (rd_kafka_error_t* e = rd_kafka_seek_partitions(rk_, l, 5000)) {
    spdlog::error("cannot rewind {}/{} to {}: {}", topic, m->partition, m->offset,
                  rd_kafka_error_string(e));
    rd_kafka_error_destroy(e);
  }
  rd_kafka_topic_partition_list_destroy(l);
}

void InboxConsumer::MaybeResume() {
  if (!stalled_ || Clock::now() < resume_at_) return;
  rd_kafka_topic_partition_list_t* assigned = nullptr;
  if (rd_kafka_assignment(rk_, &assigned) == RD_KAFKA_RESP_ERR_NO_ERROR) {
    rd_kafka_resume_partitions(rk_, assigned);
    rd_kafka_topic_partition_list_destroy(assigned);
  }
  stalled_ = false;
  rewound_.clear();
}

void InboxConsumer::OnError(rd_kafka_t*, int err, const char* reason, void* opaque) {
  static_cast<InboxConsumer*>(opaque)->OnKafkaError(static_cast<rd_kafka_resp_err_t>(err), reason);
}

void InboxConsumer::OnKafkaError(rd_kafka_resp_err_t err, const std::string& what) {
  if (err == RD_KAFKA_RESP_ERR__PARTITION_EOF) return;
  ++stats_.kafka_errors;
  if (rd_kafka_fatal_error(rk_, nullptr, 0)) {
    spdlog::error("kafka: fatal error: {}; stopping", what);
    exit_code_ = 1;
    return;
  }
  // librdkafka reconnects by itself; say each kind of error once in 30 s,
  // not on every reconnect attempt.
  const auto now = Clock::now();
  if (err == last_kafka_error_ && now - last_kafka_error_at_ < std::chrono::seconds(30)) return;
  last_kafka_error_ = err;
  last_kafka_error_at_ = now;
  spdlog::warn("kafka: {} (librdkafka reconnects by itself; consumption waits)", what);
}

void InboxConsumer::OnRebalance(rd_kafka_t*, rd_kafka_resp_err_t err,
                                rd_kafka_topic_partition_list_t* parts, void* opaque) {
  static_cast<InboxConsumer*>(opaque)->Rebalance(err, parts);
}

// Runs inside rd_kafka_consumer_poll, on the loop's thread, so no message is
// in the middle of its transaction now: every message handled so far is
// either finished (its offset stored) or rewound (not stored: abandoned, the
// next owner reads it).
void InboxConsumer::Rebalance(rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* parts) {
  const bool cooperative = std::strcmp(rd_kafka_rebalance_protocol(rk_), "COOPERATIVE") == 0;
  std::string names;
  for (int i = 0; i < parts->cnt; ++i)
    names += (i ? " " : "") + std::string(parts->elems[i].topic) + "/" +
             std::to_string(parts->elems[i].partition);
  if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
    spdlog::info("assigned {} partition(s): {}", parts->cnt, names);
    if (cooperative) {
      if (rd_kafka_error_t* e = rd_kafka_incremental_assign(rk_, parts)) rd_kafka_error_destroy(e);
    } else {
      rd_kafka_assign(rk_, parts);
    }
    if (stalled_) rd_kafka_pause_partitions(rk_, parts);  // resumed with the rest
    return;
  }
  if (err == RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS) {
    // Commit what is stored before the partitions go: the next owner then
    // starts after the last committed transaction instead of replaying
    // (a replay would be harmless, the inbox skips it, only slower).
    rd_kafka_resp_err_t e = rd_kafka_commit(rk_, nullptr, 0);
    spdlog::info("revoked {} partition(s): {}; offsets commit: {}", parts->cnt, names,
                 e == RD_KAFKA_RESP_ERR__NO_OFFSET ? "nothing new" : rd_kafka_err2str(e));
    for (int i = 0; i < parts->cnt; ++i)
      rewound_.erase({parts->elems[i].topic, parts->elems[i].partition});
    if (cooperative) {
      if (rd_kafka_error_t* x = rd_kafka_incremental_unassign(rk_, parts))
        rd_kafka_error_destroy(x);
    } else {
      rd_kafka_assign(rk_, nullptr);
    }
    return;
  }
  spdlog::warn("rebalance failed: {}; giving up the assignment", rd_kafka_err2str(err));
  rd_kafka_assign(rk_, nullptr);
}

void InboxConsumer::LogStats(const char* when) {
  next_stats_at_ = Clock::now() + std::chrono::minutes(1);
  const ConsumerStats& s = stats_;
  if (std::strcmp(when, "progress") == 0 && s.messages == logged_.messages &&
      s.stalls == logged_.stalls && s.failed_attempts == logged_.failed_attempts &&
      s.kafka_errors == logged_.kafka_errors)
    return;
  logged_ = s;
  spdlog::info(
      "{}: {} message(s) handled: {} applied, {} duplicate(s) skipped, {} dead-lettered, "
      "{} read from dead-letter topics; "
      "{} failed attempt(s), {} stall(s), {} Kafka error(s)",
      when, s.messages, s.applied, s.duplicates, s.dead_lettered, s.dead_letters_read,
      s.failed_attempts, s.stalls, s.kafka_errors);
}

}  // namespace inbox
