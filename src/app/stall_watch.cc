#include "app/stall_watch.h"

#include "common/log.h"

namespace outbox {

StallWatch::Changes StallWatch::Update(const std::vector<Stall>& stalls) {
  Changes changes;
  std::set<std::string> now;
  for (const auto& s : stalls) {
    now.insert(s.name);
    if (stalled_.count(s.name)) continue;
    changes.stalled.push_back(s.name);
    std::string detail = DescribeStalls({s});
    detail.pop_back();  // its '\n'
    LogError("loop stalled: /healthz answers 503 and the systemd watchdog is no longer fed",
             {{"loop", s.name}, {"error", detail}});
  }
  for (const auto& name : stalled_) {
    if (now.count(name)) continue;
    changes.recovered.push_back(name);
    LogInfo("loop makes progress again", {{"loop", name}});
  }
  stalled_ = std::move(now);
  return changes;
}

}  // namespace outbox
