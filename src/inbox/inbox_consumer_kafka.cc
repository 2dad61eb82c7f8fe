// The member's side of the consumer group and the broker (inbox_consumer.h):
// the Kafka client's setup, its errors and rebalances, and the pause, seek
// and resume of a partition that waits. Everything here runs on the
// member's thread, inside or between rd_kafka_consumer_poll calls.
#include <cstring>

#include "inbox/inbox_consumer.h"  // InboxConsumer
#include "inbox/inbox_log.h"

namespace outbox::inbox {

bool InboxConsumer::Start(std::string* error) {
  outbox::SchemaRegistryPtr registry;
  if (!MakeRegistry(config_.schema_registry, &registry, error)) return false;
  values_ =
      std::make_unique<ValueReader>(config_.decode, std::move(registry), clock_, options_.observer);
  store_.set_value_reader(values_.get());
  if (!dlq_.Start(error)) return false;
  rd_kafka_conf_t* conf = NewConf(error);
  if (!conf) return false;
  char err[512];
  rk_ = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
  if (!rk_) {
    rd_kafka_conf_destroy(conf);
    *error = std::string("cannot create the Kafka consumer: ") + err;
    return false;
  }
  // One queue: rebalances, errors and messages are all served by
  // rd_kafka_consumer_poll, on this thread, between two messages.
  rd_kafka_poll_set_consumer(rk_);
  // With a host logger, librdkafka's lines wait in that queue too (log.queue,
  // NewConf) and are logged on this thread, where the host's sink is.
  if (options_.log) rd_kafka_set_log_queue(rk_, nullptr);
  const ConsumerKafkaConfig& k = config_.kafka;
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

rd_kafka_conf_t* InboxConsumer::NewConf(std::string* error) {
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
      {"group.id", GroupId(config_)},
      {"client.id", "outbox-inbox-consumer"},
      {"auto.offset.reset", k.auto_offset_reset},
      {"auto.commit.interval.ms", "1000"},
      // A topic created after the consumer started, or a new one that
      // topic_regex matches, is found within 10 s instead of librdkafka's 5 min.
      {"topic.metadata.refresh.interval.ms", "10000"},
  };
  for (const auto& [key, value] : k.properties) settings[key] = value;
  if (options_.log) settings["log.queue"] = "true";
  settings["enable.auto.commit"] = "true";
  settings["enable.auto.offset.store"] = "false";
  char err[512];
  for (const auto& [key, value] : settings) {
    if (rd_kafka_conf_set(conf, key.c_str(), value.c_str(), err, sizeof(err)) != RD_KAFKA_CONF_OK) {
      *error = "kafka property " + key + ": " + err;
      rd_kafka_conf_destroy(conf);
      return nullptr;
    }
  }
  rd_kafka_conf_set_log_cb(conf, KafkaLogLine);
  rd_kafka_conf_set_rebalance_cb(conf, &InboxConsumer::OnRebalance);
  // Served by rd_kafka_consumer_poll, on this thread.
  rd_kafka_conf_set_error_cb(conf, &InboxConsumer::OnError);
  rd_kafka_conf_set_opaque(conf, this);
  return conf;
}

bool InboxConsumer::PauseAndSeek(const TopicPartition& tp, int64_t offset) {
  rd_kafka_topic_partition_list_t* l = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(l, tp.first.c_str(), tp.second)->offset = offset;
  rd_kafka_pause_partitions(rk_, l);  // first pause, then seek: resume starts at the seek
  std::string error;
  if (failing_seeks_ > 0) {
    --failing_seeks_;  // a test failpoint: as if the seek had failed
    error = "test failpoint seek_error";
  } else if (rd_kafka_error_t* e = rd_kafka_seek_partitions(rk_, l, 5000)) {
    error = rd_kafka_error_string(e);
    rd_kafka_error_destroy(e);
  } else if (l->elems[0].err) {
    // The call succeeded but this partition's seek did not: resuming now
    // would go on from wherever the fetcher was, past the unfinished message.
    error = rd_kafka_err2str(l->elems[0].err);
  }
  rd_kafka_topic_partition_list_destroy(l);
  if (error.empty()) {
    gate_.Seeked(tp);
    return true;
  }
  log::Error(
      "cannot rewind {} to offset {}: {}; the partition stays paused and is rewound "
      "again before it resumes",
      PartitionName(tp), offset, error);
  return false;
}

void InboxConsumer::MaybeResume() {
  const auto now = clock_->Now();
  for (const TopicPartition& tp : gate_.Due(now)) {
    if (gate_.NeedsSeek(tp) && !PauseAndSeek(tp, gate_.HeldOffset(tp))) {
      gate_.SeekFailed(tp, now);
      continue;
    }
    rd_kafka_topic_partition_list_t* l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, tp.first.c_str(), tp.second);
    rd_kafka_resume_partitions(rk_, l);
    rd_kafka_topic_partition_list_destroy(l);
    gate_.Resumed(tp);
  }
  if (options_.observer) options_.observer->HeldPartitions(member_, gate_.held());
}

void InboxConsumer::OnError(rd_kafka_t*, int err, const char* reason, void* opaque) {
  static_cast<InboxConsumer*>(opaque)->OnKafkaError(static_cast<rd_kafka_resp_err_t>(err), reason);
}

void InboxConsumer::OnKafkaError(rd_kafka_resp_err_t err, const std::string& what) {
  if (err == RD_KAFKA_RESP_ERR__PARTITION_EOF) return;
  ++stats_.kafka_errors;
  if (rd_kafka_fatal_error(rk_, nullptr, 0)) {
    log::Error("kafka: fatal error: {}; stopping", what);
    exit_code_ = 1;
    return;
  }
  if (err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN || err == RD_KAFKA_RESP_ERR__RESOLVE) {
    if (blockers_.Raise(Blocker::kBroker))
      log::Warn(
          "kafka: {}; no message is read until a broker answers: check "
          "kafka.bootstrap_servers ({}) and that the brokers run and are reachable from here "
          "(librdkafka reconnects by itself)",
          what, config_.kafka.bootstrap_servers);
    return;
  }
  // librdkafka reconnects by itself; say each kind of error once in 30 s,
  // not on every reconnect attempt.
  const auto now = clock_->Now();
  if (err == last_kafka_error_ && now - last_kafka_error_at_ < std::chrono::seconds(30)) return;
  last_kafka_error_ = err;
  last_kafka_error_at_ = now;
  log::Warn("kafka: {} (librdkafka reconnects by itself; consumption waits)", what);
}

void InboxConsumer::BrokerAnswers() {
  if (blockers_.Clear(Blocker::kBroker)) log::Info("kafka: a broker answers again");
}

// librdkafka 2.0.2 can wait for ever in the rd_kafka_assign of a revoke
// that rd_kafka_consumer_close raises (librdkafka issues 4527 and 4884,
// fixed upstream after Debian 12's version). So the consumer leaves the
// group first: unsubscribe, whose revoke is an ordinary one served by the
// polls here, then close with nothing assigned. A message polled meanwhile
// is dropped unhandled: its offset is not stored, and the partition's next
// owner reads it. Bounded: after 10 s of polls close runs anyway.
void InboxConsumer::LeaveGroup() {
  if (rd_kafka_unsubscribe(rk_) != RD_KAFKA_RESP_ERR_NO_ERROR) return;
  for (int polls = 0; polls < 100; ++polls) {
    rd_kafka_topic_partition_list_t* assigned = nullptr;
    if (rd_kafka_assignment(rk_, &assigned) != RD_KAFKA_RESP_ERR_NO_ERROR) return;
    const bool none = assigned->cnt == 0;
    rd_kafka_topic_partition_list_destroy(assigned);
    if (none) return;
    MessagePtr dropped(rd_kafka_consumer_poll(rk_, 100));
  }
}

void InboxConsumer::OnRebalance(rd_kafka_t*, rd_kafka_resp_err_t err,
                                rd_kafka_topic_partition_list_t* parts, void* opaque) {
  static_cast<InboxConsumer*>(opaque)->Rebalance(err, parts);
}

// Runs inside rd_kafka_consumer_poll, on the loop's thread, so no message is
// in the middle of its transaction now: every message handled so far is
// either finished (its offset stored) or held (not stored: abandoned on
// revoke, the next owner reads it).
void InboxConsumer::ForgetPartition(const rd_kafka_topic_partition_t& part) {
  const TopicPartition tp{part.topic, part.partition};
  for (auto& [ticket, p] : dead_letters_)
    if (PartitionOf(p.message.get()) == tp) p.revoked = true;
  gate_.Forget(tp);
  if (options_.observer) options_.observer->ForgetPartition(part.topic, part.partition);
}

void InboxConsumer::Rebalance(rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* parts) {
  const bool cooperative = std::strcmp(rd_kafka_rebalance_protocol(rk_), "COOPERATIVE") == 0;
  std::string names;
  for (int i = 0; i < parts->cnt; ++i)
    names += (i ? " " : "") + std::string(parts->elems[i].topic) + "/" +
             std::to_string(parts->elems[i].partition);
  if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
    BrokerAnswers();
    log::Info("assigned {} partition(s): {}", parts->cnt, names);
    if (cooperative) {
      if (rd_kafka_error_t* e = rd_kafka_incremental_assign(rk_, parts)) rd_kafka_error_destroy(e);
    } else {
      rd_kafka_assign(rk_, parts);
    }
    // A partition this member paused before it lost it starts afresh, from
    // the committed offset: an application pause may outlive the revoke.
    rd_kafka_resume_partitions(rk_, parts);
    return;
  }
  if (err == RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS) {
    // Commit what is stored before the partitions go: the next owner then
    // starts after the last committed transaction instead of replaying
    // (a replay would be harmless, the inbox skips it, only slower).
    rd_kafka_resp_err_t e = rd_kafka_commit(rk_, nullptr, 0);
    log::Info("revoked {} partition(s): {}; offsets commit: {}", parts->cnt, names,
              e == RD_KAFKA_RESP_ERR__NO_OFFSET ? "nothing new" : rd_kafka_err2str(e));
    for (int i = 0; i < parts->cnt; ++i) ForgetPartition(parts->elems[i]);
    if (cooperative) {
      if (rd_kafka_error_t* x = rd_kafka_incremental_unassign(rk_, parts))
        rd_kafka_error_destroy(x);
    } else {
      rd_kafka_assign(rk_, nullptr);
    }
    return;
  }
  log::Warn("rebalance failed: {}; giving up the assignment", rd_kafka_err2str(err));
  rd_kafka_assign(rk_, nullptr);
}

}  // namespace outbox::inbox
