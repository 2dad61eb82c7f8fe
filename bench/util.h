#pragma once

// Small helpers for outbox-bench: clocks, statistics, child processes, /proc
// readings and a minimal HTTP GET. Nothing here knows about the relay.

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "subprocess.h"

namespace outbox::bench {

// Monotonic seconds (for durations) and wall-clock microseconds (comparable
// with timestamps other processes on this host put in payloads).
double MonoSeconds();
int64_t WallMicros();
void SleepSeconds(double s);

double Median(std::vector<double> v);
// q in [0, 1]; nearest-rank on a sorted copy. 0 for an empty vector.
double Quantile(std::vector<double> v, double q);

// CPU time (user + system) a process has used so far, in seconds; nullopt if
// it is gone.
std::optional<double> ProcessCpuSeconds(pid_t pid);
// The number of a field of /proc/PID/status ("Threads", "VmRSS" in kB);
// nullopt if unavailable.
std::optional<double> ProcessStatusNumber(pid_t pid, const std::string& field);
// A "VmRSS"-style field of /proc/PID/status in MiB; nullopt if unavailable.
std::optional<double> ProcessStatusMiB(pid_t pid, const std::string& field);

// A free TCP port on 127.0.0.1 (the kernel's choice; released before return).
int FreePort();

// GET http://127.0.0.1:port/path with a short timeout; nullopt on any error.
// Returns the body of a 2xx answer; *status (if given) gets the status code.
std::optional<std::string> HttpGet(int port, const std::string& path, int* status = nullptr);

// Sum of every sample of `metric` (all label sets) in a Prometheus text body.
double SumMetric(const std::string& body, const std::string& metric);

// A child process we started; stopped (SIGTERM, then SIGKILL after a grace
// period) when destroyed. Only ever signals its own pid.
class Child {
 public:
  Child() = default;
  // Starts argv[0] with stdin from /dev/null and stdout+stderr appended to
  // `log_path`. Throws std::runtime_error if it cannot start.
  Child(const std::vector<std::string>& argv, const std::string& log_path);
  Child(Child&& other) noexcept = default;
  Child& operator=(Child&& other) noexcept;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child();

  pid_t pid() const { return proc_.pid(); }
  bool running() { return proc_.running(); }
  // SIGTERM, wait up to `grace_s`, then SIGKILL. Returns the exit status
  // (as from waitpid) or -1.
  int Stop(double grace_s = 30);
  // SIGKILL (a crash, for the benchmark's fault stages) and reap.
  void Kill() { proc_.Kill(); }
  // Waits for the process to exit on its own, up to timeout_s; exit code or
  // -1 on timeout (the process is left running).
  int Wait(double timeout_s);

 private:
  outbox::Subprocess proc_;
};

// Reads a whole file; empty if missing.
std::string ReadFile(const std::string& path);
void WriteFile(const std::string& path, const std::string& text);
std::string Trim(const std::string& s);
// printf-style formatting into a std::string.
std::string Fmt(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace outbox::bench
