#include "kafka/kafka_publisher.h"

#include <chrono>
#include <optional>
#include <string_view>
#include <vector>

#include "common/log.h"
#include "kafka/kafka_conf.h"

namespace outbox {

namespace {
// librdkafka ends some messages with a newline ("... outside allowed range
// 0..900000\n"); errors are one line.
std::string Trimmed(const char* s) {
  std::string out(s);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r' || out.back() == ' '))
    out.pop_back();
  return out;
}

// librdkafka's error lines while rd_kafka_new runs on this thread: the
// reason behind its own terse error ("ssl.ca.location failed: ... system
// lib" hides the "No such file or directory" logged just before).
thread_local std::vector<std::string>* tls_creation_log = nullptr;

// A librdkafka log line, "[thrd:BROKER]: BROKER: text" or "[thrd:main]:
// text", split into the broker (empty for its internal threads) and the
// text.
void SplitLogLine(std::string_view line, std::string_view* broker, std::string_view* text) {
  *broker = {};
  *text = line;
  if (line.rfind("[thrd:", 0) != 0) return;
  const size_t end = line.find("]: ");
  if (end == std::string_view::npos) return;
  const std::string_view thread = line.substr(6, end - 6);
  *text = line.substr(end + 3);
  // Broker threads are named after the broker (host:port/id, with a
  // protocol prefix unless plaintext); main, app, background are not.
  if (thread.find(':') == std::string_view::npos) return;
  *broker = thread;
  if (text->rfind(thread, 0) == 0 && text->substr(thread.size()).rfind(": ", 0) == 0)
    *text = text->substr(thread.size() + 2);
}
}  // namespace

int64_t KafkaPublisher::NowMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock_->Now().time_since_epoch())
      .count();
}

struct KafkaPublisher::MsgCtx {
  KafkaPublisher* self;
  SentFn sent;
  // Its entry in self->deadlines_, when it has a queued_until.
  std::optional<std::multiset<Clock::TimePoint>::iterator> deadline;
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

PublishOutcome ClassifyDelivery(rd_kafka_resp_err_t err, rd_kafka_msg_status_t status,
                                bool broker_up, bool producer_fatal) {
  PublishOutcome o = ClassifyKafkaError(err, broker_up);
  if (o.result == PublishResult::kAcked) return o;
  const bool on_wire = status != RD_KAFKA_MSG_STATUS_NOT_PERSISTED;
  if (err == RD_KAFKA_RESP_ERR__PURGE_QUEUE && !producer_fatal) {
    if (!on_wire)
      return {PublishResult::kNotAttempted, FailureReason::kPurged,
              "not sent: taken back from the producer's queue (its claim's budget ended or no "
              "broker was reachable)"};
    // A retry of a request once on the wire, taken back before it went again.
    o.reason = broker_up ? FailureReason::kTimeout : FailureReason::kBrokerDown;
  }
  o.maybe_written = on_wire && o.result == PublishResult::kRetryable;
  return o;
}

rd_kafka_t* KafkaPublisher::NewProducer(const std::map<std::string, std::string>& props,
                                        KafkaPublisher* self, std::string* error) {
  std::string refused;
  rd_kafka_conf_t* conf = NewKafkaConf(props, &refused);
  if (conf == nullptr) {
    *error = Trimmed(refused.c_str());
    return nullptr;
  }
  rd_kafka_conf_set_dr_msg_cb(conf, &KafkaPublisher::OnDeliveryReport);
  rd_kafka_conf_set_error_cb(conf, &KafkaPublisher::OnError);
  rd_kafka_conf_set_log_cb(conf, &KafkaPublisher::OnLog);
  rd_kafka_conf_set_opaque(conf, self);
  std::vector<std::string> logged;
  tls_creation_log = &logged;
  char errstr[512];
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
  tls_creation_log = nullptr;
  if (rk == nullptr) {
    rd_kafka_conf_destroy(conf);  // rd_kafka_new takes it only on success
    *error = "cannot create the Kafka producer: " + Trimmed(errstr);
    std::string why;
    for (const auto& l : logged) why += (why.empty() ? "" : "; ") + l;
    if (!why.empty()) *error += " (librdkafka: " + why + ")";
    if (error->find("ssl") != std::string::npos) *error += KafkaHint(KafkaCause::kTls);
  }
  return rk;
}

std::shared_ptr<KafkaPublisher> KafkaPublisher::Create(
    const std::map<std::string, std::string>& props, std::string* error, ClockPtr clock) {
  std::shared_ptr<KafkaPublisher> self(new KafkaPublisher(std::move(clock)));
  self->props_ = props;
  if (auto it = props.find("bootstrap.servers"); it != props.end())
    self->bootstrap_servers_ = it->second;
  rd_kafka_t* rk = NewProducer(props, self.get(), error);
  if (rk == nullptr) return nullptr;
  {
    WriterMutexLock lock(&self->rk_mu_);
    self->rk_ = rk;
  }
  // Before the threads that log: the prober logs within milliseconds.
  PrepareLoggingForThreads();
  self->poller_ = std::thread([p = self.get()] { p->PollLoop(); });
  self->prober_ = std::thread([p = self.get()] { p->ProbeLoop(); });
  return self;
}

void KafkaPublisher::ReplaceProducer() {
  // Fail what the broken producer holds: every pending delivery report runs
  // (retryable), so every batch settles and its rows are retried.
  rd_kafka_t* const broken = poller_rk();
  rd_kafka_purge(broken, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
  const int64_t deadline = NowMs() + 5000;
  while (rd_kafka_outq_len(broken) > 0 && NowMs() < deadline) rd_kafka_poll(broken, 50);
  std::string error;
  rd_kafka_t* fresh = NewProducer(props_, this, &error);
  if (fresh == nullptr) {
    LogError("kafka: cannot replace the producer after a fatal error",
             {{"bootstrap_servers", bootstrap_servers_}, {"error", error}});
    return;  // tried again on the next poll
  }
  rd_kafka_t* old;
  {
    WriterMutexLock lock(&rk_mu_);
    old = rk_;
    rk_ = fresh;
    fatal_ = false;
  }
  rd_kafka_poll(old, 0);
  rd_kafka_destroy(old);
  ++replaced_;
  LogWarn("kafka: replaced the producer after a fatal error; failed messages are retried",
          {{"bootstrap_servers", bootstrap_servers_}, {"reason", "producer_fatal"}});
}

KafkaPublisher::~KafkaPublisher() {
  Flush(5000);
  {
    MutexLock lock(&stop_mu_);
    stop_ = true;
  }
  stop_cv_.SignalAll();
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
  ReaderMutexLock lock(&rk_mu_);
  if (rk_) rd_kafka_flush(rk_, timeout_ms);
}

bool KafkaPublisher::Probe(int timeout_ms) {
  ReaderMutexLock lock(&rk_mu_);
  const struct rd_kafka_metadata* md = nullptr;
  rd_kafka_resp_err_t err = rd_kafka_metadata(rk_, 0, nullptr, &md, timeout_ms);
  if (md) rd_kafka_metadata_destroy(md);
  if (err == RD_KAFKA_RESP_ERR_NO_ERROR) {
    MutexLock plock(&problem_mu_);
    problem_ = {};
    logged_cause_ = KafkaCause::kNone;
    return true;
  }
  NoteProblem({ClassifyKafkaProblem(err, ""),
               std::string("no broker answered a metadata request: ") + rd_kafka_err2str(err),
               true});
  return false;
}

KafkaProblem KafkaPublisher::Problem() const {
  MutexLock lock(&problem_mu_);
  return problem_;
}

KafkaProblem KafkaPublisher::ProbeTopic(const std::string& topic, int timeout_ms) {
  ReaderMutexLock lock(&rk_mu_);
  rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk_, topic.c_str(), nullptr);
  if (rkt == nullptr)
    return {KafkaCause::kOther, "topic " + topic + ": " + rd_kafka_err2str(rd_kafka_last_error())};
  const struct rd_kafka_metadata* md = nullptr;
  rd_kafka_resp_err_t err = rd_kafka_metadata(rk_, 0, rkt, &md, timeout_ms);
  if (err == RD_KAFKA_RESP_ERR_NO_ERROR && md != nullptr && md->topic_cnt == 1)
    err = md->topics[0].err;
  if (md) rd_kafka_metadata_destroy(md);
  rd_kafka_topic_destroy(rkt);
  if (err == RD_KAFKA_RESP_ERR_NO_ERROR) return {};
  return {ClassifyKafkaProblem(err, ""), "topic " + topic + ": " + rd_kafka_err2str(err)};
}

void KafkaPublisher::NoteProblem(KafkaProblem problem) {
  MutexLock lock(&problem_mu_);
  // "1/1 brokers are down" and a failed probe follow the real cause (a
  // refused connection, SASL or TLS handshake): keep that one.
  if (problem.generic && !problem_.ok()) return;
  problem_ = std::move(problem);
  // While the cluster is up a dropped connection is routine (librdkafka
  // reconnects); once down, each new cause is worth a line.
  if (up_.load() || problem_.cause == logged_cause_) return;
  logged_cause_ = problem_.cause;
  LogWarn("kafka: cannot use the cluster", {{"bootstrap_servers", bootstrap_servers_},
                                            {"reason", "broker_down"},
                                            {"cause", ToLabel(problem_.cause)},
                                            {"error", problem_.error}});
}

void KafkaPublisher::TriggerFatalErrorForTesting(const std::string& reason) {
  ReaderMutexLock lock(&rk_mu_);
  rd_kafka_test_fatal_error(rk_, RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER, reason.c_str());
}

void KafkaPublisher::PollLoop() {
  while (!stop_) {
    rd_kafka_poll(poller_rk(), 50);
    if (fatal_)
      ReplaceProducer();
    else
      PurgeIfDue();
  }
}

const char* DuePurge(bool broker_up, const std::multiset<Clock::TimePoint>& deadlines,
                     Clock::TimePoint purged_through, Clock::TimePoint now) {
  if (!broker_up) return "broker_down";
  auto next = deadlines.upper_bound(purged_through);
  if (next != deadlines.end() && *next <= now) return "budget_ended";
  return nullptr;
}

const char* KafkaPublisher::PurgeCause() {
  const Clock::TimePoint now = clock_->Now();
  MutexLock lock(&deadlines_mu_);
  return DuePurge(up_.load() || !learnt_.load(), deadlines_, purged_through_, now);
}

void KafkaPublisher::PurgeIfDue() {
  const char* cause = PurgeCause();
  if (cause == nullptr) return;
  rd_kafka_t* const rk = poller_rk();
  const int in_producer = rd_kafka_outq_len(rk);
  if (in_producer == 0) return;
  {
    MutexLock lock(&deadlines_mu_);
    purged_through_ = clock_->Now();
  }
  // The queue only: a request on the wire is left to its answer or timeout.
  rd_kafka_purge(rk, RD_KAFKA_PURGE_F_QUEUE);
  const Clock::TimePoint now = clock_->Now();
  if (now - last_purge_log_ < std::chrono::seconds(1)) return;
  last_purge_log_ = now;
  LogWarn("kafka: took back the messages still queued in the producer, not yet sent",
          {{"bootstrap_servers", bootstrap_servers_},
           {"reason", "purged"},
           {"cause", cause},
           {"in_producer", in_producer}});
}

void KafkaPublisher::ForgetDeadline(MsgCtx* ctx) {
  if (!ctx->deadline) return;
  MutexLock lock(&deadlines_mu_);
  deadlines_.erase(*ctx->deadline);
  ctx->deadline.reset();
}

void KafkaPublisher::WaitForStop(int ms) {
  MutexLock lock(&stop_mu_);
  clock_->WaitUntil(&stop_mu_, &stop_cv_, clock_->Now() + std::chrono::milliseconds(ms),
                    [this] { return stop_.load(); });
}

void KafkaPublisher::ProbeLoop() {
  bool first = true;
  while (!stop_) {
    // Probe when the cluster looks down, or when nothing was acknowledged for
    // a while (an idle relay still reports kafka_up truthfully).
    bool idle = NowMs() - last_ack_ms_.load() > 5000;
    int wait_ms = 100;
    if (first || !up_ || idle) {
      bool ok = Probe(2000);
      if (ok != up_.load() || first) {
        if (ok && first) {
          LogInfo("kafka: broker reachable", {{"bootstrap_servers", bootstrap_servers_}});
        } else if (ok) {
          LogInfo("kafka: broker reachable again", {{"bootstrap_servers", bootstrap_servers_}});
        } else {
          // The error callback that names the cause runs on the poll thread,
          // usually within one of its 50 ms polls of the failed probe.
          WaitForStop(200);
          const KafkaProblem p = Problem();
          LogWarn("kafka: no broker reachable", {{"bootstrap_servers", bootstrap_servers_},
                                                 {"reason", "broker_down"},
                                                 {"cause", ToLabel(p.cause)},
                                                 {"error", p.error}});
        }
      }
      first = false;
      up_ = ok;
      learnt_ = true;
      wait_ms = ok ? 5000 : 1000;
    }
    WaitForStop(wait_ms);
  }
}

void KafkaPublisher::OnError(rd_kafka_t* rk, int err, const char* reason, void* opaque) {
  auto* self = static_cast<KafkaPublisher*>(opaque);
  auto code = static_cast<rd_kafka_resp_err_t>(err);
  if (code == RD_KAFKA_RESP_ERR__FATAL) {
    char buf[512];
    rd_kafka_resp_err_t orig = rd_kafka_fatal_error(rk, buf, sizeof(buf));
    LogError("kafka: fatal producer error", {{"bootstrap_servers", self->bootstrap_servers_},
                                             {"reason", "producer_fatal"},
                                             {"code", rd_kafka_err2name(orig)},
                                             {"error", buf}});
    self->fatal_ = true;
    return;
  }
  const std::string text = Trimmed(reason);
  if (code == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN) self->learnt_ = true;
  if (code == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN && self->up_.exchange(false))
    LogWarn("kafka: all brokers down", {{"bootstrap_servers", self->bootstrap_servers_},
                                        {"reason", "broker_down"},
                                        {"error", text}});
  LogDebug("kafka: error reported", {{"bootstrap_servers", self->bootstrap_servers_},
                                     {"code", rd_kafka_err2name(code)},
                                     {"error", text}});
  self->NoteProblem(
      {ClassifyKafkaProblem(code, text), text, code == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN});
}

void KafkaPublisher::OnLog(const rd_kafka_t*, int level, const char* fac, const char* buf) {
  std::string_view broker, text;
  SplitLogLine(buf, &broker, &text);
  if (tls_creation_log != nullptr && level <= 3) tls_creation_log->emplace_back(text);
  if (broker.empty())  // one of its internal threads (main, app, background)
    LogAtSyslogLevel(level, "librdkafka", {{"facility", fac}, {"error", text}});
  else
    LogAtSyslogLevel(level, "librdkafka", {{"facility", fac}, {"broker", broker}, {"error", text}});
}

void KafkaPublisher::Send(const Message& m, SentFn sent) {
  rd_kafka_headers_t* hdrs = rd_kafka_headers_new(m.headers.size());
  for (const auto& [k, v] : m.headers)
    rd_kafka_header_add(hdrs, k.data(), static_cast<ssize_t>(k.size()), v.data(),
                        static_cast<ssize_t>(v.size()));
  auto* ctx = new MsgCtx{this, std::move(sent), std::nullopt};
  if (m.queued_until != Clock::TimePoint::max()) {
    // Before the produce: its delivery report may come at once.
    MutexLock lock(&deadlines_mu_);
    ctx->deadline = deadlines_.insert(m.queued_until);
  }
  rd_kafka_resp_err_t err;
  {
    ReaderMutexLock lock(&rk_mu_);
    err = rd_kafka_producev(rk_, RD_KAFKA_V_TOPIC(m.topic.c_str()),
                            RD_KAFKA_V_KEY(const_cast<char*>(m.key.data()), m.key.size()),
                            RD_KAFKA_V_VALUE(const_cast<char*>(m.value.data()), m.value.size()),
                            RD_KAFKA_V_HEADERS(hdrs), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                            RD_KAFKA_V_OPAQUE(ctx), RD_KAFKA_V_END);
  }
  // librdkafka holds ctx until the delivery report, which frees it.
  if (err == RD_KAFKA_RESP_ERR_NO_ERROR) return;  // NOLINT(clang-analyzer-cplusplus.NewDeleteLeaks)
  rd_kafka_headers_destroy(hdrs);
  std::unique_ptr<MsgCtx> owned(ctx);
  ForgetDeadline(ctx);
  PublishOutcome o = ClassifyKafkaError(err, up_.load());
  if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
    // The producer's own queue (queue.buffering.max.messages / .kbytes) is
    // full: the message never left this process, so it is no failed
    // attempt; counted as one, a burst of large payloads would send rows DEAD.
    o.result = PublishResult::kNotAttempted;
    o.reason = FailureReason::kQueueFull;
  }
  owned->sent(std::move(o));
}

void KafkaPublisher::OnDeliveryReport(rd_kafka_t*, const rd_kafka_message_t* msg, void*) {
  std::unique_ptr<MsgCtx> ctx(static_cast<MsgCtx*>(msg->_private));
  KafkaPublisher* self = ctx->self;
  self->ForgetDeadline(ctx.get());
  PublishOutcome o = ClassifyDelivery(msg->err, rd_kafka_message_status(msg), self->up_.load(),
                                      self->fatal_.load());
  if (o.result == PublishResult::kAcked) {
    self->last_ack_ms_ = self->NowMs();
    if (!self->up_.exchange(true))
      LogInfo("kafka: broker reachable again", {{"bootstrap_servers", self->bootstrap_servers_}});
  }
  ctx->sent(std::move(o));
}

std::string LibrdkafkaVersion() { return rd_kafka_version_str(); }

}  // namespace outbox
