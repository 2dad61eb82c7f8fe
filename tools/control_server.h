#pragma once

// outbox-mock-broker's TCP control port (--control-port): the stdin command
// protocol (MockCluster::Command) on 127.0.0.1, one reply line per command
// line, for a test suite in another process (docs/TESTING.md "Against
// external servers"). Two more commands:
//   cluster N   a fresh mock cluster of N brokers for this connection, used
//               by its later commands and destroyed when it closes; replies
//               "ok bootstrap HOST:PORT,..."
//   bootstrap   "ok bootstrap ..." of the connection's cluster
// Without `cluster`, commands go to the broker's startup cluster.

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "mock_cluster.h"

namespace outbox::testing {

class ControlServer {
 public:
  // Listens on 127.0.0.1:`port` (0: any free port). Throws
  // std::runtime_error when it cannot.
  ControlServer(int port, MockCluster* startup_cluster);
  ~ControlServer();
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

  int port() const { return port_; }

 private:
  void Accept();
  void Serve(int fd);

  MockCluster* startup_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<int> connections_;      // guarded by mu_
  std::vector<std::thread> threads_;  // guarded by mu_
  std::thread acceptor_;
};

}  // namespace outbox::testing
