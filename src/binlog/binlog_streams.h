#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "binlog/binlog_options.h"
#include "binlog/binlog_stream.h"
#include "common/mutex.h"

namespace outbox {
namespace binlog {

class BinlogStreams;

// One service's interest in one table on one server. Destroying it
// unsubscribes: once the destructor returned, its `notice` is never called
// again. Thread-safe.
class Subscription {
 public:
  ~Subscription();
  Subscription(const Subscription&) = delete;
  Subscription& operator=(const Subscription&) = delete;

  // True while the server's stream follows the log (outbox_wakeup_binlog_up).
  bool up() const;
  // Why it does not, with the fix where there is one; "" while up.
  std::string reason() const;
  StreamState state() const;
  // Makes the server's stream close and reopen through its host, from the
  // end of log of whatever server the host leads to now (BinlogStream::
  // Reopen). For a relay whose database session was replaced after a
  // read-only answer or a lost connection: after a failover the stream would
  // otherwise stay on the demoted server, which never writes again. Shared:
  // every subscriber of the server sees the stream go down and up again.
  void Reopen();

 private:
  friend class BinlogStreams;
  struct Server;
  Subscription(std::shared_ptr<Server> server, uint64_t id) : server_(std::move(server)), id_(id) {}
  std::shared_ptr<Server> server_;
  uint64_t id_;
};

using SubscriptionPtr = std::unique_ptr<Subscription>;

// Shares one BinlogStream per database server (host:port) among every
// service on it, and routes each committed transaction to the subscribers
// whose table it touched: the table with binlog_format=ROW, any table of the
// database with statement-format writes (MIXED, STATEMENT). Also wakes every
// subscriber of a server when its stream goes up or down, so that a waiting
// service notices at once that it must poll (or may stop polling).
//
// Thread-safety: all methods from any thread. `notice` runs on a stream's
// thread while BinlogStreams holds that server's lock: it must be cheap and
// non-blocking (set a flag, notify a condition variable) and must not call
// BinlogStreams or a Subscription. Lifetime: every Subscription must be destroyed
// before BinlogStreams; its destructor stops the streams.
class BinlogStreams {
 public:
  // What a subscriber is told (a notice): a commit that may have inserted rows
  // (Commit::Table::insert), an update-only commit (such as the relays'
  // claims and settles), or its server's stream went up or down.
  enum class Notice { kInsert, kChange, kStream };
  using NoticeFn = std::function<void(Notice what)>;

  BinlogStreams();
  ~BinlogStreams();
  BinlogStreams(const BinlogStreams&) = delete;
  BinlogStreams& operator=(const BinlogStreams&) = delete;

  // The first subscription for options.mysql's host:port starts that
  // server's stream with `options` (credentials, TLS, server_id, timings);
  // later ones share it, their options unused. Table and database names
  // compare case-insensitively (a spurious wake-up costs one claim; a missed
  // one costs latency).
  SubscriptionPtr Subscribe(const BinlogOptions& options, const std::string& database,
                            const std::string& table, NoticeFn notice) EXCLUDES(mu_);

  // One entry per server (a test counts the streams it shares).
  std::vector<StreamState> StreamsForTesting() const EXCLUDES(mu_);

  // Stops the stream of options.mysql's server and opens a new one with
  // `options` (another service's credentials, after a reload removed or
  // changed the one whose they were); the subscriptions stay and poll until
  // it is up. False when the server has no stream. Blocks until the old
  // stream's thread ended: not from a `notice` callback.
  bool Reopen(const BinlogOptions& options) EXCLUDES(mu_);
  // Stops the stream of `server_key` (ServerKey) and forgets it; the next
  // Subscribe for that server opens a new one. REQUIRES: no Subscription to
  // it is left (a reload destroyed every relay of that server).
  void Close(const std::string& server_key) EXCLUDES(mu_);

 private:
  mutable Mutex mu_;
  uint64_t next_id_ GUARDED_BY(mu_) = 1;
  std::map<std::string, std::shared_ptr<Subscription::Server>> servers_ GUARDED_BY(mu_);
};

}  // namespace binlog
}  // namespace outbox
