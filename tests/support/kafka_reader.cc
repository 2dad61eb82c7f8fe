#include "support/kafka_reader.h"

#include <librdkafka/rdkafka.h>

#include <stdexcept>

#include "kafka_headers.h"

namespace outbox::testing {

namespace {

// A consumer that never joins its group (no subscribe): it assigns
// partitions itself and commits nothing.
rd_kafka_t* NewConsumer(const std::string& bootstrap, const std::string& group) {
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap.c_str(), err, sizeof(err));
  rd_kafka_conf_set(conf, "group.id", group.c_str(), err, sizeof(err));
  rd_kafka_conf_set(conf, "enable.auto.commit", "false", err, sizeof(err));
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
  if (!rk) throw std::runtime_error(err);
  return rk;
}

// The partition count of `topic`, 0 when it does not exist or the metadata
// request fails.
int PartitionCount(rd_kafka_t* rk, const std::string& topic) {
  const struct rd_kafka_metadata* md = nullptr;
  rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, topic.c_str(), nullptr);
  int partitions = 0;
  if (rd_kafka_metadata(rk, 0, rkt, &md, 5000) == RD_KAFKA_RESP_ERR_NO_ERROR && md &&
      md->topic_cnt == 1)
    partitions = md->topics[0].partition_cnt;
  if (md) rd_kafka_metadata_destroy(md);
  rd_kafka_topic_destroy(rkt);
  return partitions;
}

ConsumedMessage ToConsumed(const rd_kafka_message_t* m) {
  ConsumedMessage c;
  c.topic = rd_kafka_topic_name(m->rkt);
  c.partition = m->partition;
  c.offset = m->offset;
  c.key.assign(static_cast<const char*>(m->key), m->key_len);
  c.value.assign(static_cast<const char*>(m->payload), m->len);
  for (auto& [name, value] : tools::MessageHeaders(m)) c.headers[name] = value;
  c.timestamp_ms = rd_kafka_message_timestamp(m, nullptr);
  return c;
}

// Appends the messages of `topic` up to each partition's high watermark
// (read when the call starts) to `out`; gives up after 10 s without one.
void ReadTopic(rd_kafka_t* rk, const std::string& topic, std::vector<ConsumedMessage>* out) {
  const int partitions = PartitionCount(rk, topic);
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(partitions);
  std::map<int, int64_t> high;  // the partitions that have messages
  for (int p = 0; p < partitions; ++p) {
    int64_t lo = 0, hi = 0;
    rd_kafka_query_watermark_offsets(rk, topic.c_str(), p, &lo, &hi, 5000);
    if (hi <= lo) continue;
    high[p] = hi;
    rd_kafka_topic_partition_list_add(list, topic.c_str(), p)->offset = lo;
  }
  if (list->cnt > 0) rd_kafka_assign(rk, list);
  rd_kafka_topic_partition_list_destroy(list);
  for (int idle = 0; !high.empty() && idle < 100;) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 100);
    if (!m) {
      ++idle;
      continue;
    }
    idle = 0;
    if (!m->err) {
      out->push_back(ToConsumed(m));
      auto h = high.find(m->partition);
      if (h != high.end() && m->offset + 1 >= h->second) high.erase(h);
    }
    rd_kafka_message_destroy(m);
  }
  rd_kafka_assign(rk, nullptr);
}

}  // namespace

std::vector<ConsumedMessage> ConsumeAll(const std::string& bootstrap,
                                        const std::vector<std::string>& topics) {
  rd_kafka_t* rk = NewConsumer(bootstrap, "outbox-test-reader");
  std::vector<ConsumedMessage> out;
  for (const auto& topic : topics) ReadTopic(rk, topic, &out);
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  return out;
}

int64_t GroupLag(const std::string& bootstrap, const std::string& group, const std::string& topic) {
  rd_kafka_t* rk = NewConsumer(bootstrap, group);
  const int partitions = PartitionCount(rk, topic);
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(partitions);
  for (int p = 0; p < partitions; ++p) rd_kafka_topic_partition_list_add(list, topic.c_str(), p);
  int64_t lag = rd_kafka_committed(rk, list, 5000) == RD_KAFKA_RESP_ERR_NO_ERROR ? 0 : -1;
  for (int i = 0; lag >= 0 && i < list->cnt; ++i) {
    int64_t lo = 0, hi = 0;
    rd_kafka_query_watermark_offsets(rk, topic.c_str(), i, &lo, &hi, 5000);
    const int64_t committed = list->elems[i].offset >= 0 ? list->elems[i].offset : lo;
    lag += hi - committed;
  }
  rd_kafka_topic_partition_list_destroy(list);
  rd_kafka_destroy(rk);
  return lag;
}

}  // namespace outbox::testing
