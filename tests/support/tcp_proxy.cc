#include "support/tcp_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>

namespace outbox::testing {

namespace {

sockaddr_in Loopback(int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

}  // namespace

TcpProxy::TcpProxy(int target_port) : target_port_(target_port) {
  listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a = Loopback(0);
  if (listener_ < 0 || ::bind(listener_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      ::listen(listener_, 16) != 0)
    throw std::runtime_error("TcpProxy: cannot listen");
  socklen_t len = sizeof(a);
  ::getsockname(listener_, reinterpret_cast<sockaddr*>(&a), &len);
  port_ = ntohs(a.sin_port);
  thread_ = std::thread([this] { Run(); });
}

TcpProxy::~TcpProxy() {
  stop_ = true;
  thread_.join();
  for (const Pair& p : pairs_) {
    ::close(p.client);
    ::close(p.server);
  }
  ::close(listener_);
}

std::map<int, int> TcpProxy::OpenByTarget() const {
  std::lock_guard<std::mutex> lock(mu_);
  return open_;
}

void TcpProxy::Publish() {
  std::map<int, int> open;
  for (const Pair& p : pairs_) ++open[p.target];
  std::lock_guard<std::mutex> lock(mu_);
  open_.swap(open);
}

void TcpProxy::Accept() {
  int client = ::accept(listener_, nullptr, nullptr);
  int server = ::socket(AF_INET, SOCK_STREAM, 0);
  const int target = target_port_;
  sockaddr_in a = Loopback(target);
  if (client >= 0 && server >= 0 &&
      ::connect(server, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0) {
    pairs_.push_back({client, server, target});
  } else {
    if (client >= 0) ::close(client);
    if (server >= 0) ::close(server);
  }
}

bool TcpProxy::Pump(int from, int to) {
  char buf[16384];
  ssize_t n = ::read(from, buf, sizeof(buf));
  if (n <= 0) return false;
  for (ssize_t off = 0; off < n;) {
    ssize_t w = ::write(to, buf + off, static_cast<size_t>(n - off));
    if (w <= 0) return false;
    off += w;
  }
  return true;
}

void TcpProxy::Run() {
  while (!stop_) {
    if (drop_.exchange(false)) {
      for (const Pair& p : pairs_) {
        ::close(p.client);
        ::close(p.server);
      }
      pairs_.clear();
    }
    const bool paused = paused_;
    std::vector<pollfd> fds{{listener_, static_cast<short>(accepting_ ? POLLIN : 0), 0}};
    if (!paused)
      for (const Pair& p : pairs_) {
        fds.push_back({p.client, POLLIN, 0});
        fds.push_back({p.server, POLLIN, 0});
      }
    Publish();
    if (::poll(fds.data(), fds.size(), 20) <= 0) continue;
    if (fds[0].revents & POLLIN) Accept();
    std::vector<Pair> alive;
    for (size_t i = 0; i < pairs_.size(); ++i) {
      const Pair& p = pairs_[i];
      bool ok = true;
      if (!paused && fds.size() > 1 + 2 * i) {
        const pollfd& pc = fds[1 + 2 * i];
        const pollfd& ps = fds[2 + 2 * i];
        if (pc.revents & (POLLIN | POLLHUP | POLLERR)) ok = Pump(p.client, p.server);
        if (ok && (ps.revents & (POLLIN | POLLHUP | POLLERR))) ok = Pump(p.server, p.client);
      }
      if (ok) {
        alive.push_back(p);
      } else {
        ::close(p.client);
        ::close(p.server);
      }
    }
    pairs_.swap(alive);
  }
}

}  // namespace outbox::testing
