#pragma once

#include <functional>
#include <set>
#include <string>

#include "common/enum_names.h"
#include "common/status.h"

namespace outbox {

// A change of the shards a relay owns in its fleet (docs/DEPLOY.md "A
// fleet"): after it, the relay owns exactly `shards` of a topic with
// `partitions` partitions.
struct GroupAssignment {
  enum class Kind {
    kAssigned,   // shards were added
    kRevoked,    // shards were given back in a rebalance (a graceful hand-over)
    kLost,       // the group moved on without this relay (session timed out, fenced, fatal)
    kSuspended,  // no answer from the group's coordinator for too long: serve nothing
    kResumed,    // the coordinator answers again and the shards are still this relay's
    kResized,    // the topic's partition count changed (the services' shards move)
    // A new value goes here, with its name in kAssignmentKindNames.
  };
  Kind kind = Kind::kAssigned;
  std::set<int> shards;   // every shard to serve after the change (none while suspended)
  std::set<int> changed;  // the shards added (kAssigned, kResumed) or taken away
  int partitions = 0;     // the topic's partition count; 0 while not known
};

// The names ToString gives, in Kind's order.
inline constexpr const char* const kAssignmentKindNames[] = {"assigned",  "revoked", "lost",
                                                             "suspended", "resumed", "resized"};
static_assert(NamesEveryValue(kAssignmentKindNames, GroupAssignment::Kind::kResized));

inline const char* ToString(GroupAssignment::Kind kind) {
  return NameOf(kAssignmentKindNames, kind, "?");
}

// The seam to the fleet's group membership (Kafka's consumer group protocol
// in production, src/kafka/kafka_group_member.h). It only reports what the
// group decided; what to run is the caller's.
//
// Thread-safety: Start and Stop from one thread; Member and Problem from any.
class GroupMembership {
 public:
  // Called for each change, from the membership's own thread, in order. A
  // change that takes shards away is given back to the group only after
  // the listener returns, so the listener stops what those shards ran
  // first (in bounded time: the group waits for the rebalance to finish).
  using Listener = std::function<void(const GroupAssignment&)>;

  virtual ~GroupMembership() = default;
  // Joins the group. An error when the member cannot even be created (a bad
  // property); a group that cannot be reached is retried and reported by
  // Problem.
  [[nodiscard]] virtual Status Start(Listener listener) = 0;
  // Leaves the group (its shards move to the other members at once) and
  // ends the thread, in bounded time. The listener may be called meanwhile
  // with everything revoked.
  virtual void Stop() = 0;
  // True while the group counts this relay as a member and its coordinator
  // answers (after its first assignment, until it is lost, suspended by
  // the contact watchdog, or the relay leaves).
  virtual bool Member() const = 0;
  // Why it is not a member, or the last error the group reported; "" when
  // none.
  virtual std::string Problem() const = 0;
};

}  // namespace outbox
