#include "app/systemd_notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <thread>

#include "fakes/fake_clock.h"
#include "support/notify_socket.h"
#include "support/process.h"

using namespace outbox;
using namespace std::chrono_literals;

namespace {

// Sets an environment variable for the scope of one test.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() { ::unsetenv(name_); }

 private:
  const char* name_;
};

}  // namespace

TEST_CASE(
    "the notifier sends READY and WATCHDOG to NOTIFY_SOCKET and stops pinging while a loop "
    "is stalled",
    "[systemd]") {
  testing::TempDir dir;
  testing::NotifySocket socket(dir.path() + "/notify");
  ScopedEnv notify("NOTIFY_SOCKET", socket.path());
  ScopedEnv watchdog("WATCHDOG_USEC", "4000000");
  auto clock = std::make_shared<testing::FakeClock>();
  LivenessRegistry registry(clock);
  HeartbeatPtr claim = registry.Register("order/claim", 10s);
  boost::asio::io_context io;
  SystemdNotifier notifier(io, registry);
  CHECK(notifier.interval() == 2s);

  notifier.Ready();
  CHECK(socket.Receive(5s).rfind("READY=1", 0) == 0);
  CHECK(socket.Receive(5s) == "WATCHDOG=1");
  CHECK(notifier.TickForTesting());
  CHECK(socket.Receive(5s) == "WATCHDOG=1");

  clock->Advance(11s);  // the claim loop hangs
  CHECK_FALSE(notifier.TickForTesting());
  CHECK_FALSE(notifier.TickForTesting());
  claim->Beat();  // and recovers
  CHECK(notifier.TickForTesting());
  // Nothing was sent while stalled: the next datagram is the recovery's ping.
  CHECK(socket.Receive(5s) == "WATCHDOG=1");
  CHECK(socket.Drain() == 0);

  notifier.Stopping();
  CHECK(socket.Receive(5s).rfind("STOPPING=1", 0) == 0);
}

TEST_CASE("the watchdog timer pings every half WATCHDOG_USEC until a loop stalls", "[systemd]") {
  testing::TempDir dir;
  testing::NotifySocket socket(dir.path() + "/notify");
  ScopedEnv notify("NOTIFY_SOCKET", socket.path());
  ScopedEnv watchdog("WATCHDOG_USEC", "40000");  // a ping every 20 ms
  auto clock = std::make_shared<testing::FakeClock>();
  LivenessRegistry registry(clock);
  HeartbeatPtr claim = registry.Register("order/claim", 10s);
  boost::asio::io_context io;
  SystemdNotifier notifier(io, registry);
  notifier.Ready();
  std::thread runner([&] { io.run_for(5s); });
  CHECK(socket.Receive(5s).rfind("READY=1", 0) == 0);
  for (int i = 0; i < 3; ++i) CHECK(socket.Receive(5s) == "WATCHDOG=1");
  clock->Advance(11s);
  // The pings queued before the stall (the timer runs while the test reads),
  // then silence for 25 periods.
  for (int i = 0; i < 1000 && !socket.Receive(100ms).empty(); ++i) {
  }
  CHECK(socket.Receive(500ms).empty());
  claim->Beat();
  CHECK(socket.Receive(5s) == "WATCHDOG=1");
  boost::asio::post(io, [&] { notifier.Stopping(); });
  CHECK(socket.Receive(5s).rfind("STOPPING=1", 0) == 0);
  io.stop();
  runner.join();
}

TEST_CASE("without NOTIFY_SOCKET and WATCHDOG_USEC the notifier does nothing", "[systemd]") {
  ::unsetenv("NOTIFY_SOCKET");
  ::unsetenv("WATCHDOG_USEC");
  LivenessRegistry registry(std::make_shared<testing::FakeClock>());
  boost::asio::io_context io;
  SystemdNotifier notifier(io, registry);
  CHECK(notifier.interval() == 0us);
  notifier.Ready();
  CHECK(io.poll() == 0);  // no timer was armed
  notifier.Stopping();
}
