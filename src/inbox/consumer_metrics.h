#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/mutex.h"
#include "outbox/inbox/observer.h"

namespace boost::asio {
class io_context;
}
namespace outbox {
class HttpServer;
}

namespace outbox::inbox {

// The consumer's Prometheus metrics (docs/CONSUMERS.md "Metrics"), all
// labelled with `consumer`:
//   outbox_consumer_messages_total{outcome}   applied | duplicate | stale | parked |
//                                             unparked | dead_lettered | undeliverable |
//                                             dead_letter_read
//   outbox_consumer_failed_attempts_total     messages that could not be processed this time
//   outbox_consumer_stalls_total              database or broker failures that paused a partition
//   outbox_consumer_lost_transactions_total   Ok from a handler whose transaction was rolled back
//   outbox_consumer_paused_partitions         partitions waiting now, summed over the
//                                             process's members (concurrency)
//   outbox_consumer_lag{topic,partition}      messages not yet read (high watermark - position)
//   outbox_consumer_parked_rows{reason}       t_inbox_parked: version_gap | undeliverable
//   outbox_consumer_oldest_gap_age_seconds    the oldest parked version_gap row (0: none)
//   outbox_consumer_inbox_purged_total        inbox rows deleted by inbox_retention_days
//   outbox_consumer_database_up               the last housekeeping query succeeded
//   outbox_consumer_schema_lookups_total{result}   Schema Registry requests for a schema id
//   outbox_consumer_schema_registry_up        0 while the registry does not answer (events
//                                             wait); from the first lookup on
//   outbox_consumer_value_failures_total{reason}   values dead-lettered as unreadable
// Updated on the consumer's thread, read by the HTTP thread (prometheus-cpp's
// metrics are thread-safe; the maps here are guarded by mu_).
class ConsumerMetrics : public ConsumerObserver {
 public:
  explicit ConsumerMetrics(const std::string& consumer);
  ~ConsumerMetrics() override;

  void Outcome(const std::string& outcome, uint64_t n) override;
  void Stalled() override { stalls_->Increment(); }
  void FailedAttempt() override { failed_->Increment(); }
  void LostTransaction() override { lost_->Increment(); }
  void HeldPartitions(int member, size_t n) override;
  void Lag(const std::string& topic, int32_t partition, int64_t lag) override;
  void ForgetPartition(const std::string& topic, int32_t partition) override;
  void Parked(int64_t version_gaps, int64_t undeliverable, int64_t oldest_gap_age_s) override;
  void Purged(uint64_t rows) override { purged_->Increment(static_cast<double>(rows)); }
  void DatabaseUp(bool up) override;
  void SchemaLookup(const std::string& result) override;
  void SchemaRegistryUp(bool up) override;
  void ValueFailure(const std::string& reason) override;

  std::string Serialize() const;

  // Serves /metrics, /healthz (the loop runs) and /readyz (the database
  // answered the last housekeeping) on `listen` (HOST:PORT, port 0 picks
  // one) from a thread of its own. False with *error when it cannot bind.
  bool Serve(const std::string& listen, std::string* error);
  unsigned short port() const { return port_; }

 private:
  // The counter of `family` whose `label` is `value`, made at its first use.
  void CountBy(prometheus::Family<prometheus::Counter>* family,
               std::map<std::string, prometheus::Counter*>* counters, const char* label,
               const std::string& value, uint64_t n) EXCLUDES(mu_);

  const std::string consumer_;
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>* messages_family_;
  prometheus::Family<prometheus::Gauge>* lag_family_;
  prometheus::Family<prometheus::Counter>*lookups_family_, *value_failures_family_;
  prometheus::Family<prometheus::Gauge>* registry_up_family_;
  prometheus::Counter *stalls_, *failed_, *purged_, *lost_;
  prometheus::Gauge *paused_, *gaps_, *undeliverable_, *oldest_gap_, *db_up_;
  std::atomic<bool> database_up_{false};

  outbox::Mutex mu_;
  std::map<std::string, prometheus::Counter*> outcomes_ GUARDED_BY(mu_);
  std::map<std::pair<std::string, int32_t>, prometheus::Gauge*> lags_ GUARDED_BY(mu_);
  std::map<int, size_t> held_ GUARDED_BY(mu_);  // by member: paused_ is their sum
  // Schema metrics by their label's value ("result", "reason").
  std::map<std::string, prometheus::Counter*> lookups_ GUARDED_BY(mu_);
  std::map<std::string, prometheus::Counter*> value_failures_ GUARDED_BY(mu_);
  prometheus::Gauge* registry_up_ GUARDED_BY(mu_) = nullptr;  // at the first report

  std::unique_ptr<boost::asio::io_context> io_;
  std::unique_ptr<outbox::HttpServer> http_;
  std::thread http_thread_;
  unsigned short port_ = 0;
};

}  // namespace outbox::inbox
