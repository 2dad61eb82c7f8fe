#!/usr/bin/env bash
# scripts/lint's "logs" check: src/ passes it, and each planted violation in
# a copy is caught (and nothing allowed is).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

mapfile -t files < <(git ls-files 'src/*.cc' 'src/*.h' 2>/dev/null | grep -v '^src/common/log\.' ||
  find src -name '*.cc' -o -name '*.h' | grep -v '^src/common/log\.')
out=$(perl scripts/lib/lint_logs.pl "${files[@]}")
if [[ -n $out ]]; then
  echo "src/ does not pass the logs check:"; echo "$out"; exit 1
fi

cat >"$tmp/bad.cc" <<'CC'
void F(const std::string& name, int n) {
  spdlog::info("x {}", name);
  LogWarn("service " + name + " failed", {{"count", n}});
  LogInfo(fmt::format("{} rows", n));
  LogError(message, {});
  Log(spdlog::level::info, name);
  LogAtSyslogLevel(level, text, {{"a", "b"}});
}
CC
cat >"$tmp/good.cc" <<'CC'
// spdlog::info("in a comment") and LogWarn(name) in a comment are fine
void G(const std::string& name, int n) {
  const char* s = "spdlog:: inside a string";
  LogWarn("a failed", {{"service", name}, {"count", n}});
  LogInfo(
      "a long message "
      "in two literals",
      {{"service", name}});
  LogDebug("no fields");
  LogAtSyslogLevel(level, "librdkafka", {{"facility", fac}});
  LogBatch(name);  // not a log call
  OnLog(name);
}
CC
bad=$(perl scripts/lib/lint_logs.pl "$tmp/bad.cc")
good=$(perl scripts/lib/lint_logs.pl "$tmp/good.cc")
fail=0
for line in 2:spdlog 3:LogWarn 4:LogInfo 5:LogError 6:spdlog 6:Log 7:LogAtSyslogLevel; do
  n=${line%%:*} what=${line#*:}
  grep -q "bad.cc:$n: $what" <<<"$bad" || { echo "not caught: line $n ($what)"; fail=1; }
done
[[ $(wc -l <<<"$bad") -eq 7 ]] || { echo "expected 7 findings, got:"; echo "$bad"; fail=1; }
[[ -z $good ]] || { echo "false findings:"; echo "$good"; fail=1; }
((fail == 0)) && echo "lint logs: src/ passes; 7 planted violations caught, none in allowed code"
exit $fail
