#include "app/stall_watch.h"

#include "common/log.h"

namespace outbox {

namespace {
// The service a loop belongs to: "order/claim" is service order's; a binlog
// stream ("binlog/db1:3306") is a server's, shared by its services. Service
// names hold no ':' (config: [A-Za-z0-9_.-]), server addresses do.
std::string ServiceOfLoop(const std::string& loop) {
  const size_t slash = loop.find('/');
  if (slash == std::string::npos) return "";
  if (loop.compare(0, slash, "binlog") == 0 && loop.find(':', slash) != std::string::npos)
    return "";
  return loop.substr(0, slash);
}
}  // namespace

StallWatch::Changes StallWatch::Update(const std::vector<Stall>& stalls) {
  Changes changes;
  std::set<std::string> now;
  for (const auto& s : stalls) {
    now.insert(s.name);
    if (stalled_.count(s.name)) continue;
    changes.stalled.push_back(s.name);
    std::string detail = DescribeStalls({s});
    detail.pop_back();  // its '\n'
    // A binlog stream's loop belongs to no one service: no service field.
    const std::string service = ServiceOfLoop(s.name);
    if (service.empty())
      LogError("loop stalled: /healthz answers 503 and the systemd watchdog is no longer fed",
               {{"loop", s.name}, {"error", detail}});
    else
      LogError("loop stalled: /healthz answers 503 and the systemd watchdog is no longer fed",
               {{"service", service}, {"loop", s.name}, {"error", detail}});
  }
  for (const auto& name : stalled_) {
    if (now.count(name)) continue;
    changes.recovered.push_back(name);
    if (const std::string service = ServiceOfLoop(name); service.empty())
      LogInfo("loop makes progress again", {{"loop", name}});
    else
      LogInfo("loop makes progress again", {{"service", service}, {"loop", name}});
  }
  stalled_ = std::move(now);
  return changes;
}

}  // namespace outbox
