#pragma once

// Waiting in tests for something another thread or process does: a bounded
// poll and a latch. Header-only, so that every test executable can use them
// without linking a support file. Real time on purpose: a FakeClock
// (tests/fakes/fake_clock.h) moves the code under test, these bound the test.

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace outbox::testing {

// Polls `cond` every `poll` until it holds or `deadline` passes; returns
// whether it held (checked once more at the deadline).
inline bool WaitFor(const std::function<bool()>& cond, std::chrono::milliseconds deadline,
                    std::chrono::milliseconds poll = std::chrono::milliseconds(50)) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  while (std::chrono::steady_clock::now() < end) {
    if (cond()) return true;
    std::this_thread::sleep_for(poll);
  }
  return cond();
}

// A gate that callers wait at until the test opens it; counts the waiters
// (e.g. a store call that hangs until released). Thread-safe.
class Latch {
 public:
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    ++waiting_;
    cv_.wait(lock, [this] { return open_; });
  }
  void Open() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }
  // How many calls of Wait() have started (returned or not).
  int Waiting() {
    std::lock_guard<std::mutex> lock(mu_);
    return waiting_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
  int waiting_ = 0;
};

}  // namespace outbox::testing
