#include "inbox/dead_letter.h"

#include <chrono>
#include <cstring>
#include <ctime>
#include <utility>

#include "inbox/inbox_log.h"

namespace outbox::inbox {

void KafkaLogLine(const rd_kafka_t* rk, int level, const char* fac, const char* buf) {
  // The dead-letter producer gets kafka.properties too (security settings
  // apply to both clients); its warnings about consumer-only properties are
  // noise.
  const bool producer = std::strstr(rd_kafka_name(rk), "producer") != nullptr;
  if (producer && std::strcmp(fac, "CONFWARN") == 0) level = 7;
  // FAIL and ERROR lines repeat what the error callbacks report (once per
  // kind, see InboxConsumer::OnKafkaError). A failed offset commit costs no
  // more than a replay the inbox skips; librdkafka retries it every
  // auto.commit.interval.ms during an outage.
  if (std::strcmp(fac, "FAIL") == 0 || std::strcmp(fac, "ERROR") == 0 ||
      std::strcmp(fac, "COMMITFAIL") == 0)
    level = 7;
  // Its notices and info (5, 6) at debug, as the relay logs them
  // (docs/LOGS.md): reconnects and metadata changes are not news.
  const std::string line = fmt::format("kafka {} {}: {}", rd_kafka_name(rk), fac, buf);
  if (level <= 3)
    log::Error("{}", line);
  else if (level == 4)
    log::Warn("{}", line);
  else
    log::Debug("{}", line);
}

bool IsPermanentRefusal(rd_kafka_resp_err_t err) {
  switch (err) {
    case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:  // the producer's message.max.bytes, or the broker's
    case RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE:
    case RD_KAFKA_RESP_ERR_INVALID_RECORD:
    case RD_KAFKA_RESP_ERR_INVALID_MSG:
    case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:  // an ACL denies the write
    case RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION:  // an invalid topic name
    case RD_KAFKA_RESP_ERR_POLICY_VIOLATION:
    case RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART:  // no such topic, and none is created
    case RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC:
    case RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION:
    case RD_KAFKA_RESP_ERR__INVALID_ARG:
      return true;
    default:
      return false;
  }
}

std::string Rfc3339(double unix_seconds) {
  const auto ms_total = static_cast<int64_t>(unix_seconds * 1000);
  const std::time_t t = static_cast<std::time_t>(ms_total / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  char out[48];
  std::snprintf(out, sizeof(out), "%s.%03dZ", buf, static_cast<int>(ms_total % 1000));
  return out;
}

namespace {

// The consumer reports a broker outage already; the idle producer's view of
// it is detail.
void OnProducerError(rd_kafka_t*, int, const char* reason, void*) {
  log::Debug("kafka (dead-letter producer): {}", reason);
}

bool Set(rd_kafka_conf_t* conf, const std::string& key, const std::string& value,
         std::string* error) {
  char err[512];
  if (rd_kafka_conf_set(conf, key.c_str(), value.c_str(), err, sizeof(err)) == RD_KAFKA_CONF_OK)
    return true;
  *error = "kafka property " + key + ": " + err;
  return false;
}

}  // namespace

DeadLetterProducer::DeadLetterProducer(const ConsumerConfig& config, outbox::ClockPtr clock,
                                       bool logs_on_poll)
    : config_(config), clock_(std::move(clock)), logs_on_poll_(logs_on_poll) {}

DeadLetterProducer::~DeadLetterProducer() {
  if (!rk_) return;
  rd_kafka_flush(rk_, 10000);
  rd_kafka_destroy(rk_);
}

bool DeadLetterProducer::Start(std::string* error) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set_dr_msg_cb(conf, &DeadLetterProducer::OnDelivery);
  rd_kafka_conf_set_opaque(conf, this);
  rd_kafka_conf_set_log_cb(conf, KafkaLogLine);
  rd_kafka_conf_set_error_cb(conf, OnProducerError);
  // Defaults first, then the user's properties: a dead letter must not be
  // lost or doubled by the producer's own retries (idempotence, acks=all),
  // and a broker that does not take it within 30 s is a broker failure
  // reported quickly rather than after librdkafka's default of 5 minutes.
  const std::pair<const char*, std::string> defaults[] = {
      {"bootstrap.servers", config_.kafka.bootstrap_servers},
      {"client.id", "outbox-inbox-consumer-dlq"},
      {"enable.idempotence", "true"},
      {"acks", "all"},
      {"message.timeout.ms", "30000"},
      // A dead-letter topic that does not exist is reported as such
      // (_UNKNOWN_TOPIC: refused for good, the message is parked) after
      // 10 s, before message.timeout.ms would call it a timeout (a stall,
      // retried for ever).
      {"topic.metadata.propagation.max.ms", "10000"},
  };
  bool ok = true;
  for (const auto& [k, v] : defaults) ok = ok && Set(conf, k, v, error);
  for (const auto& [k, v] : config_.kafka.properties) ok = ok && Set(conf, k, v, error);
  if (logs_on_poll_) ok = ok && Set(conf, "log.queue", "true", error);
  char err[512];
  if (ok) rk_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
  if (!rk_) {
    if (ok) *error = std::string("cannot create the dead-letter producer: ") + err;
    rd_kafka_conf_destroy(conf);  // rd_kafka_new took it only on success
    return false;
  }
  if (logs_on_poll_) rd_kafka_set_log_queue(rk_, nullptr);  // served by Poll
  return true;
}

void DeadLetterProducer::OnDelivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
  auto* self = static_cast<DeadLetterProducer*>(opaque);
  Delivery d;
  d.ticket = *static_cast<const uint64_t*>(m->_private);
  d.result = !m->err                      ? Result::kSent
             : IsPermanentRefusal(m->err) ? Result::kRefused
                                          : Result::kFailed;
  if (m->err)
    d.error = "dead-letter topic " + std::string(rd_kafka_topic_name(m->rkt)) +
              " did not take the message: " + rd_kafka_err2str(m->err);
  if (self->outstanding_.erase(d.ticket)) self->delivered_.push_back(std::move(d));
}

std::vector<DeadLetterProducer::Delivery> DeadLetterProducer::Poll(int timeout_ms) {
  if (rk_) rd_kafka_poll(rk_, timeout_ms);
  return std::exchange(delivered_, {});
}

bool DeadLetterProducer::Restart(std::string* error) {
  if (rk_) {
    // Their reports say _PURGE_*: failed, sent again after the stall.
    rd_kafka_purge(rk_, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    rd_kafka_poll(rk_, 0);
    rd_kafka_destroy(rk_);
    rk_ = nullptr;
  }
  for (uint64_t ticket : outstanding_)
    delivered_.push_back({ticket, Result::kFailed, "the dead-letter producer was restarted"});
  outstanding_.clear();
  return Start(error);
}

namespace {

// The message's headers with the dlq_* headers of this dead letter. A
// message dead-lettered again (replayed, failed again) carries only the
// latest dlq_* headers.
rd_kafka_headers_t* DeadLetterHeaders(const rd_kafka_message_t* m, const std::string& reason,
                                      int attempts, const std::string& consumer,
                                      const std::string& at) {
  rd_kafka_headers_t* headers = nullptr;
  rd_kafka_headers_t* original = nullptr;
  headers = rd_kafka_message_headers(m, &original) == RD_KAFKA_RESP_ERR_NO_ERROR
                ? rd_kafka_headers_copy(original)
                : rd_kafka_headers_new(6);
  for (const char* h : {"dlq_reason", "dlq_source", "dlq_consumer", "dlq_attempts", "dlq_at"})
    rd_kafka_header_remove(headers, h);
  const std::string source = std::string(rd_kafka_topic_name(m->rkt)) + "/" +
                             std::to_string(m->partition) + "/" + std::to_string(m->offset);
  const std::string n = std::to_string(attempts);
  for (const auto& [name, value] :
       {std::pair<const char*, const std::string*>{"dlq_reason", &reason},
        {"dlq_source", &source},
        {"dlq_consumer", &consumer},
        {"dlq_attempts", &n},
        {"dlq_at", &at}})
    rd_kafka_header_add(headers, name, -1, value->data(), static_cast<ssize_t>(value->size()));
  return headers;
}

}  // namespace

void DeadLetterProducer::Send(const rd_kafka_message_t* m, const std::string& topic,
                              const std::string& reason, int attempts, uint64_t ticket) {
  std::string error;
  if ((!rk_ || rd_kafka_fatal_error(rk_, nullptr, 0)) && !Restart(&error)) {
    delivered_.push_back({ticket, Result::kFailed, error});
    return;
  }
  rd_kafka_headers_t* headers =
      DeadLetterHeaders(m, reason, attempts, config_.consumer, Rfc3339(clock_->UnixNow()));
  // The message's opaque is its ticket's element in outstanding_ (a set's
  // elements stay where they are until erased).
  const auto sent = outstanding_.insert(ticket).first;
  rd_kafka_resp_err_t err =
      rd_kafka_producev(rk_, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_KEY(m->key, m->key_len),
                        RD_KAFKA_V_VALUE(m->payload, m->len),
                        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_HEADERS(headers),
                        RD_KAFKA_V_OPAQUE(const_cast<uint64_t*>(&*sent)), RD_KAFKA_V_END);
  if (err) {
    outstanding_.erase(sent);
    rd_kafka_headers_destroy(headers);  // owned by the message only when producev succeeds
    delivered_.push_back({ticket, IsPermanentRefusal(err) ? Result::kRefused : Result::kFailed,
                          "cannot produce to " + topic + ": " + rd_kafka_err2str(err)});
  }
}

}  // namespace outbox::inbox
