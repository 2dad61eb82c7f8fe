#include "relay/retry_policy.h"

#include <catch2/catch.hpp>

using namespace outbox;

TEST_CASE("backoff doubles from the initial delay up to the cap with bounded jitter", "[retry]") {
  RetryConfig c;
  c.max_attempts = 4;
  c.initial_backoff_ms = 1000;
  c.max_backoff_ms = 5000;
  RetryPolicy p(c, 42);
  CHECK(p.BaseBackoffMs(1) == 1000);
  CHECK(p.BaseBackoffMs(2) == 2000);
  CHECK(p.BaseBackoffMs(3) == 4000);
  CHECK(p.BaseBackoffMs(4) == 5000);
  CHECK(p.BaseBackoffMs(60) == 5000);
  for (int f = 1; f < 10; ++f) {
    int64_t base = p.BaseBackoffMs(f);
    for (int i = 0; i < 100; ++i) {
      int64_t d = p.BackoffMs(f);
      CHECK(d >= base - base / 2);
      CHECK(d <= base);
    }
  }
  CHECK_FALSE(p.Exhausted(3));
  CHECK(p.Exhausted(4));
}
