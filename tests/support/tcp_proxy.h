#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace outbox::testing {

// A TCP proxy on 127.0.0.1 (a free port) to 127.0.0.1:`target_port`, for
// faults a real server cannot be asked for, and for what stands between a
// relay and its database in production (a DNS name, a VIP, a proxy):
// - Pause() stops forwarding in both directions while the connections stay
//   open (a stalled peer); Resume() forwards again.
// - Blackhole() is Pause() that also stops accepting: a new connection's
//   handshake gets no answer (the kernel's backlog completes the TCP part),
//   as behind a network partition that drops packets; Heal() ends both.
// - DropAll() closes every connection (a reset).
// - SetTarget() moves the proxy to another backend, as a DNS or VIP move
//   after a failover: new connections go there, the ones already open stay
//   on the backend they were opened to, as pooled connections do.
// One thread; all methods thread-safe.
class TcpProxy {
 public:
  explicit TcpProxy(int target_port);
  ~TcpProxy();
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  int port() const { return port_; }
  void Pause() { paused_ = true; }
  void Resume() { paused_ = false; }
  void Blackhole() {
    accepting_ = false;
    paused_ = true;
  }
  void Heal() {
    paused_ = false;
    accepting_ = true;
  }
  void DropAll() { drop_ = true; }
  void SetTarget(int target_port) { target_port_ = target_port; }
  int target() const { return target_port_; }
  // Open connections by backend port (as of the proxy's last loop, 20 ms).
  std::map<int, int> OpenByTarget() const;

 private:
  struct Pair {
    int client;
    int server;
    int target;  // the backend's port
  };
  void Run();
  void Accept();
  bool Pump(int from, int to);
  void Publish();

  std::atomic<int> target_port_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> paused_{false};
  std::atomic<bool> accepting_{true};
  std::atomic<bool> drop_{false};
  std::atomic<bool> stop_{false};
  std::vector<Pair> pairs_;  // proxy thread only
  mutable std::mutex mu_;
  std::map<int, int> open_;  // guarded by mu_
  std::thread thread_;
};

}  // namespace outbox::testing
