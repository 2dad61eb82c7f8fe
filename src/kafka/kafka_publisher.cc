#include "kafka/kafka_publisher.h"

#include <spdlog/spdlog.h>

#include <chrono>

namespace outbox {

namespace {
int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// librdkafka ends some messages with a newline ("... outside allowed range
// 0..900000\n"); errors are one line.
std::string Trimmed(const char* s) {
  std::string out(s);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r' || out.back() == ' '))
    out.pop_back();
  return out;
}
}  // namespace

struct KafkaPublisher::MsgCtx {
  KafkaPublisher* self;
  SentFn sent;
};

PublishOutcome ClassifyKafkaError(rd_kafka_resp_err_t err, bool broker_up) {
  const std::string error = std::string(rd_kafka_err2name(err)) + ": " + rd_kafka_err2str(err);
  auto permanent = [&](FailureReason reason) {
    return PublishOutcome{PublishResult::kPermanent, reason, error};
  };
  auto retryable = [&](FailureReason reason) {
    return PublishOutcome{PublishResult::kRetryable, reason, error};
  };
  switch (err) {
    case RD_KAFKA_RESP_ERR_NO_ERROR:
      return PublishOutcome{PublishResult::kAcked, FailureReason::kNone, ""};
    case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
    case RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE:
      return permanent(FailureReason::kMessageTooLarge);
    case RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION:
    case RD_KAFKA_RESP_ERR__INVALID_ARG:
      return permanent(FailureReason::kInvalidTopic);
    case RD_KAFKA_RESP_ERR_INVALID_RECORD:
      return permanent(FailureReason::kBrokerError);
    case RD_KAFKA_RESP_ERR__MSG_TIMED_OUT:
    case RD_KAFKA_RESP_ERR__TIMED_OUT:
      return retryable(broker_up ? FailureReason::kTimeout : FailureReason::kBrokerDown);
    case RD_KAFKA_RESP_ERR__FATAL:
    case RD_KAFKA_RESP_ERR__PURGE_QUEUE:
    case RD_KAFKA_RESP_ERR__PURGE_INFLIGHT:
      // The producer hit a fatal error and is being replaced.
      return retryable(FailureReason::kProducerFatal);
    case RD_KAFKA_RESP_ERR__TRANSPORT:
    case RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN:
      return retryable(FailureReason::kBrokerDown);
    default:
      return retryable(FailureReason::kBrokerError);
  }
}

rd_kafka_t* KafkaPublisher::NewProducer(const std::map<std::string, std::string>& props,
                                        KafkaPublisher* self, std::string* error) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  char errstr[512];
  for (const auto& [k, v] : props) {
    if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK) {
      *error = "kafka property " + k + ": " + Trimmed(errstr);
      rd_kafka_conf_destroy(conf);
      return nullptr;
    }
  }
  rd_kafka_conf_set_dr_msg_cb(conf, &KafkaPublisher::OnDeliveryReport);
  rd_kafka_conf_set_error_cb(conf, &KafkaPublisher::OnError);
  rd_kafka_conf_set_log_cb(conf, &KafkaPublisher::OnLog);
  rd_kafka_conf_set_opaque(conf, self);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
  if (rk == nullptr) *error = "cannot create the Kafka producer: " + Trimmed(errstr);
  return rk;  // on failure rd_kafka_new destroyed conf
}

std::shared_ptr<KafkaPublisher> KafkaPublisher::Create(
    const std::map<std::string, std::string>& props, std::string* error) {
  std::shared_ptr<KafkaPublisher> self(new KafkaPublisher());
  self->props_ = props;
  self->rk_ = NewProducer(props, self.get(), error);
  if (self->rk_ == nullptr) return nullptr;
  // spdlog's registry is built on first use. Build it here, before the
  // threads that log: the prober logs within milliseconds, and a first use
  // racing the caller's is invisible to ThreadSanitizer's view of
  // libspdlog's (uninstrumented) static initialisation.
  (void)spdlog::default_logger_raw();
  self->poller_ = std::thread([p = self.get()] { p->PollLoop(); });
  self->prober_ = std::thread([p = self.get()] { p->ProbeLoop(); });
  return self;
}

void KafkaPublisher::ReplaceProducer() {
  // Fail what the broken producer holds: every pending delivery report runs
  // (retryable), so every batch settles and its rows are retried.
  rd_kafka_purge(rk_, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
  const int64_t deadline = NowMs() + 5000;
  while (rd_kafka_outq_len(rk_) > 0 && NowMs() < deadline) rd_kafka_poll(rk_, 50);
  std::string error;
  rd_kafka_t* fresh = NewProducer(props_, this, &error);
  if (fresh == nullptr) {
    spdlog::error("kafka: cannot replace the producer after a fatal error: {}", error);
    return;  // tried again on the next poll
  }
  rd_kafka_t* old;
  {
    std::unique_lock<std::shared_mutex> lock(rk_mu_);
    old = rk_;
    rk_ = fresh;
    fatal_ = false;
  }
  rd_kafka_poll(old, 0);
  rd_kafka_destroy(old);
  ++replaced_;
  spdlog::warn("kafka: replaced the producer after a fatal error; failed messages are retried");
}

KafkaPublisher::~KafkaPublisher() {
  Flush(5000);
  {
    std::lock_guard<std::mutex> lock(stop_mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (prober_.joinable()) prober_.join();
  if (poller_.joinable()) poller_.join();
  if (rk_) {
    // Anything still queued gets a delivery report (purged) so no DoneFn is lost.
    rd_kafka_purge(rk_, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    rd_kafka_poll(rk_, 0);
    rd_kafka_destroy(rk_);
  }
}

void KafkaPublisher::Flush(int timeout_ms) {
  std::shared_lock<std::shared_mutex> lock(rk_mu_);
  if (rk_) rd_kafka_flush(rk_, timeout_ms);
}

bool KafkaPublisher::Probe(int timeout_ms) {
  std::shared_lock<std::shared_mutex> lock(rk_mu_);
  const struct rd_kafka_metadata* md = nullptr;
  rd_kafka_resp_err_t err = rd_kafka_metadata(rk_, 0, nullptr, &md, timeout_ms);
  if (md) rd_kafka_metadata_destroy(md);
  return err == RD_KAFKA_RESP_ERR_NO_ERROR;
}

void KafkaPublisher::TriggerFatalErrorForTesting(const std::string& reason) {
  std::shared_lock<std::shared_mutex> lock(rk_mu_);
  rd_kafka_test_fatal_error(rk_, RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER, reason.c_str());
}

void KafkaPublisher::PollLoop() {
  while (!stop_) {
    rd_kafka_poll(rk_, 50);  // the poll thread is the only writer of rk_
    if (fatal_) ReplaceProducer();
  }
}

void KafkaPublisher::ProbeLoop() {
  bool first = true;
  std::unique_lock<std::mutex> lock(stop_mu_);
  while (!stop_) {
    // Probe when the cluster looks down, or when nothing was acknowledged for
    // a while (an idle relay still reports kafka_up truthfully).
    bool idle = NowMs() - last_ack_ms_.load() > 5000;
    int wait_ms = 100;
    if (first || !up_ || idle) {
      lock.unlock();
      bool ok = Probe(2000);
      lock.lock();
      if (ok != up_.load() || first) {
        if (ok)
          spdlog::info(first ? "kafka: broker reachable" : "kafka: broker reachable again");
        else
          spdlog::warn("kafka: no broker reachable");
      }
      first = false;
      up_ = ok;
      wait_ms = ok ? 5000 : 1000;
    }
    stop_cv_.wait_for(lock, std::chrono::milliseconds(wait_ms), [this] { return stop_.load(); });
  }
}

void KafkaPublisher::OnError(rd_kafka_t* rk, int err, const char* reason, void* opaque) {
  auto* self = static_cast<KafkaPublisher*>(opaque);
  auto code = static_cast<rd_kafka_resp_err_t>(err);
  if (code == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN) {
    if (self->up_.exchange(false)) spdlog::warn("kafka: all brokers down: {}", reason);
    return;
  }
  if (code == RD_KAFKA_RESP_ERR__FATAL) {
    char buf[512];
    rd_kafka_resp_err_t orig = rd_kafka_fatal_error(rk, buf, sizeof(buf));
    spdlog::error("kafka: fatal producer error {}: {}", rd_kafka_err2name(orig), buf);
    self->fatal_ = true;
    return;
  }
  spdlog::debug("kafka: {}: {}", rd_kafka_err2name(code), reason);
}

void KafkaPublisher::OnLog(const rd_kafka_t*, int level, const char* fac, const char* buf) {
  if (level <= 3)
    spdlog::error("librdkafka {}: {}", fac, buf);
  else if (level <= 4)
    spdlog::warn("librdkafka {}: {}", fac, buf);
  else
    spdlog::debug("librdkafka {}: {}", fac, buf);
}

void KafkaPublisher::Send(const Message& m, SentFn sent) {
  rd_kafka_headers_t* hdrs = rd_kafka_headers_new(m.headers.size());
  for (const auto& [k, v] : m.headers)
    rd_kafka_header_add(hdrs, k.data(), static_cast<ssize_t>(k.size()), v.data(),
                        static_cast<ssize_t>(v.size()));
  auto* ctx = new MsgCtx{this, std::move(sent)};
  rd_kafka_resp_err_t err;
  {
    std::shared_lock<std::shared_mutex> lock(rk_mu_);
    err = rd_kafka_producev(rk_, RD_KAFKA_V_TOPIC(m.topic.c_str()),
                            RD_KAFKA_V_KEY(const_cast<char*>(m.key.data()), m.key.size()),
                            RD_KAFKA_V_VALUE(const_cast<char*>(m.value.data()), m.value.size()),
                            RD_KAFKA_V_HEADERS(hdrs), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                            RD_KAFKA_V_OPAQUE(ctx), RD_KAFKA_V_END);
  }
  if (err == RD_KAFKA_RESP_ERR_NO_ERROR) return;  // the delivery report calls `sent`
  rd_kafka_headers_destroy(hdrs);
  std::unique_ptr<MsgCtx> owned(ctx);
  PublishOutcome o = ClassifyKafkaError(err, up_.load());
  if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
    // The producer's own queue (queue.buffering.max.messages / .kbytes) is
    // full: the message never left this process, so it is no failed
    // attempt. Counting it sent rows DEAD under a burst of large payloads.
    o.result = PublishResult::kNotAttempted;
    o.reason = FailureReason::kQueueFull;
  }
  owned->sent(std::move(o));
}

void KafkaPublisher::OnDeliveryReport(rd_kafka_t*, const rd_kafka_message_t* msg, void*) {
  std::unique_ptr<MsgCtx> ctx(static_cast<MsgCtx*>(msg->_private));
  KafkaPublisher* self = ctx->self;
  PublishOutcome o = ClassifyKafkaError(msg->err, self->up_.load());
  if (o.result == PublishResult::kAcked) {
    self->last_ack_ms_ = NowMs();
    if (!self->up_.exchange(true)) spdlog::info("kafka: broker reachable again");
  }
  ctx->sent(std::move(o));
}

std::string LibrdkafkaVersion() { return rd_kafka_version_str(); }

}  // namespace outbox
