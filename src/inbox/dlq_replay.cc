#include "inbox/dlq_replay.h"

#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <ostream>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "inbox/dead_letter.h"  // KafkaLogLine
#include "inbox/event.h"        // HeaderValue, ParsePositiveId

namespace outbox::inbox {
namespace {

struct KafkaDeleter {
  void operator()(rd_kafka_t* rk) const { rd_kafka_destroy(rk); }
};
using KafkaPtr = std::unique_ptr<rd_kafka_t, KafkaDeleter>;

struct Delivery {
  bool done = false;
  rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
};

void OnDelivery(rd_kafka_t*, const rd_kafka_message_t* m, void*) {
  auto* d = static_cast<Delivery*>(m->_private);
  d->err = m->err;
  d->done = true;
}

KafkaPtr NewClient(rd_kafka_type_t type, const ConsumerConfig& config,
                   const std::map<std::string, std::string>& own, std::string* error) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  std::map<std::string, std::string> settings = config.kafka.properties;  // security, ...
  settings["bootstrap.servers"] = config.kafka.bootstrap_servers;
  for (const auto& [k, v] : own) settings[k] = v;
  char err[512];
  for (const auto& [k, v] : settings) {
    if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof(err)) != RD_KAFKA_CONF_OK &&
        own.count(k)) {
      *error = "kafka property " + k + ": " + err;
      rd_kafka_conf_destroy(conf);
      return nullptr;
    }
  }
  rd_kafka_conf_set_log_cb(conf, KafkaLogLine);
  if (type == RD_KAFKA_PRODUCER) rd_kafka_conf_set_dr_msg_cb(conf, OnDelivery);
  rd_kafka_t* rk = rd_kafka_new(type, conf, err, sizeof(err));
  if (!rk) {
    rd_kafka_conf_destroy(conf);
    *error = err;
  }
  return KafkaPtr(rk);
}

// "topic/partition/offset" -> topic (a topic name has no '/').
bool SourceTopic(const std::string& source, std::string* topic) {
  const size_t b = source.rfind('/');
  if (b == std::string::npos || b == 0) return false;
  const size_t a = source.rfind('/', b - 1);
  if (a == std::string::npos || a == 0) return false;
  *topic = source.substr(0, a);
  return true;
}

// The partitions of `topic` and their end offsets, as of now.
bool Partitions(rd_kafka_t* rk, const std::string& topic,
                std::vector<std::pair<int32_t, int64_t>>* out, std::string* error) {
  const rd_kafka_metadata_t* md = nullptr;
  rd_kafka_topic_t* t = rd_kafka_topic_new(rk, topic.c_str(), nullptr);
  rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 0, t, &md, 10000);
  rd_kafka_topic_destroy(t);
  if (e || md->topic_cnt != 1 || md->topics[0].err) {
    *error = "no topic " + topic + ": " +
             rd_kafka_err2str(e               ? e
                              : md->topic_cnt ? md->topics[0].err
                                              : RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC);
    if (md) rd_kafka_metadata_destroy(md);
    return false;
  }
  for (int i = 0; i < md->topics[0].partition_cnt; ++i) {
    const int32_t p = md->topics[0].partitions[i].id;
    int64_t low = 0, high = 0;
    if (rd_kafka_query_watermark_offsets(rk, topic.c_str(), p, &low, &high, 10000)) continue;
    out->emplace_back(p, high);
  }
  rd_kafka_metadata_destroy(md);
  return true;
}

class Replayer {
 public:
  Replayer(const ReplayOptions& o, std::ostream& out, outbox::Clock* clock)
      : o_(o), out_(out), clock_(clock) {}

  // One dead letter: filtered, then sent (or printed). False on a failure.
  bool One(rd_kafka_t* producer, const rd_kafka_message_t* m) {
    bool found = false;
    const std::string reason = HeaderValue(m, "dlq_reason", &found);
    const std::string where =
        o_.from + "/" + std::to_string(m->partition) + "/" + std::to_string(m->offset);
    if (m->offset < o_.first_offset || m->offset > o_.last_offset ||
        reason.compare(0, o_.reason.size(), o_.reason) != 0) {
      ++skipped_;
      return true;
    }
    std::string topic;
    if (!SourceTopic(HeaderValue(m, "dlq_source", &found), &topic)) {
      out_ << "error " << where << ": no usable dlq_source header; not replayed\n";
      ++failed_;
      return false;
    }
    const std::string key = m->key ? std::string(static_cast<const char*>(m->key), m->key_len) : "";
    out_ << (o_.dry_run ? "would send " : "sent ") << where << " -> " << topic << " key " << key
         << " (dlq_reason: " << reason << ")";
    if (o_.dry_run) {
      out_ << "\n";
      ++sent_;
      return true;
    }
    Pace();
    const rd_kafka_resp_err_t err = Produce(producer, m, topic);
    if (err) {
      out_ << ": FAILED: " << rd_kafka_err2str(err) << "\n";
      ++failed_;
      return false;
    }
    out_ << "\n";
    ++sent_;
    return true;
  }

  int Summary() {
    out_ << sent_ << (o_.dry_run ? " would be sent" : " sent") << ", " << skipped_
         << " skipped (--reason, --offsets), " << failed_ << " failed\n";
    return failed_ ? 1 : 0;
  }

 private:
  // At most --rate messages a second: waits on the clock until the next
  // message's turn.
  void Pace() {
    if (o_.rate <= 0) return;
    const auto gap = std::chrono::microseconds(1000000 / o_.rate);
    if (next_at_ > clock_->Now()) {
      outbox::MutexLock lock(&pace_mu_);
      clock_->WaitUntil(&pace_mu_, &pace_cv_, next_at_, [] { return false; });
    }
    next_at_ = std::max(next_at_, clock_->Now()) + gap;
  }

  // The original key, value and headers without dlq_*; the partitioner
  // (murmur2_random, set on the producer) picks the key's partition.
  rd_kafka_resp_err_t Produce(rd_kafka_t* producer, const rd_kafka_message_t* m,
                              const std::string& topic) {
    rd_kafka_headers_t* original = nullptr;
    rd_kafka_headers_t* headers = rd_kafka_message_headers(m, &original) == 0
                                      ? rd_kafka_headers_copy(original)
                                      : rd_kafka_headers_new(0);
    for (const char* h : {"dlq_reason", "dlq_source", "dlq_consumer", "dlq_attempts", "dlq_at"})
      rd_kafka_header_remove(headers, h);
    Delivery d;
    rd_kafka_resp_err_t err = rd_kafka_producev(
        producer, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_KEY(m->key, m->key_len),
        RD_KAFKA_V_VALUE(m->payload, m->len), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
        RD_KAFKA_V_HEADERS(headers), RD_KAFKA_V_OPAQUE(&d), RD_KAFKA_V_END);
    if (err) {
      rd_kafka_headers_destroy(headers);
      return err;
    }
    while (!d.done) rd_kafka_poll(producer, 100);  // bounded by message.timeout.ms
    return d.err;
  }

  const ReplayOptions& o_;
  std::ostream& out_;
  outbox::Clock* const clock_;
  int64_t sent_ = 0, skipped_ = 0, failed_ = 0;
  outbox::Clock::TimePoint next_at_{};
  outbox::Mutex pace_mu_;  // Pace's wait: nothing signals it, the deadline ends it
  outbox::CondVar pace_cv_{&pace_mu_};
};

}  // namespace

bool ParseOffsetRange(const std::string& s, int64_t* first, int64_t* last) {
  const size_t dash = s.find('-');
  if (dash == std::string::npos) return false;
  const std::string a = s.substr(0, dash), b = s.substr(dash + 1);
  int64_t v = 0;
  *first = 0;
  *last = INT64_MAX;
  if (!a.empty()) {
    if (a != "0" && !ParsePositiveId(a, &v)) return false;
    *first = a == "0" ? 0 : v;
  }
  if (!b.empty()) {
    if (b != "0" && !ParsePositiveId(b, &v)) return false;
    *last = b == "0" ? 0 : v;
  }
  return (!a.empty() || !b.empty()) && *first <= *last;
}

namespace {

// The replay's two clients: a consumer without a group (it assigns
// partitions itself and commits nothing, so a replay can be repeated and
// leaves no trace in any group) and an idempotent producer.
bool NewReplayClients(const ConsumerConfig& config, KafkaPtr* consumer, KafkaPtr* producer,
                      std::string* error) {
  *consumer = NewClient(RD_KAFKA_CONSUMER, config,
                        {{"group.id", "outbox-inbox-consumer-dlq-replay"},
                         {"enable.auto.commit", "false"},
                         {"enable.partition.eof", "true"}},
                        error);
  *producer = NewClient(RD_KAFKA_PRODUCER, config,
                        {{"enable.idempotence", "true"},
                         {"acks", "all"},
                         {"partitioner", "murmur2_random"},
                         {"client.id", "outbox-inbox-consumer-dlq-replay"}},
                        error);
  return *consumer && *producer;
}

// Assigns each partition from --offsets' first offset; returns where each
// ends: its end as of now (or --offsets' last), so that dead letters that
// arrive meanwhile wait for the next replay.
std::map<int32_t, int64_t> AssignRange(rd_kafka_t* consumer, const ReplayOptions& o,
                                       const std::vector<std::pair<int32_t, int64_t>>& parts) {
  std::map<int32_t, int64_t> ends;
  rd_kafka_topic_partition_list_t* l = rd_kafka_topic_partition_list_new(1);
  for (const auto& [p, end] : parts) {
    const int64_t stop = std::min(end, o.last_offset == INT64_MAX ? end : o.last_offset + 1);
    if (stop <= o.first_offset) continue;  // nothing in range
    rd_kafka_topic_partition_list_add(l, o.from.c_str(), p)->offset = o.first_offset;
    ends[p] = stop;
  }
  rd_kafka_assign(consumer, l);
  rd_kafka_topic_partition_list_destroy(l);
  return ends;
}

// Reads every assigned partition to its end and replays what it reads;
// false when the topic stopped answering (30 s without a message) first.
bool ReadToEnds(rd_kafka_t* consumer, rd_kafka_t* producer, const ReplayOptions& o,
                std::map<int32_t, int64_t> ends, Replayer* replayer, outbox::Clock* clock,
                std::ostream& out) {
  auto last_progress = clock->Now();
  while (!ends.empty() && clock->Now() - last_progress < std::chrono::seconds(30)) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(consumer, 500);
    if (!m) continue;
    last_progress = clock->Now();
    auto it = ends.find(m->partition);
    if (m->err && m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      out << "error: reading " << o.from << ": " << rd_kafka_message_errstr(m) << "\n";
    } else if (it != ends.end()) {
      if (!m->err && m->offset < it->second) replayer->One(producer, m);
      if (m->err || m->offset + 1 >= it->second) ends.erase(it);
    }
    rd_kafka_message_destroy(m);
  }
  return ends.empty();
}

}  // namespace

int ReplayDeadLetters(const ConsumerConfig& config, const ReplayOptions& o, std::ostream& out) {
  std::string error;
  KafkaPtr consumer, producer;
  if (!NewReplayClients(config, &consumer, &producer, &error)) {
    out << "error: cannot create the Kafka clients: " << error << "\n";
    return 1;
  }
  std::vector<std::pair<int32_t, int64_t>> parts;
  if (!Partitions(consumer.get(), o.from, &parts, &error)) {
    out << "error: " << error << "\n";
    return 1;
  }
  const outbox::ClockPtr clock = o.clock ? o.clock : outbox::DefaultClock();
  Replayer replayer(o, out, clock.get());
  const bool finished =
      ReadToEnds(consumer.get(), producer.get(), o, AssignRange(consumer.get(), o, parts),
                 &replayer, clock.get(), out);
  if (!finished) out << "error: " << o.from << " stopped answering before its end\n";
  rd_kafka_flush(producer.get(), 30000);
  rd_kafka_consumer_close(consumer.get());
  const int code = replayer.Summary();
  return finished ? code : 1;
}

}  // namespace outbox::inbox
