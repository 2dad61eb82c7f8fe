#pragma once

#include <chrono>
#include <string>

namespace outbox::testing {

// A fake systemd NOTIFY_SOCKET: a unix datagram socket bound at `path`, for
// tests of the notify protocol (READY=1, WATCHDOG=1, STOPPING=1). Not
// thread-safe.
class NotifySocket {
 public:
  explicit NotifySocket(std::string path);
  ~NotifySocket();
  NotifySocket(const NotifySocket&) = delete;
  NotifySocket& operator=(const NotifySocket&) = delete;

  const std::string& path() const { return path_; }
  // The next datagram, or "" when none arrives within `timeout`.
  std::string Receive(std::chrono::milliseconds timeout);
  // Receives every datagram already waiting; returns how many there were.
  int Drain();

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace outbox::testing
