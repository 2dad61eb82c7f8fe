#pragma once

#include <string>

#include "kafka/group_membership.h"

namespace outbox::testing {

// A group that assigns what the test says, on the test's thread.
class FakeMembership : public GroupMembership {
 public:
  Status Start(Listener listener) override {
    listener_ = std::move(listener);
    return start_status;
  }
  void Stop() override { stopped = true; }
  bool Member() const override { return member; }
  std::string Problem() const override { return problem; }

  // As the group would: the membership changes, then the listener hears.
  void Assign(GroupAssignment a, bool now_member = true) {
    member = now_member;
    listener_(a);
  }

  Status start_status = Status::Ok();
  bool member = false;
  bool stopped = false;
  std::string problem = "joining the group";

 private:
  Listener listener_;
};

}  // namespace outbox::testing
