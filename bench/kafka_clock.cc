#include "kafka_clock.h"

#include <cstdlib>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include "util.h"

namespace outbox {
namespace bench {

int64_t JsonInt(const std::string& text, const std::string& key) {
  std::string pat = "\"" + key + "\"";
  size_t p = text.find(pat);
  if (p == std::string::npos) return -1;
  p = text.find(':', p + pat.size());
  if (p == std::string::npos) return -1;
  ++p;
  while (p < text.size() && text[p] == ' ') ++p;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str() + p, &end, 10);
  if (end == text.c_str() + p) return -1;
  return v;
}

namespace {
// A client config for `bootstrap` with librdkafka's log quiet below errors
// and `settings` on top. Throws std::runtime_error on a rejected setting.
rd_kafka_conf_t* NewConf(const std::string& bootstrap,
                         std::initializer_list<std::pair<const char*, const char*>> settings) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  std::vector<std::pair<const char*, std::string>> all = {{"bootstrap.servers", bootstrap},
                                                          {"log_level", "3"}};
  for (const auto& [k, v] : settings) all.emplace_back(k, v);
  for (const auto& [k, v] : all) {
    char err[512];
    if (rd_kafka_conf_set(conf, k, v.c_str(), err, sizeof(err)) != RD_KAFKA_CONF_OK) {
      rd_kafka_conf_destroy(conf);
      throw std::runtime_error(std::string("kafka ") + k + ": " + err);
    }
  }
  return conf;
}
}  // namespace

void CreateTopic(const std::string& bootstrap, const std::string& topic) {
  // One message creates it (the broker's auto-creation, as for the relay's
  // first message; the mock's default is 4 partitions, kPartitions). The
  // consumers start at the end, after it; it has no ts_us either.
  char err[512];
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, NewConf(bootstrap, {}), err, sizeof(err));
  if (!rk) throw std::runtime_error(std::string("kafka producer: ") + err);
  rd_kafka_resp_err_t e = rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic.c_str()),
                                            RD_KAFKA_V_VALUE(nullptr, 0), RD_KAFKA_V_END);
  if (e == RD_KAFKA_RESP_ERR_NO_ERROR) e = rd_kafka_flush(rk, 10000);
  rd_kafka_destroy(rk);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
    throw std::runtime_error("kafka: creating " + topic + ": " + rd_kafka_err2str(e));
}

TimingConsumer::TimingConsumer(const std::string& bootstrap, const std::string& topic,
                               int partitions) {
  // The mock broker answers a fetch that finds no data only after the whole
  // fetch.wait.max.ms, even if data arrives meanwhile: keep it short so the
  // consumer's delay stays in the low milliseconds.
  rd_kafka_conf_t* conf = NewConf(bootstrap, {{"group.id", "outbox-bench"},
                                              {"enable.auto.commit", "false"},
                                              {"fetch.wait.max.ms", "2"},
                                              {"fetch.error.backoff.ms", "5"}});
  char err[512];
  rk_ = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
  if (!rk_) throw std::runtime_error(std::string("kafka consumer: ") + err);
  rd_kafka_poll_set_consumer(rk_);
  rd_kafka_topic_partition_list_t* parts = rd_kafka_topic_partition_list_new(partitions);
  for (int p = 0; p < partitions; ++p) {
    int64_t lo = 0, hi = 0;
    rd_kafka_resp_err_t e =
        rd_kafka_query_watermark_offsets(rk_, topic.c_str(), p, &lo, &hi, 10000);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
      rd_kafka_topic_partition_list_destroy(parts);
      rd_kafka_destroy(rk_);
      throw std::runtime_error("kafka watermarks of " + topic + ": " + rd_kafka_err2str(e));
    }
    rd_kafka_topic_partition_list_add(parts, topic.c_str(), p)->offset = hi;
  }
  rd_kafka_assign(rk_, parts);
  rd_kafka_topic_partition_list_destroy(parts);
  thread_ = std::thread([this] { Loop(); });
}

TimingConsumer::~TimingConsumer() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  rd_kafka_assign(rk_, nullptr);
  rd_kafka_consumer_close(rk_);
  rd_kafka_destroy(rk_);
}

void TimingConsumer::Loop() {
  while (!stop_) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk_, 50);
    if (!m) continue;
    int64_t now = WallMicros();
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      Received r;
      r.recv_us = now;
      rd_kafka_timestamp_type_t type;
      r.create_ms = rd_kafka_message_timestamp(m, &type);
      std::string value(static_cast<const char*>(m->payload), m->len);
      r.ts_us = std::max<int64_t>(0, JsonInt(value, "ts_us"));
      r.seq = JsonInt(value, "probe");
      {
        std::lock_guard<std::mutex> lock(mu_);
        got_.push_back(r);
      }
      ++count_;
    }
    rd_kafka_message_destroy(m);
  }
}

std::vector<Received> TimingConsumer::Take() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Received> out;
  out.swap(got_);
  return out;
}

namespace {
struct ProbeState {
  std::vector<std::atomic<int64_t>> ack_us;
  explicit ProbeState(int n) : ack_us(static_cast<size_t>(n)) {}
};

void OnProbeDelivered(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
  auto* st = static_cast<ProbeState*>(opaque);
  auto i = reinterpret_cast<intptr_t>(m->_private);
  if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR && i >= 0 && static_cast<size_t>(i) < st->ack_us.size())
    st->ack_us[static_cast<size_t>(i)] = WallMicros();
}
}  // namespace

ProbeResult ProbeConsumerDelay(const std::string& bootstrap, const std::string& topic,
                               int partitions, int n, double rate) {
  ProbeState st(n);
  std::vector<int64_t> create_us(static_cast<size_t>(n), 0);
  TimingConsumer consumer(bootstrap, topic, partitions);
  rd_kafka_conf_t* conf =
      NewConf(bootstrap, {{"enable.idempotence", "true"}, {"acks", "all"}, {"linger.ms", "1"}});
  rd_kafka_conf_set_dr_msg_cb(conf, &OnProbeDelivered);
  rd_kafka_conf_set_opaque(conf, &st);
  char err[512];
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
  if (!rk) throw std::runtime_error(std::string("kafka producer: ") + err);
  std::atomic<bool> stop{false};
  std::thread poller([&] {
    while (!stop) rd_kafka_poll(rk, 10);
  });
  // Warm up: producer id, metadata, connections; these probes are not timed.
  for (int i = 0; i < 20; ++i) {
    std::string v = "{\"warmup\":" + std::to_string(i) + "}";
    rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic.c_str()),
                      RD_KAFKA_V_VALUE(const_cast<char*>(v.data()), v.size()),
                      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                      RD_KAFKA_V_OPAQUE(reinterpret_cast<void*>(static_cast<intptr_t>(-1))),
                      RD_KAFKA_V_END);
  }
  rd_kafka_flush(rk, 10000);
  SleepSeconds(0.5);  // let the consumer's first fetches go out
  double t0 = MonoSeconds();
  for (int i = 0; i < n; ++i) {
    double due = t0 + i / rate;
    SleepSeconds(due - MonoSeconds());
    int64_t now = WallMicros();
    create_us[static_cast<size_t>(i)] = now;
    std::string v = "{\"ts_us\":" + std::to_string(now) + ",\"probe\":" + std::to_string(i) + "}";
    std::string key = std::to_string(i);
    rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic.c_str()),
                      RD_KAFKA_V_KEY(const_cast<char*>(key.data()), key.size()),
                      RD_KAFKA_V_VALUE(const_cast<char*>(v.data()), v.size()),
                      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                      RD_KAFKA_V_OPAQUE(reinterpret_cast<void*>(static_cast<intptr_t>(i))),
                      RD_KAFKA_V_END);
  }
  rd_kafka_flush(rk, 10000);
  double deadline = MonoSeconds() + 10;
  while (consumer.count() < static_cast<size_t>(n) && MonoSeconds() < deadline) SleepSeconds(0.01);
  stop = true;
  poller.join();
  rd_kafka_destroy(rk);
  ProbeResult out;
  for (const Received& r : consumer.Take()) {
    if (r.seq < 0 || r.seq >= n) continue;
    int64_t ack = st.ack_us[static_cast<size_t>(r.seq)].load();
    if (ack == 0) continue;
    out.ack_ms.push_back((ack - create_us[static_cast<size_t>(r.seq)]) / 1000.0);
    out.recv_late_ms.push_back((r.recv_us - ack) / 1000.0);
  }
  return out;
}

}  // namespace bench
}  // namespace outbox
