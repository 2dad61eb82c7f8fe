#include "control_server.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>

namespace outbox::testing {

ControlServer::ControlServer(int port, MockCluster* startup_cluster) : startup_(startup_cluster) {
  listener_ = socket(AF_INET, SOCK_STREAM, 0);
  const int one = 1;
  setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  socklen_t len = sizeof(addr);
  if (listener_ < 0 || bind(listener_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      listen(listener_, 16) != 0 ||
      getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    throw std::runtime_error("cannot listen on 127.0.0.1:" + std::to_string(port));
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { Accept(); });
}

ControlServer::~ControlServer() {
  stop_ = true;
  shutdown(listener_, SHUT_RDWR);
  acceptor_.join();
  close(listener_);
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : connections_) shutdown(fd, SHUT_RDWR);
    threads.swap(threads_);
  }
  for (auto& t : threads) t.join();
}

void ControlServer::Accept() {
  while (!stop_) {
    const int fd = accept(listener_, nullptr, nullptr);
    if (fd < 0) continue;
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) {
      close(fd);
      break;
    }
    connections_.push_back(fd);
    threads_.emplace_back([this, fd] { Serve(fd); });
  }
}

namespace {

// One line from `fd` (without its '\n'); false at end of stream.
bool ReadLine(int fd, std::string* line) {
  line->clear();
  char c;
  while (read(fd, &c, 1) == 1) {
    if (c == '\n') return true;
    *line += c;
  }
  return !line->empty();
}

}  // namespace

void ControlServer::Serve(int fd) {
  std::unique_ptr<MockCluster> own;
  std::string line;
  while (ReadLine(fd, &line)) {
    std::istringstream in(line);
    std::string cmd;
    in >> cmd;
    std::string reply;
    if (cmd == "cluster") {
      int brokers = 0;
      in >> brokers;
      if (brokers <= 0) {
        reply = "error usage: cluster BROKERS";
      } else {
        own.reset();
        own = std::make_unique<MockCluster>(brokers);
        reply = "ok bootstrap " + own->bootstrap();
      }
    } else if (cmd == "bootstrap") {
      reply = "ok bootstrap " + (own ? own->bootstrap() : startup_->bootstrap());
    } else {
      reply = (own ? own.get() : startup_)->Command(line);
    }
    reply += '\n';
    if (write(fd, reply.data(), reply.size()) != static_cast<ssize_t>(reply.size())) break;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    connections_.erase(std::remove(connections_.begin(), connections_.end(), fd),
                       connections_.end());
  }
  close(fd);
}

}  // namespace outbox::testing
