#!/usr/bin/env bash
# scripts/lint's "logs" check: src/ passes it, and each planted violation in
# a copy is caught (and nothing allowed is).
. "$(dirname "${BASH_SOURCE[0]}")/lint_case.sh"

cat >"$lint_tmp/bad.cc" <<'CC'
void F(const std::string& name, int n) {
  spdlog::info("x {}", name);
  LogWarn("service " + name + " failed", {{"count", n}});
  LogInfo(fmt::format("{} rows", n));
  LogError(message, {});
  Log(spdlog::level::info, name);
  LogAtSyslogLevel(level, text, {{"a", "b"}});
}
CC
cat >"$lint_tmp/good.cc" <<'CC'
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
# --spdlog-only (the inbox library, whose messages are formatted sentences):
# the two spdlog:: lines and nothing else.
only=$(perl scripts/lib/lint_logs.pl --spdlog-only "$lint_tmp/bad.cc")
if [[ $(wc -l <<<"$only") -ne 2 || $only != *"bad.cc:2: spdlog"*"bad.cc:6: spdlog"* ]]; then
  echo "--spdlog-only found:"; echo "$only"; exit 1
fi
# The inbox library (src/inbox/, formatted sentences) passes --spdlog-only.
inbox=$(perl scripts/lib/lint_logs.pl --spdlog-only src/inbox/*.cc src/inbox/*.h)
[[ -z $inbox ]] || { echo "src/inbox/ does not pass --spdlog-only:"; echo "$inbox"; exit 1; }
lint_case logs scripts/lib/lint_logs.pl '^src/common/log\.\|^src/inbox/' \
  2:spdlog 3:LogWarn 4:LogInfo 5:LogError 6:spdlog 6:Log 7:LogAtSyslogLevel
