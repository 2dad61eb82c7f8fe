#!/usr/bin/env bash
# scripts/lint's "seams" check: src/ outside src/common/ passes it, and each
# planted violation in a copy is caught (and nothing allowed is).
. "$(dirname "${BASH_SOURCE[0]}")/lint_case.sh"

cat >"$lint_tmp/bad.cc" <<'CC'
std::mutex mu;
std::shared_mutex rw;
std::condition_variable cv;
void F() { std::lock_guard<std::mutex> lock(mu); }
auto t = std::chrono::steady_clock::now();
using Steady = std::chrono::steady_clock;
auto u = Steady::now();
time_t w = time(nullptr);
int x = relay->scheduler.IdleWaitForTesting(view);
CC
cat >"$lint_tmp/good.cc" <<'CC'
// std::mutex and steady_clock::now() in a comment are fine
Mutex mu;
CondVar cv{&mu};
void G(Clock& clock) {
  MutexLock lock(&mu);
  const char* s = "std::mutex inside a string";
  auto t = clock.Now();
  std::chrono::steady_clock::time_point deadline = t;
}
bool TickForTesting() { return Tick(); }
CC
lint_case seams scripts/lib/lint_seams.pl '^src/common/' \
  '1:.*mutex' '2:.*mutex' '3:.*condition' '4:.*mutex' '4:.*holder' '5:.*clock' '6:.*alias' \
  '7:.*clock' '8:.*C time' '9:.*test seam'
