#include "fleet/start_retries.h"

#include <algorithm>

namespace outbox {

bool StartRetries::Failed(const std::string& service, const std::string& cause,
                          Clock::TimePoint now) {
  Entry& e = book_[service];
  const bool news = e.failures == 0 || e.cause != cause;
  e.cause = cause;
  ++e.failures;
  auto wait = kFirst;
  for (int i = 1; i < e.failures && wait < kMax; ++i) wait *= 2;
  e.next = now + std::min(wait, kMax);
  return news;
}

void StartRetries::Forget(const std::string& service) { book_.erase(service); }

void StartRetries::KeepOnly(const std::vector<std::string>& wanted) {
  std::erase_if(book_, [&](const auto& kv) {
    return std::find(wanted.begin(), wanted.end(), kv.first) == wanted.end();
  });
}

bool StartRetries::Due(const std::string& service, Clock::TimePoint now) const {
  auto it = book_.find(service);
  return it == book_.end() || now >= it->second.next;
}

std::optional<Clock::TimePoint> StartRetries::NextDue() const {
  std::optional<Clock::TimePoint> next;
  for (const auto& [name, e] : book_)
    if (!next || e.next < *next) next = e.next;
  return next;
}

int StartRetries::FailuresForTesting(const std::string& service) const {
  auto it = book_.find(service);
  return it == book_.end() ? 0 : it->second.failures;
}

}  // namespace outbox
