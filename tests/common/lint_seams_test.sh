#!/usr/bin/env bash
# scripts/lint's "seams" check: src/ outside src/common/ passes it, and each
# planted violation in a copy is caught (and nothing allowed is).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

mapfile -t files < <(git ls-files 'src/*.cc' 'src/*.h' 2>/dev/null | grep -v '^src/common/' ||
  find src -name '*.cc' -o -name '*.h' | grep -v '^src/common/')
out=$(perl scripts/lib/lint_seams.pl "${files[@]}")
if [[ -n $out ]]; then
  echo "src/ does not pass the seams check:"; echo "$out"; exit 1
fi

cat >"$tmp/bad.cc" <<'CC'
std::mutex mu;
std::shared_mutex rw;
std::condition_variable cv;
void F() { std::lock_guard<std::mutex> lock(mu); }
auto t = std::chrono::steady_clock::now();
using Steady = std::chrono::steady_clock;
auto u = Steady::now();
time_t w = time(nullptr);
CC
cat >"$tmp/good.cc" <<'CC'
// std::mutex and steady_clock::now() in a comment are fine
Mutex mu;
CondVar cv{&mu};
void G(Clock& clock) {
  MutexLock lock(&mu);
  const char* s = "std::mutex inside a string";
  auto t = clock.Now();
  std::chrono::steady_clock::time_point deadline = t;
}
CC
bad=$(perl scripts/lib/lint_seams.pl "$tmp/bad.cc")
good=$(perl scripts/lib/lint_seams.pl "$tmp/good.cc")
fail=0
for line in 1:mutex 2:mutex 3:condition 4:mutex 4:holder 5:clock 6:alias 7:clock 8:'C time'; do
  n=${line%%:*} what=${line#*:}
  grep -q "bad.cc:$n: .*$what" <<<"$bad" || { echo "not caught: line $n ($what)"; fail=1; }
done
[[ $(wc -l <<<"$bad") -eq 9 ]] || { echo "expected 9 findings, got:"; echo "$bad"; fail=1; }
[[ -z $good ]] || { echo "false findings:"; echo "$good"; fail=1; }
((fail == 0)) && echo "lint seams: src/ passes; 9 planted violations caught, none in allowed code"
exit $fail
