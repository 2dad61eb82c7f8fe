#include "kafka/kafka_group_member.h"

#include <cstring>

#include "common/log.h"
#include "common/text.h"
#include "kafka/kafka_conf.h"

namespace outbox {

namespace {

constexpr int kPollMs = 200;  // how soon a Stop is noticed; callbacks come from the poll
constexpr int kRefreshTimeoutMs = 1000;
constexpr std::chrono::seconds kRecreateBackoff{2};

// Kafka's advice: a third of the session timeout, so that two lost
// heartbeats do not end the session.
int HeartbeatIntervalMs(const FleetConfig& fleet) {
  return std::max(100, fleet.session_timeout_ms / 3);
}

std::set<int> PartitionsOf(const rd_kafka_topic_partition_list_t* parts) {
  std::set<int> out;
  for (int i = 0; i < parts->cnt; ++i) out.insert(parts->elems[i].partition);
  return out;
}

void LogLibrdkafka(const rd_kafka_t*, int level, const char* fac, const char* buf) {
  LogAtSyslogLevel(level, "librdkafka", {{"client", "fleet"}, {"facility", fac}, {"error", buf}});
}

// An error object of the incremental calls, logged and freed.
void LogAssignError(rd_kafka_error_t* error, const char* what) {
  if (error == nullptr) return;
  LogError("fleet: the consumer refused an assignment change",
           {{"call", what}, {"error", rd_kafka_error_string(error)}});
  rd_kafka_error_destroy(error);
}

// The same for the eager protocol's calls.
void LogAssignError(rd_kafka_resp_err_t err, const char* what) {
  if (err == RD_KAFKA_RESP_ERR_NO_ERROR) return;
  LogError("fleet: the consumer refused an assignment change",
           {{"call", what}, {"error", rd_kafka_err2str(err)}});
}

}  // namespace

KafkaGroupMember::KafkaGroupMember(FleetConfig fleet, std::string client_id, ClockPtr clock)
    : fleet_(std::move(fleet)),
      client_id_(std::move(client_id)),
      clock_(std::move(clock)),
      contact_(ContactLimit(fleet_)) {}

std::chrono::milliseconds KafkaGroupMember::ContactLimit(const FleetConfig& fleet) {
  return std::chrono::milliseconds(fleet.session_timeout_ms - HeartbeatIntervalMs(fleet));
}

std::chrono::milliseconds KafkaGroupMember::PartitionsRefresh(const FleetConfig& fleet) {
  return std::chrono::milliseconds(std::max(1000, HeartbeatIntervalMs(fleet)));
}

KafkaGroupMember::~KafkaGroupMember() { Stop(); }

std::map<std::string, std::string> KafkaGroupMember::Properties(const FleetConfig& fleet,
                                                                const std::string& client_id) {
  std::map<std::string, std::string> p = fleet.kafka.properties;
  p["bootstrap.servers"] = fleet.kafka.bootstrap_servers;
  p["client.id"] = client_id;
  p["group.id"] = fleet.group_id;
  // Moves only the partitions that change owner: the other services of a
  // relay never stop in a rebalance (KIP-429).
  p["partition.assignment.strategy"] = "cooperative-sticky";
  p["session.timeout.ms"] = std::to_string(fleet.session_timeout_ms);
  p["heartbeat.interval.ms"] = std::to_string(HeartbeatIntervalMs(fleet));
  // The contact watchdog reads the coordinator's answers from the
  // statistics, once a second.
  p["statistics.interval.ms"] = std::to_string(kStatisticsMs);
  // The partitions are shards, never read and never committed.
  p["enable.auto.commit"] = "false";
  p["enable.auto.offset.store"] = "false";
  p["auto.offset.reset"] = "latest";
  p["enable.partition.eof"] = "false";
  // The operator creates the topic and chooses its partitions (the shards);
  // a broker's auto-creation would pick a count nobody chose.
  p["allow.auto.create.topics"] = "false";
  // An added partition is seen by the group's leader (which rebalances)
  // within a heartbeat interval; every member also reads the count itself
  // as often (Run).
  p["topic.metadata.refresh.interval.ms"] = std::to_string(PartitionsRefresh(fleet).count());
  p["log.connection.close"] = "false";
  if (fleet.static_membership) p["group.instance.id"] = client_id;
  return p;
}

rd_kafka_t* KafkaGroupMember::NewConsumer(std::string* error) {
  std::string refused;
  rd_kafka_conf_t* conf = NewKafkaConf(Properties(fleet_, client_id_), &refused);
  if (conf == nullptr) {
    *error = "fleet: " + refused;
    return nullptr;
  }
  rd_kafka_conf_set_rebalance_cb(conf, &KafkaGroupMember::OnRebalance);
  rd_kafka_conf_set_error_cb(conf, &KafkaGroupMember::OnError);
  rd_kafka_conf_set_stats_cb(conf, &KafkaGroupMember::OnStats);
  rd_kafka_conf_set_log_cb(conf, &LogLibrdkafka);
  rd_kafka_conf_set_opaque(conf, this);
  char errstr[512];
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
  if (rk == nullptr) {
    rd_kafka_conf_destroy(conf);  // rd_kafka_new takes it only on success
    *error = std::string("fleet: cannot create the group's consumer: ") + errstr;
    return nullptr;
  }
  rd_kafka_poll_set_consumer(rk);
  rd_kafka_topic_partition_list_t* topics = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(topics, fleet_.topic.c_str(), RD_KAFKA_PARTITION_UA);
  const rd_kafka_resp_err_t err = rd_kafka_subscribe(rk, topics);
  rd_kafka_topic_partition_list_destroy(topics);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    *error =
        std::string("fleet: cannot subscribe to ") + fleet_.topic + ": " + rd_kafka_err2str(err);
    rd_kafka_destroy(rk);
    return nullptr;
  }
  return rk;
}

Status KafkaGroupMember::Start(Listener listener) {
  listener_ = std::move(listener);
  std::string error;
  rk_ = NewConsumer(&error);
  if (rk_ == nullptr) return Status::Invalid(error);
  PrepareLoggingForThreads();
  LogInfo("fleet: joining the group",
          {{"group", fleet_.group_id}, {"topic", fleet_.topic}, {"member", client_id_}});
  thread_ = std::thread([this] { Run(); });
  return Status::Ok();
}

void KafkaGroupMember::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

bool KafkaGroupMember::Member() const {
  MutexLock lock(&mu_);
  return member_;
}

std::string KafkaGroupMember::Problem() const {
  MutexLock lock(&mu_);
  return problem_;
}

void KafkaGroupMember::SetProblem(const std::string& problem, bool member) {
  MutexLock lock(&mu_);
  problem_ = problem;
  member_ = member;
}

void KafkaGroupMember::Run() {
  while (!stop_) {
    if (recreate_) {
      Close();
      const auto until = clock_->Now() + kRecreateBackoff;
      while (!stop_ && clock_->Now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(kPollMs));
      std::string error;
      rk_ = NewConsumer(&error);
      if (rk_ == nullptr) {
        LogError("fleet: cannot make the group's consumer again; retrying", {{"error", error}});
        continue;
      }
      recreate_ = false;
      contact_.Reset();
      suspended_ = false;
    }
    RefreshIfDue();
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk_, kPollMs);
    if (m == nullptr) continue;
    if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) OnConsumerError(*m);
    rd_kafka_message_destroy(m);  // never a message: every partition is paused
  }
  Close();
}

void KafkaGroupMember::OnConsumerError(const rd_kafka_message_t& m) {
  char fatal[512];
  if (rd_kafka_fatal_error(rk_, fatal, sizeof(fatal)) != RD_KAFKA_RESP_ERR_NO_ERROR) {
    // E.g. FENCED_INSTANCE_ID: another relay runs with this instance_id and
    // static membership. The group has moved on: stop serving, start over.
    LogError("fleet: the group's consumer failed for good; its shards are lost, joining again",
             {{"error", fatal}});
    SetProblem(std::string("the group's consumer failed: ") + fatal, false);
    Report(GroupAssignment::Kind::kLost, owned_);
    recreate_ = true;
    return;
  }
  const std::string error = rd_kafka_message_errstr(&m);
  if (m.err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART ||
      m.err == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED) {
    SetProblem("fleet.topic " + fleet_.topic + " cannot be used (" + error +
                   "): create it, or grant Describe and Read on it (docs/DEPLOY.md \"A fleet\")",
               false);
  }
  LogWarn("fleet: the group's consumer reports an error",
          {{"topic", fleet_.topic}, {"error", error}});
}

void KafkaGroupMember::OnError(rd_kafka_t*, int err, const char* reason, void*) {
  LogWarn("fleet: the group's cluster reports an error",
          {{"error", std::string(rd_kafka_err2name(static_cast<rd_kafka_resp_err_t>(err))) + ": " +
                         reason}});
}

int KafkaGroupMember::OnStats(rd_kafka_t*, char* json, size_t len, void* opaque) {
  static_cast<KafkaGroupMember*>(opaque)->OnStatistics(std::string(json, len));
  return 0;  // librdkafka frees `json`
}

void KafkaGroupMember::OnStatistics(const std::string& json) {
  ContactSample sample;
  if (!ParseContactSample(json, &sample)) return;
  const auto change = contact_.Observe(sample, rd_kafka_assignment_lost(rk_) != 0);
  if (change == GroupContact::Change::kLost && !suspended_) {
    const std::string why = "no answer from the group's coordinator for " +
                            std::to_string(contact_.silence_ms()) +
                            " ms; serving none of this relay's shards until it answers";
    LogWarn("fleet: the group's coordinator does not answer; this relay stops serving its shards",
            {{"silence_ms", contact_.silence_ms()}, {"shards", JoinNumbers(owned_)}});
    suspended_ = true;
    SetProblem(why, false);
    Report(GroupAssignment::Kind::kSuspended, owned_);
  } else if (change == GroupContact::Change::kBack && suspended_) {
    LogInfo("fleet: the group's coordinator answers again; this relay serves its shards again",
            {{"shards", JoinNumbers(owned_)}});
    suspended_ = false;
    SetProblem("", true);
    Report(GroupAssignment::Kind::kResumed, owned_);
  }
}

void KafkaGroupMember::RefreshIfDue() {
  const auto now = clock_->Now();
  if (now < next_refresh_) return;
  next_refresh_ = now + PartitionsRefresh(fleet_);
  const int before = partitions_;
  // Not known before the first assignment; not asked while the watchdog
  // holds the shards (the cluster may be what is unreachable). A short
  // wait: rebalances and statistics are served by this same thread.
  if (before == 0 || suspended_) return;
  if (RefreshPartitions(kRefreshTimeoutMs) == before) return;
  LogInfo("fleet: the shard topic's partition count changed; the services' shards move",
          {{"topic", fleet_.topic}, {"before", before}, {"partitions", partitions_}});
  Report(GroupAssignment::Kind::kResized, {});
}

void KafkaGroupMember::OnRebalance(rd_kafka_t*, rd_kafka_resp_err_t err,
                                   rd_kafka_topic_partition_list_t* parts, void* opaque) {
  static_cast<KafkaGroupMember*>(opaque)->Rebalance(err, parts);
}

void KafkaGroupMember::Rebalance(rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* parts) {
  // A group that fell back to the eager protocol (another member without
  // cooperative-sticky) gives and takes whole assignments.
  const bool cooperative = std::strcmp(rd_kafka_rebalance_protocol(rk_), "COOPERATIVE") == 0;
  if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
    Assign(parts, cooperative);
  } else if (err == RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS) {
    Revoke(parts, cooperative);
  } else {
    LogError("fleet: rebalance failed; giving back every shard",
             {{"error", rd_kafka_err2str(err)}});
    Revoke(parts, cooperative);
  }
}

void KafkaGroupMember::Assign(rd_kafka_topic_partition_list_t* parts, bool cooperative) {
  if (cooperative)
    LogAssignError(rd_kafka_incremental_assign(rk_, parts), "incremental_assign");
  else
    LogAssignError(rd_kafka_assign(rk_, parts), "assign");
  // Never fetched: the partitions only stand for shards.
  rd_kafka_pause_partitions(rk_, parts);
  std::set<int> added = PartitionsOf(parts);
  owned_.insert(added.begin(), added.end());
  // The group answered: whatever the watchdog saw is over.
  contact_.Reset();
  suspended_ = false;
  // The first count may take a while to read; later ones are known already.
  if (RefreshPartitions(partitions_ == 0 ? kMetadataTimeoutMs : kRefreshTimeoutMs) > 0)
    SetProblem("", true);
  else
    SetProblem("fleet.topic " + fleet_.topic + " has no partitions (does it exist?)", false);
  Report(GroupAssignment::Kind::kAssigned, std::move(added));
}

void KafkaGroupMember::Revoke(rd_kafka_topic_partition_list_t* parts, bool cooperative) {
  const bool lost = rd_kafka_assignment_lost(rk_) != 0;
  std::set<int> gone = PartitionsOf(parts);
  for (int p : gone) owned_.erase(p);
  if (lost) SetProblem("the group lost this relay's assignment; rejoining", false);
  // The listener first: it returns once the claims in these shards have
  // stopped, and only the unassign below lets the group hand them on.
  Report(lost ? GroupAssignment::Kind::kLost : GroupAssignment::Kind::kRevoked, std::move(gone));
  if (cooperative)
    LogAssignError(rd_kafka_incremental_unassign(rk_, parts), "incremental_unassign");
  else
    LogAssignError(rd_kafka_assign(rk_, nullptr), "unassign");
}

void KafkaGroupMember::Report(GroupAssignment::Kind kind, std::set<int> changed) {
  if (kind == GroupAssignment::Kind::kLost) owned_.clear();
  GroupAssignment a{kind, suspended_ ? std::set<int>{} : owned_, std::move(changed), partitions_};
  if (listener_) listener_(a);
}

int KafkaGroupMember::RefreshPartitions(int timeout_ms) {
  rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk_, fleet_.topic.c_str(), nullptr);
  const rd_kafka_metadata_t* md = nullptr;
  if (rd_kafka_metadata(rk_, 0, rkt, &md, timeout_ms) == RD_KAFKA_RESP_ERR_NO_ERROR) {
    if (md->topic_cnt == 1 && md->topics[0].err == RD_KAFKA_RESP_ERR_NO_ERROR)
      partitions_ = md->topics[0].partition_cnt;
    rd_kafka_metadata_destroy(md);
  }
  rd_kafka_topic_destroy(rkt);
  return partitions_;
}

Status KafkaGroupMember::TopicPartitions(const FleetConfig& fleet, int* partitions) {
  std::string refused;
  rd_kafka_conf_t* conf = NewKafkaConf(Properties(fleet, "outbox-relay-check"), &refused);
  if (conf == nullptr) return Status::Invalid("fleet." + refused);
  rd_kafka_conf_set_log_cb(conf, &LogLibrdkafka);
  char errstr[512];
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
  if (rk == nullptr) {
    rd_kafka_conf_destroy(conf);
    return Status::Invalid(std::string("cannot create a Kafka client: ") + errstr);
  }
  rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, fleet.topic.c_str(), nullptr);
  const rd_kafka_metadata_t* md = nullptr;
  rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 0, rkt, &md, kMetadataTimeoutMs);
  if (err == RD_KAFKA_RESP_ERR_NO_ERROR) {
    err = md->topic_cnt == 1 ? md->topics[0].err : RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART;
    *partitions = md->topic_cnt == 1 ? md->topics[0].partition_cnt : 0;
    rd_kafka_metadata_destroy(md);
  }
  rd_kafka_topic_destroy(rkt);
  rd_kafka_destroy_flags(rk, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
  if (err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART)
    return Status::Schema("topic " + fleet.topic +
                          " does not exist: create it with at least as many partitions as "
                          "services (docs/DEPLOY.md \"A fleet\")");
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
    return Status::Unavailable(std::string("cannot read the metadata of topic ") + fleet.topic +
                               ": " + rd_kafka_err2str(err));
  return Status::Ok();
}

void KafkaGroupMember::Close() {
  if (rk_ == nullptr) return;
  // librdkafka 2.0.2 can hang in a close (after a lost assignment, or while
  // an assignment arrives): an asynchronous close served here with a time
  // limit, then a destroy that does not close again.
  rd_kafka_queue_t* q = rd_kafka_queue_new(rk_);
  bool closed = false;
  if (rd_kafka_error_t* e = rd_kafka_consumer_close_queue(rk_, q)) {
    LogWarn("fleet: cannot leave the group", {{"error", rd_kafka_error_string(e)}});
    rd_kafka_error_destroy(e);
  } else {
    const auto deadline = clock_->Now() + kCloseLimit;
    while (!(closed = rd_kafka_consumer_closed(rk_) != 0) && clock_->Now() < deadline)
      rd_kafka_queue_poll_callback(q, 100);
  }
  rd_kafka_queue_destroy(q);
  if (!closed) LogWarn("fleet: leaving the group took too long; the consumer is dropped");
  rd_kafka_destroy_flags(rk_, closed ? 0 : RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
  rk_ = nullptr;
  SetProblem("not in the group", false);
}

}  // namespace outbox
