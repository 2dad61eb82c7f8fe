#include "inbox/version_check.h"

namespace outbox::inbox {

VersionAction DecideVersion(VersionCheck check, const Event& ev, int64_t last_version,
                            int64_t last_outbox_id) {
  switch (check) {
    case VersionCheck::kNone:
      return VersionAction::kApply;
    case VersionCheck::kNewer:
      if (ev.aggregate_version > 0)
        return ev.aggregate_version > last_version ? VersionAction::kApply : VersionAction::kStale;
      return ev.outbox_id > last_outbox_id ? VersionAction::kApply : VersionAction::kStale;
    case VersionCheck::kStrict:
      if (ev.aggregate_version <= last_version) return VersionAction::kStale;
      return ev.aggregate_version == last_version + 1 ? VersionAction::kApply
                                                      : VersionAction::kPark;
  }
  return VersionAction::kApply;
}

}  // namespace outbox::inbox
