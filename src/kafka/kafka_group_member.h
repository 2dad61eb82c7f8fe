#pragma once

#include <librdkafka/rdkafka.h>

#include <atomic>
#include <map>
#include <set>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/mutex.h"
#include "config/config.h"
#include "kafka/group_contact.h"
#include "kafka/group_membership.h"

namespace outbox {

// The fleet's membership through Kafka's consumer group protocol
// (docs/DEPLOY.md "A fleet"): a librdkafka consumer in group
// `fleet.group_id` subscribed to `fleet.topic`, cooperative-sticky,
// incremental assign and unassign. Its partitions are shards; it never
// fetches (assigned partitions are paused at once), never commits and never
// produces. One thread polls the consumer and calls the listener; besides
// the group's rebalances it reports:
// - kSuspended / kResumed from the contact watchdog (GroupContact on the
//   statistics): no answer from the coordinator for ContactLimit, while
//   heartbeats were due, serves nothing until it answers again;
// - kResized when the topic's partition count, read every
//   PartitionsRefresh, changed (each member reads it, not only the one
//   whose assignment changes).
//
// Thread-safety: as GroupMembership. Lifetime: Stop (or the destructor)
// before the listener's captures go.
class KafkaGroupMember final : public GroupMembership {
 public:
  // `client_id` names the member (instance_id); with
  // fleet.static_membership it is also group.instance.id.
  KafkaGroupMember(FleetConfig fleet, std::string client_id, ClockPtr clock = DefaultClock());
  ~KafkaGroupMember() override;  // Stop
  KafkaGroupMember(const KafkaGroupMember&) = delete;
  KafkaGroupMember& operator=(const KafkaGroupMember&) = delete;

  Status Start(Listener listener) override;
  void Stop() override;
  bool Member() const override EXCLUDES(mu_);
  std::string Problem() const override EXCLUDES(mu_);

  // The consumer's librdkafka properties (for tests and check's report).
  static std::map<std::string, std::string> Properties(const FleetConfig& fleet,
                                                       const std::string& client_id);
  // The partition count of fleet.topic (check --connect), through a
  // consumer that does not join the group. An error names a missing topic
  // or an unreachable cluster.
  static Status TopicPartitions(const FleetConfig& fleet, int* partitions);
  // How long a close may take before the consumer is destroyed without it
  // (librdkafka 2.0.2 can hang closing after a lost assignment).
  static constexpr std::chrono::seconds kCloseLimit{10};
  // How long a read of the topic's metadata waits (check, rebalances).
  static constexpr int kMetadataTimeoutMs = 5000;
  // The statistics' interval: the watchdog's resolution.
  static constexpr int kStatisticsMs = 1000;
  // Silence from the coordinator that suspends this member: the session
  // timeout less a heartbeat interval, so that it stops serving before the
  // coordinator, counting from the last heartbeat it received, can end the
  // session and hand the shards on.
  static std::chrono::milliseconds ContactLimit(const FleetConfig& fleet);
  // How often the topic's partition count is read: a heartbeat interval
  // (at least a second).
  static std::chrono::milliseconds PartitionsRefresh(const FleetConfig& fleet);

 private:
  static void OnRebalance(rd_kafka_t* rk, rd_kafka_resp_err_t err,
                          rd_kafka_topic_partition_list_t* parts, void* opaque);
  static void OnError(rd_kafka_t* rk, int err, const char* reason, void* opaque);
  static int OnStats(rd_kafka_t* rk, char* json, size_t len, void* opaque);
  // One statistics sample through the contact watchdog. Poll thread only.
  void OnStatistics(const std::string& json);
  // Reads the partition count when a refresh is due; reports a change.
  void RefreshIfDue();
  void Run();
  // Applies a rebalance to the consumer and reports it. Poll thread only.
  void Rebalance(rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* parts);
  void Assign(rd_kafka_topic_partition_list_t* parts, bool cooperative);
  void Revoke(rd_kafka_topic_partition_list_t* parts, bool cooperative);
  void Report(GroupAssignment::Kind kind, std::set<int> changed);
  // The topic's partition count from the cluster's metadata; the last known
  // one when it cannot be read.
  int RefreshPartitions(int timeout_ms = kMetadataTimeoutMs);
  // A consumer error from poll: a missing topic, a fatal error (the
  // assignment is lost and the consumer made again).
  void OnConsumerError(const rd_kafka_message_t& m);
  void SetProblem(const std::string& problem, bool member) EXCLUDES(mu_);
  rd_kafka_t* NewConsumer(std::string* error);
  // Leaves the group within kCloseLimit, then destroys the consumer.
  void Close();

  const FleetConfig fleet_;
  const std::string client_id_;
  const ClockPtr clock_;
  Listener listener_;  // set by Start, before the thread
  rd_kafka_t* rk_ = nullptr;
  std::atomic<bool> stop_{false};
  std::atomic<bool> recreate_{false};
  std::thread thread_;

  // The poll thread only.
  std::set<int> owned_;  // the consumer's assignment
  int partitions_ = 0;
  GroupContact contact_;
  bool suspended_ = false;  // by the watchdog: owned_ is not served
  Clock::TimePoint next_refresh_{};

  mutable Mutex mu_;
  bool member_ GUARDED_BY(mu_) = false;
  std::string problem_ GUARDED_BY(mu_) = "joining the group";
};

}  // namespace outbox
