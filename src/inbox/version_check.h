#pragma once

#include <cstdint>

#include "inbox/consumer_config.h"
#include "inbox/event.h"

namespace outbox::inbox {

enum class VersionAction {
  kApply,  // the effect takes it
  kStale,  // older than (or as old as) the last applied: recorded, not applied
  kPark,   // strict: a later version than the next; waits for the gap to fill
};

// The version check of one event new to the inbox, against what its
// aggregate's effect row holds (0 and 0 for an aggregate never seen).
// newer compares aggregate_version when the event has one, else outbox_id
// (whose order per aggregate is the relay's publish order); strict needs
// aggregate_version (ParseEvent refuses an event without it).
VersionAction DecideVersion(VersionCheck check, const Event& event, int64_t last_version,
                            int64_t last_outbox_id);

}  // namespace outbox::inbox
