#pragma once

#include <array>
#include <utility>

namespace outbox::inbox {

// What keeps a consumer-group member from consuming: each is warned about
// once while it lasts (with its fix), and said to have cleared when it did.
enum class Blocker {
  kDatabase,  // no connection, or the server refuses the inbox's statements
  kTables,    // a table of the inbox's is missing
  kBroker,    // no broker answers (all down, or a name that does not resolve)
};

class Blockers {
 public:
  // True when `b` was not raised already: the caller warns then, and only then.
  bool Raise(Blocker b) { return !std::exchange(raised_[Index(b)], true); }
  // True when `b` was raised: the caller says it cleared.
  bool Clear(Blocker b) { return std::exchange(raised_[Index(b)], false); }
  bool raised(Blocker b) const { return raised_[Index(b)]; }

 private:
  static size_t Index(Blocker b) { return static_cast<size_t>(b); }
  std::array<bool, 3> raised_{};
};

}  // namespace outbox::inbox
