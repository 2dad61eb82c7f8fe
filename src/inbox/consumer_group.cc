#include "inbox/consumer_group.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include "inbox/inbox_log.h"

namespace outbox::inbox {

ConsumerGroup::ConsumerGroup(const ConsumerConfig& config, Handler& handler,
                             const ConsumerOptions& options, const TestSeams& seams)
    : config_(config),
      log_(options.log),
      log_level_(options.log_level),
      clock_(seams.clock ? seams.clock : outbox::DefaultClock()) {
  ConsumerOptions member_options = options;
  if (!config.http_listen.empty()) {
    metrics_ = std::make_unique<ConsumerMetrics>(config.consumer);
    observers_ = std::make_unique<ObserverTee>(metrics_.get(), options.observer);
    member_options.observer = observers_.get();
  }
  const int n = std::max(1, config.concurrency);
  for (int i = 0; i < n; ++i)
    members_.push_back(std::make_unique<InboxConsumer>(config, handler, member_options, seams, i));
}

// /metrics, /healthz and /readyz on http.listen, from a thread of their own.
bool ConsumerGroup::ServeMetrics() {
  std::optional<outbox::ScopedLogSink> host_log;  // this thread's lines to the host's logger
  if (log_) host_log.emplace(HostLogSink(log_), LevelName(log_level_));
  std::string error;
  if (!metrics_->Serve(config_.http_listen, &error)) {
    log::Error("http.listen {}: {}", config_.http_listen, error);
    return false;
  }
  const std::string host = config_.http_listen.substr(0, config_.http_listen.rfind(':'));
  log::Info("http: serving /metrics, /healthz, /readyz on {}:{}", host, metrics_->port());
  return true;
}

int ConsumerGroup::Run(const std::atomic<bool>& stop) {
  if (metrics_ && !ServeMetrics()) return 1;
  return RunMembers(stop);
}

int ConsumerGroup::RunMembers(const std::atomic<bool>& stop) {
  if (members_.size() == 1) return members_.front()->Run(stop);
  // The members read `halt`; this thread sets it when `stop` becomes true
  // or a member returned by itself. A member that returns says so through
  // `done_`; `stop` is set by a signal handler, which can notify nobody, so
  // it is read at every wake-up and at least every 100 ms, as often as the
  // members read theirs.
  std::atomic<bool> halt{false};
  std::vector<int> codes(members_.size(), 0);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < members_.size(); ++i)
    threads.emplace_back([&, i] {
      codes[i] = members_[i]->Run(halt);
      outbox::MutexLock lock(&mu_);
      ++returned_;
      done_.SignalAll();
    });
  {
    outbox::MutexLock lock(&mu_);
    while (!stop.load() && returned_ == 0)
      clock_->WaitUntil(&mu_, &done_, clock_->Now() + std::chrono::milliseconds(100), [this] {
        mu_.AssertHeld();
        return returned_ > 0;
      });
  }
  halt = true;
  for (auto& t : threads) t.join();
  return *std::max_element(codes.begin(), codes.end());
}

namespace {

// A config filled in code is held to the YAML loader's rules: a broken one
// is refused here, before anything starts, not found out by a consumer
// that waits without a word.
const ConsumerConfig& Checked(const ConsumerConfig& config) {
  if (std::string problem = Validate(config); !problem.empty())
    throw std::invalid_argument("inbox consumer config: " + problem);
  return config;
}

}  // namespace

Consumer::Consumer(const ConsumerConfig& config, Handler& handler, const ConsumerOptions& options)
    : impl_(std::make_unique<ConsumerGroup>(Checked(config), handler, options)) {}

Consumer::~Consumer() = default;

int Consumer::Run(const std::atomic<bool>& stop) { return impl_->Run(stop); }

}  // namespace outbox::inbox
