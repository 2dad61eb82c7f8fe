#pragma once

// BinlogWakeupSource: the `wakeup: binlog` WakeupSource
// (src/common/wakeup_source.h), woken by a BinlogStreams subscription through
// a WakeSignal (src/binlog/wake_signal.h). Header-only.

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>

#include "binlog/binlog_streams.h"
#include "binlog/wake_signal.h"
#include "common/clock.h"
#include "common/wakeup_source.h"

namespace outbox {
namespace binlog {

// `wakeup: binlog`: woken by commits to its table (or database), except the
// relay's own (ExpectOwnChange, WakeSignal), and by every up/down change of
// its server's stream. How long the loop may wait while the
// stream is up or down is the ClaimScheduler's (src/relay/claim_scheduler.h).
// REQUIRES: `streams` outlives this object.
class BinlogWakeupSource : public WakeupSource {
 public:
  BinlogWakeupSource(ClockPtr clock, BinlogStreams& streams, const BinlogOptions& options,
                     const std::string& database, const std::string& table)
      : signal_(std::make_shared<WakeSignal>(std::move(clock))) {
    // The stream's thread calls this; the shared_ptr keeps the
    // signal valid however the destructors interleave.
    std::shared_ptr<WakeSignal> signal = signal_;
    subscription_ =
        streams.Subscribe(options, database, table, [signal](BinlogStreams::Notice why) {
          if (why == BinlogStreams::Notice::kStream)
            signal->StreamChanged();
          else
            signal->Notify(why == BinlogStreams::Notice::kInsert);
        });
  }
  WakeCause WaitUntil(Clock::TimePoint deadline) override { return signal_->WaitUntil(deadline); }
  void Interrupt() override { signal_->Wake(); }
  void ExpectOwnChange() override { signal_->ExpectOwnChange(); }
  void BeginOwnChange(int at_most) override { signal_->BeginOwnChange(at_most); }
  void EndOwnChange(int at_most, int commits) override { signal_->EndOwnChange(at_most, commits); }
  int inserts_in_last_wake() const override { return signal_->inserts_in_last_wake(); }
  bool binlog_up() const override { return subscription_->up(); }
  // The stream may still be on a demoted server (its connection went there
  // before the failover and stays open): a new one follows mysql.host, from
  // that server's end of log.
  void DatabaseReconnected() override { subscription_->Reopen(); }
  std::string reason() const override { return subscription_->reason(); }

 private:
  std::shared_ptr<WakeSignal> signal_;
  SubscriptionPtr subscription_;  // last: unsubscribes before the rest goes
};

}  // namespace binlog
}  // namespace outbox
