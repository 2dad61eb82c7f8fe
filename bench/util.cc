#include "util.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace outbox {
namespace bench {

double MonoSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int64_t WallMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void SleepSeconds(double s) {
  if (s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(s));
}

double Median(std::vector<double> v) { return Quantile(std::move(v), 0.5); }

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  if (q <= 0) return v.front();
  if (q >= 1) return v.back();
  if (q == 0.5 && v.size() % 2 == 0) return (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  // Nearest rank: the smallest value with at least q of the samples <= it.
  size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::max<size_t>(rank, 1) - 1];
}

std::optional<double> ProcessCpuSeconds(pid_t pid) {
  std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  if (stat.empty()) return std::nullopt;
  // The command name (field 2) may contain spaces: fields are counted after ')'.
  size_t close = stat.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream in(stat.substr(close + 2));
  std::string field;
  double utime = 0, stime = 0;
  // After ')': state(3) ppid(4) ... utime(14) stime(15).
  for (int i = 3; i <= 15 && in >> field; ++i) {
    if (i == 14) utime = std::stod(field);
    if (i == 15) stime = std::stod(field);
  }
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

std::optional<double> ProcessStatusNumber(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) {
      std::istringstream v(line.substr(field.size() + 1));
      double n = 0;
      if (v >> n) return n;
    }
  }
  return std::nullopt;
}

std::optional<double> ProcessStatusMiB(pid_t pid, const std::string& field) {
  auto kb = ProcessStatusNumber(pid, field);
  if (!kb) return std::nullopt;
  return *kb / 1024.0;
}

int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("socket: " + std::string(strerror(errno)));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof(a);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    close(fd);
    throw std::runtime_error("bind: " + std::string(strerror(errno)));
  }
  int port = ntohs(a.sin_port);
  close(fd);
  return port;
}

std::optional<std::string> HttpGet(int port, const std::string& path, int* status) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return std::nullopt;
  struct Closer {
    int fd;
    ~Closer() { close(fd); }
  } closer{fd};
  timeval tv{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) return std::nullopt;
  std::string req = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  if (send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size()))
    return std::nullopt;
  std::string resp;
  char buf[65536];
  for (;;) {
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n < 0) return std::nullopt;
    if (n == 0) break;
    resp.append(buf, static_cast<size_t>(n));
  }
  // "HTTP/1.1 200 OK\r\n...\r\n\r\nbody"
  size_t sp = resp.find(' ');
  size_t body = resp.find("\r\n\r\n");
  if (sp == std::string::npos || body == std::string::npos) return std::nullopt;
  int code = std::atoi(resp.c_str() + sp + 1);
  if (status) *status = code;
  if (code < 200 || code >= 300) return std::nullopt;
  return resp.substr(body + 4);
}

double SumMetric(const std::string& body, const std::string& metric) {
  double sum = 0;
  std::istringstream in(body);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(metric, 0) != 0) continue;
    char next = line.size() > metric.size() ? line[metric.size()] : '\0';
    if (next != '{' && next != ' ') continue;  // another metric with this prefix
    size_t sp = line.rfind(' ');
    if (sp != std::string::npos) sum += std::atof(line.c_str() + sp + 1);
  }
  return sum;
}

Child::Child(const std::vector<std::string>& argv, const std::string& log_path) {
  if (!proc_.Start(argv, outbox::CurrentEnvironment(), log_path))
    throw std::runtime_error("cannot start " + argv.at(0) + ": " + strerror(errno));
}

Child& Child::operator=(Child&& other) noexcept {
  if (this != &other) {
    Stop(5);
    proc_ = std::move(other.proc_);
  }
  return *this;
}

Child::~Child() { Stop(10); }

int Child::Wait(double timeout_s) {
  auto st = proc_.Wait(std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000)));
  return st ? outbox::ExitCode(*st) : -1;
}

int Child::Stop(double grace_s) {
  auto st = proc_.Stop(std::chrono::milliseconds(static_cast<int64_t>(grace_s * 1000)));
  return st.value_or(-1);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
}

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::string Fmt(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char buf[1024];
  int n = vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  if (n < 0) return "";
  if (static_cast<size_t>(n) < sizeof(buf)) return std::string(buf, static_cast<size_t>(n));
  std::string out(static_cast<size_t>(n) + 1, '\0');
  va_start(ap, fmt);
  vsnprintf(out.data(), out.size(), fmt, ap);
  va_end(ap);
  out.resize(static_cast<size_t>(n));
  return out;
}

}  // namespace bench
}  // namespace outbox
