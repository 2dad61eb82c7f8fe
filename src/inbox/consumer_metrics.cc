#include "inbox/consumer_metrics.h"

#include <prometheus/text_serializer.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <sstream>

#include "http/http_server.h"

namespace outbox::inbox {

using prometheus::BuildCounter;
using prometheus::BuildGauge;

ConsumerMetrics::ConsumerMetrics(const std::string& consumer)
    : consumer_(consumer), registry_(std::make_shared<prometheus::Registry>()) {
  auto& r = *registry_;
  const prometheus::Labels l = {{"consumer", consumer_}};
  auto counters = [&](const char* name, const char* help) {
    return &BuildCounter().Name(name).Help(help).Register(r);
  };
  auto gauges = [&](const char* name, const char* help) {
    return &BuildGauge().Name(name).Help(help).Register(r);
  };
  messages_family_ = counters("outbox_consumer_messages_total", "Messages finished, by outcome");
  lag_family_ = gauges("outbox_consumer_lag", "Messages not yet read, per assigned partition");
  lookups_family_ = counters("outbox_consumer_schema_lookups_total",
                             "Schema Registry requests for a schema id, by result");
  value_failures_family_ = counters("outbox_consumer_value_failures_total",
                                    "Values dead-lettered because they cannot be read");
  registry_up_family_ = gauges("outbox_consumer_schema_registry_up",
                               "0 while the Schema Registry does not answer (events wait)");
  auto counter = [&](const char* name, const char* help) { return &counters(name, help)->Add(l); };
  auto gauge = [&](const char* name, const char* help) { return &gauges(name, help)->Add(l); };
  stalls_ = counter("outbox_consumer_stalls_total",
                    "Database or broker failures that paused a partition");
  failed_ = counter("outbox_consumer_failed_attempts_total",
                    "Attempts at a message that could not be processed");
  lost_ = counter("outbox_consumer_lost_transactions_total",
                  "Handler returned Ok on a transaction rolled back under it; tried again");
  purged_ =
      counter("outbox_consumer_inbox_purged_total", "Inbox rows deleted by inbox_retention_days");
  paused_ = gauge("outbox_consumer_paused_partitions", "Partitions waiting (stall or backoff)");
  auto& parked =
      *gauges("outbox_consumer_parked_rows", "Rows of t_inbox_parked for this consumer, by reason");
  gaps_ = &parked.Add({{"consumer", consumer_}, {"reason", "version_gap"}});
  undeliverable_ = &parked.Add({{"consumer", consumer_}, {"reason", "undeliverable"}});
  oldest_gap_ = gauge("outbox_consumer_oldest_gap_age_seconds",
                      "Age of the oldest version gap (strict), 0 when none");
  db_up_ = gauge("outbox_consumer_database_up", "1 when the last housekeeping query succeeded");
  for (const char* o :
       {"applied", "duplicate", "stale", "parked", "dead_lettered", "undeliverable"})
    outcomes_[o] = &messages_family_->Add({{"consumer", consumer_}, {"outcome", o}});
}

ConsumerMetrics::~ConsumerMetrics() {
  if (!io_) return;
  io_->stop();
  if (http_thread_.joinable()) http_thread_.join();
}

void ConsumerMetrics::CountBy(prometheus::Family<prometheus::Counter>* family,
                              std::map<std::string, prometheus::Counter*>* counters,
                              const char* label, const std::string& value, uint64_t n) {
  outbox::MutexLock lock(&mu_);
  auto& c = (*counters)[value];
  if (!c) c = &family->Add({{"consumer", consumer_}, {label, value}});
  c->Increment(static_cast<double>(n));
}

void ConsumerMetrics::Outcome(const std::string& outcome, uint64_t n) {
  CountBy(messages_family_, &outcomes_, "outcome", outcome, n);
}

void ConsumerMetrics::HeldPartitions(int member, size_t n) {
  outbox::MutexLock lock(&mu_);
  held_[member] = n;
  size_t sum = 0;
  for (const auto& [m, held] : held_) sum += held;
  paused_->Set(static_cast<double>(sum));
}

void ConsumerMetrics::Lag(const std::string& topic, int32_t partition, int64_t lag) {
  outbox::MutexLock lock(&mu_);
  auto& g = lags_[{topic, partition}];
  if (!g)
    g = &lag_family_->Add(
        {{"consumer", consumer_}, {"topic", topic}, {"partition", std::to_string(partition)}});
  g->Set(static_cast<double>(lag));
}

void ConsumerMetrics::ForgetPartition(const std::string& topic, int32_t partition) {
  outbox::MutexLock lock(&mu_);
  auto it = lags_.find({topic, partition});
  if (it == lags_.end()) return;
  lag_family_->Remove(it->second);  // another member reports it now
  lags_.erase(it);
}

void ConsumerMetrics::Parked(int64_t version_gaps, int64_t undeliverable,
                             int64_t oldest_gap_age_s) {
  gaps_->Set(static_cast<double>(version_gaps));
  undeliverable_->Set(static_cast<double>(undeliverable));
  oldest_gap_->Set(static_cast<double>(oldest_gap_age_s));
}

void ConsumerMetrics::DatabaseUp(bool up) {
  database_up_.store(up);
  db_up_->Set(up ? 1 : 0);
}

void ConsumerMetrics::SchemaLookup(const std::string& result) {
  CountBy(lookups_family_, &lookups_, "result", result, 1);
}

void ConsumerMetrics::SchemaRegistryUp(bool up) {
  outbox::MutexLock lock(&mu_);
  if (!registry_up_) registry_up_ = &registry_up_family_->Add({{"consumer", consumer_}});
  registry_up_->Set(up ? 1 : 0);
}

void ConsumerMetrics::ValueFailure(const std::string& reason) {
  CountBy(value_failures_family_, &value_failures_, "reason", reason, 1);
}

std::string ConsumerMetrics::Serialize() const {
  prometheus::TextSerializer serializer;
  std::ostringstream out;
  serializer.Serialize(out, registry_->Collect());
  return out.str();
}

bool ConsumerMetrics::Serve(const std::string& listen, std::string* error) {
  io_ = std::make_unique<boost::asio::io_context>();
  http_ = std::make_unique<outbox::HttpServer>(*io_, [this](const std::string& target) {
    outbox::HttpResponse r;
    const std::string path = target.substr(0, target.find('?'));
    if (path == "/metrics") {
      r.content_type = "text/plain; version=0.0.4; charset=utf-8";
      r.body = Serialize();
    } else if (path == "/healthz") {
      r.body = "ok\n";
    } else if (path == "/readyz") {
      const bool up = database_up_.load();
      r.status = up ? 200 : 503;
      r.body = up ? "ready\n" : "not ready: the database did not answer\n";
    } else {
      r.status = 404;
      r.body = "not found\n";
    }
    return r;
  });
  const outbox::Status s = http_->Listen(listen);
  if (!s.ok()) {
    *error = s.message();
    return false;
  }
  port_ = http_->port();
  http_thread_ = std::thread([this] {
    auto guard = boost::asio::make_work_guard(*io_);
    io_->run();
  });
  return true;
}

}  // namespace outbox::inbox
