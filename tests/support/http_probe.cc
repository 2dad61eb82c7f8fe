#include "support/http_probe.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <regex>

namespace outbox::testing {

namespace {

int ConnectLoopback(int port, int timeout_ms) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

int FreeTcpPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

HttpReply HttpGet(int port, const std::string& path, int timeout_ms) {
  HttpReply reply;
  int fd = ConnectLoopback(port, timeout_ms);
  if (fd < 0) return reply;
  std::string req = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  if (send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) {
    close(fd);
    return reply;
  }
  std::string raw;
  char buf[16384];
  for (ssize_t n; (n = recv(fd, buf, sizeof(buf), 0)) > 0;) raw.append(buf, static_cast<size_t>(n));
  close(fd);
  // "HTTP/1.1 200 OK\r\n...\r\n\r\nbody"
  size_t sp = raw.find(' ');
  if (raw.compare(0, 5, "HTTP/") != 0 || sp == std::string::npos) return reply;
  reply.status = std::atoi(raw.c_str() + sp + 1);
  size_t body = raw.find("\r\n\r\n");
  if (body != std::string::npos) reply.body = raw.substr(body + 4);
  return reply;
}

int ServingPort(const std::string& log) {
  // The relay's JSON ("address":"127.0.0.1:PORT") or text
  // (address=127.0.0.1:PORT); the example consumer's "on 127.0.0.1:PORT".
  static const std::regex kServing(
      R"(serving /metrics, /healthz, /readyz(?:[^\n]*address["=:]+| on )[0-9.]+:(\d+))");
  std::smatch m;
  return std::regex_search(log, m, kServing) ? std::stoi(m[1]) : 0;
}

}  // namespace outbox::testing
