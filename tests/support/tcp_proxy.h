#pragma once

#include <atomic>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace outbox::testing {

// A TCP proxy on 127.0.0.1 (a free port) to 127.0.0.1:`target_port`, for
// faults a real server cannot be asked for: Pause() stops forwarding in both
// directions while the connections stay open (a stalled peer); Resume()
// forwards again; DropAll() closes every connection. One thread; all methods
// thread-safe.
class TcpProxy {
 public:
  explicit TcpProxy(int target_port);
  ~TcpProxy();
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  int port() const { return port_; }
  void Pause() { paused_ = true; }
  void Resume() { paused_ = false; }
  void DropAll() { drop_ = true; }

 private:
  void Run();
  bool Pump(int from, int to);

  int target_port_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> paused_{false};
  std::atomic<bool> drop_{false};
  std::atomic<bool> stop_{false};
  std::vector<std::pair<int, int>> pairs_;  // client, server; proxy thread only
  std::thread thread_;
};

}  // namespace outbox::testing
