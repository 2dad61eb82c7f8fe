#include "support/notify_socket.h"

#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>

namespace outbox::testing {

NotifySocket::NotifySocket(std::string path) : path_(std::move(path)) {
  fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (fd_ < 0 || path_.size() >= sizeof addr.sun_path)
    throw std::runtime_error("NotifySocket: cannot create " + path_);
  std::memcpy(addr.sun_path, path_.c_str(), path_.size() + 1);
  if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    throw std::runtime_error("NotifySocket: cannot bind " + path_ + ": " + std::strerror(errno));
}

NotifySocket::~NotifySocket() {
  if (fd_ >= 0) ::close(fd_);
  ::unlink(path_.c_str());
}

std::string NotifySocket::Receive(std::chrono::milliseconds timeout) {
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return "";
  char buf[4096];
  ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

int NotifySocket::Drain() {
  int n = 0;
  pollfd p{fd_, POLLIN, 0};
  while (::poll(&p, 1, 0) > 0) {
    char buf[4096];
    if (::recv(fd_, buf, sizeof buf, 0) < 0) break;
    ++n;
  }
  return n;
}

}  // namespace outbox::testing
