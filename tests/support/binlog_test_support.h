#pragma once

// Helpers for the tests of the binlog wake-up against the test MariaDB
// (tests/integration/binlog_*_test.cc, relay_binlog_test.cc).

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "binlog/binlog_options.h"
#include "binlog/binlog_stream.h"
#include "binlog/binlog_streams.h"

namespace outbox::testing {

using binlog::StreamProblem;
using binlog::StreamState;

// Counts wake-ups; its callback is the cheap kind a service would pass.
class Waker {
 public:
  binlog::BinlogStreams::NoticeFn Callback() {
    return [this](binlog::BinlogStreams::Notice why) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        ++count_;
        inserts_ += why == binlog::BinlogStreams::Notice::kInsert ? 1 : 0;
        last_ = std::chrono::steady_clock::now();
      }
      cv_.notify_all();
    };
  }
  int count() {
    std::lock_guard<std::mutex> lock(mu_);
    return count_;
  }
  int inserts() {
    std::lock_guard<std::mutex> lock(mu_);
    return inserts_;
  }
  std::chrono::steady_clock::time_point last() {
    std::lock_guard<std::mutex> lock(mu_);
    return last_;
  }
  // True once count() > `seen`, false after `timeout`.
  bool WaitAbove(int seen, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return count_ > seen; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int count_ = 0;
  int inserts_ = 0;
  std::chrono::steady_clock::time_point last_;
};

// Records a stream's state changes (the problems it went through).
class StateLog {
 public:
  binlog::BinlogStream::StateCallback Callback() {
    return [this](const binlog::StreamState& s) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        states_.push_back(s);
      }
      cv_.notify_all();
    };
  }
  // Waits until some recorded state satisfies `pred`; returns it (or a
  // default state with problem kStarting after `timeout`).
  binlog::StreamState WaitFor(const std::function<bool(const binlog::StreamState&)>& pred,
                              std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    binlog::StreamState found;
    cv_.wait_for(lock, timeout, [&] {
      for (const auto& s : states_)
        if (pred(s)) {
          found = s;
          return true;
        }
      return false;
    });
    return found;
  }
  void Clear() {
    std::lock_guard<std::mutex> lock(mu_);
    states_.clear();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<binlog::StreamState> states_;
};

// Options for the test server (the administrator account, which holds the
// replication grants) with short heartbeat, stall and backoff timings.
binlog::BinlogOptions TestBinlogOptions();

// FAILs the test unless the test server runs with the binary log (scripts/test).
void RequireLogBin();

}  // namespace outbox::testing
