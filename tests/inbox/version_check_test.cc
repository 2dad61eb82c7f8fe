// The version check's decision (src/inbox/version_check.cc),
// table-driven; the consumer's tests run it against MariaDB.
#include "inbox/version_check.h"

#include <catch2/catch.hpp>

using outbox::inbox::DecideVersion;
using outbox::inbox::Event;
using outbox::inbox::VersionAction;
using outbox::inbox::VersionCheck;

TEST_CASE("the version check decides apply or stale or park per mode", "[consumer][version]") {
  struct Row {
    VersionCheck check;
    int64_t outbox_id, version, last_version, last_outbox_id;
    VersionAction want;
  };
  const Row rows[] = {
      // none: everything new applies, late or not.
      {VersionCheck::kNone, 5, 0, 0, 9, VersionAction::kApply},
      {VersionCheck::kNone, 5, 2, 3, 9, VersionAction::kApply},
      // newer with aggregate_version: only a higher version applies.
      {VersionCheck::kNewer, 5, 1, 0, 0, VersionAction::kApply},
      {VersionCheck::kNewer, 5, 3, 1, 4, VersionAction::kApply},  // a gap is fine for newer
      {VersionCheck::kNewer, 5, 2, 3, 9, VersionAction::kStale},
      {VersionCheck::kNewer, 5, 3, 3, 9, VersionAction::kStale},
      // newer without it: outbox_id stands in.
      {VersionCheck::kNewer, 10, 0, 0, 9, VersionAction::kApply},
      {VersionCheck::kNewer, 8, 0, 0, 9, VersionAction::kStale},
      // strict: only the next version; a later one waits, an older one is stale.
      {VersionCheck::kStrict, 5, 1, 0, 0, VersionAction::kApply},
      {VersionCheck::kStrict, 5, 4, 3, 4, VersionAction::kApply},
      {VersionCheck::kStrict, 5, 3, 1, 4, VersionAction::kPark},
      {VersionCheck::kStrict, 5, 2, 0, 0, VersionAction::kPark},
      {VersionCheck::kStrict, 5, 2, 3, 9, VersionAction::kStale},
      {VersionCheck::kStrict, 5, 3, 3, 9, VersionAction::kStale},
  };
  for (const Row& r : rows) {
    INFO("mode " << static_cast<int>(r.check) << " outbox_id " << r.outbox_id << " version "
                 << r.version << " last " << r.last_version << "/" << r.last_outbox_id);
    CHECK(DecideVersion(r.check, Event{.outbox_id = r.outbox_id, .aggregate_version = r.version},
                        r.last_version, r.last_outbox_id) == r.want);
  }
}
