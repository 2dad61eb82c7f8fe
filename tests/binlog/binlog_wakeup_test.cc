#include <catch2/catch.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "binlog/binlog_wakeup_source.h"
#include "binlog/wake_signal.h"
#include "fakes/fake_clock.h"

using outbox::DefaultClock;
using outbox::PollWakeupSource;
using outbox::WakeCause;
using outbox::binlog::WakeSignal;
using outbox::testing::FakeClock;
using namespace std::chrono_literals;

namespace {

// A WakeSignal on a fake clock, and what a wait that does not block finds.
struct Signal {
  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>();
  WakeSignal signal{clock};
  WakeCause Take() { return signal.WaitUntil(clock->Now()); }
};

// What happens to a WakeSignal, one step a word: `c` an update-only commit's
// event (Notify(false)), `i` an insert's, `x` ExpectOwnChange, `b`
// BeginOwnChange(2), `e0`/`e1`/`e2` EndOwnChange(2, n), `w` Wake (Interrupt),
// `s` a stream up/down change, `+N` N ms pass; and what a wait that does not
// block finds: `-` nothing, `C` kChange, `I` kInsert.
struct Script {
  const char* what;
  const char* steps;
};

// Runs `steps`; the first wait that found something else, or "".
std::string Run(const std::string& steps) {
  Signal s;
  std::istringstream in(steps);
  for (std::string w; in >> w;) {
    const char c = w[0];
    if (c == 'c' || c == 'i') s.signal.Notify(c == 'i');
    if (c == 'x') s.signal.ExpectOwnChange();
    if (c == 'b') s.signal.BeginOwnChange(2);
    if (c == 'e') s.signal.EndOwnChange(2, w[1] - '0');
    if (c == 'w') s.signal.Wake();
    if (c == 's') s.signal.StreamChanged();
    if (c == '+') s.clock->Advance(std::chrono::milliseconds(std::stoi(w.substr(1))));
    const WakeCause want = c == 'C'   ? WakeCause::kChange
                           : c == 'I' ? WakeCause::kInsert
                                      : WakeCause::kDeadline;
    if ((c == '-' || c == 'C' || c == 'I') && s.Take() != want) return w;
  }
  return "";
}

}  // namespace

TEST_CASE("binlog: a wake-up that arrives while the loop claims is kept for its next wait",
          "[binlog-unit]") {
  WakeSignal signal(DefaultClock());
  signal.Notify();  // arrives before the loop waits
  const auto far = DefaultClock()->Now() + 10s;
  CHECK(signal.WaitUntil(far) == WakeCause::kChange);  // returns at once, woken
  // Consumed: the next wait runs to its deadline.
  CHECK(signal.WaitUntil(DefaultClock()->Now() + 20ms) == WakeCause::kDeadline);
  // An insert among several wake-ups wins.
  signal.Notify(false);
  signal.Notify(true);
  signal.Notify(false);
  CHECK(signal.WaitUntil(far) == WakeCause::kInsert);
}

TEST_CASE("binlog: a wake-up from another thread ends a wait before its deadline",
          "[binlog-unit]") {
  WakeSignal signal(DefaultClock());
  std::thread notifier([&] {
    std::this_thread::sleep_for(20ms);
    signal.Notify(true);
  });
  const auto start = DefaultClock()->Now();
  CHECK(signal.WaitUntil(start + 30s) == WakeCause::kInsert);
  CHECK(DefaultClock()->Now() - start < 30s);
  notifier.join();
}

TEST_CASE("binlog: wakeup poll waits poll_interval and only Interrupt wakes it", "[binlog-unit]") {
  PollWakeupSource w(DefaultClock());
  CHECK_FALSE(w.binlog_up());
  CHECK(w.WaitUntil(DefaultClock()->Now() + 10ms) == WakeCause::kDeadline);
  w.Interrupt();
  CHECK(w.WaitUntil(DefaultClock()->Now() + 10s) == WakeCause::kChange);
}

TEST_CASE("binlog: the relay's own commits do not wake its loop and foreign ones always do",
          "[binlog-unit]") {
  const Script scripts[] = {
      {"a claim's event after ExpectOwnChange; a foreign change that came while it was "
       "expected wakes when it comes",
       "x c - c C -"},
      {"a claim's event before ExpectOwnChange: its wake-up is withdrawn", "c x - c C"},
      {"a settle's event while it writes or after, expected before it wrote",
       "b c - e1 - b e2 c c -"},
      {"a foreign change while a settle that changed nothing was expected wakes when it ends",
       "b c - e0 C - b e0 - c C"},
      {"a foreign change while a settle that made a commit was expected wakes when its event "
       "comes",
       "b c e1 - c C"},
      {"a claim's commit between a settle's begin and end", "b c x c e1 - c C"},
      {"an expectation whose event never comes is forgotten a second after the newest",
       "x +999 c - x b e1 +1001 c C x +900 x +900 c c -"},
      {"a stream up or down change wakes and resets what was expected", "x b s C c C c s C -"},
      {"inserts and Interrupt wake and are not taken for own events", "x i I b w C c c - e1 -"},
  };
  for (const Script& script : scripts) {
    INFO(script.what << ": " << script.steps);
    CHECK(Run(script.steps) == "");
  }
}

TEST_CASE("binlog: wakeup poll takes no note of the relay's own commits", "[binlog-unit]") {
  Signal s;
  PollWakeupSource poll(s.clock);
  poll.ExpectOwnChange();  // no-ops
  poll.BeginOwnChange(2);
  poll.Interrupt();
  CHECK(poll.WaitUntil(s.clock->Now()) == WakeCause::kChange);
  CHECK(poll.inserts_in_last_wake() == 0);
}

TEST_CASE("binlog: the insert commits merged into one wake-up are counted", "[binlog-unit]") {
  Signal s;
  CHECK(s.signal.inserts_in_last_wake() == 0);
  s.signal.Notify(true);
  s.signal.Notify(false);
  s.signal.Notify(true);
  s.signal.Notify(true);
  CHECK(s.Take() == WakeCause::kInsert);
  CHECK(s.signal.inserts_in_last_wake() == 3);
  s.signal.Notify(true);
  CHECK(s.Take() == WakeCause::kInsert);
  CHECK(s.signal.inserts_in_last_wake() == 1);
  // Other wake-ups leave the last insert wake-up's count.
  s.signal.Wake();
  CHECK(s.Take() == WakeCause::kChange);
  CHECK(s.signal.inserts_in_last_wake() == 1);
}
