#include "consumer_group.h"

#include <algorithm>
#include <chrono>
#include <thread>

namespace inbox {

ConsumerGroup::ConsumerGroup(const ConsumerConfig& config, Handler& handler,
                             ConsumerOptions options, const TestSeams& seams) {
  const int n = std::max(1, config.concurrency);
  for (int i = 0; i < n; ++i)
    members_.push_back(std::make_unique<InboxConsumer>(config, handler, options, seams));
}

int ConsumerGroup::Run(const std::atomic<bool>& stop) {
  if (members_.size() == 1) return members_.front()->Run(stop);
  // The members read `halt`; this thread sets it when `stop` (set by a
  // signal handler, which can notify nobody) becomes true or a member
  // returned by itself. Read as often as the members read theirs.
  std::atomic<bool> halt{false};
  std::atomic<size_t> running{members_.size()};
  std::vector<int> codes(members_.size(), 0);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < members_.size(); ++i)
    threads.emplace_back([&, i] {
      codes[i] = members_[i]->Run(halt);
      --running;
    });
  while (!stop.load() && running.load() == members_.size())
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  halt = true;
  for (auto& t : threads) t.join();
  return *std::max_element(codes.begin(), codes.end());
}

Consumer::Consumer(const ConsumerConfig& config, Handler& handler, ConsumerOptions options)
    : impl_(std::make_unique<ConsumerGroup>(config, handler, options)) {}

Consumer::~Consumer() = default;

int Consumer::Run(const std::atomic<bool>& stop) { return impl_->Run(stop); }

}  // namespace inbox
