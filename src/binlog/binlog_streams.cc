#include "binlog/binlog_streams.h"

#include <utility>

#include "common/text.h"

namespace outbox {
namespace binlog {

// One server: its stream and the subscribers it wakes.
struct Subscription::Server {
  struct Subscriber {
    uint64_t id;
    std::string database;  // lower case
    std::string table;     // lower case
    BinlogStreams::NoticeFn notice;
  };

  Mutex mu;
  std::vector<Subscriber> subscribers GUARDED_BY(mu);

  // The stream: replaced by BinlogStreams::Reopen, so read through Stream().
  mutable Mutex stream_mu;
  std::shared_ptr<BinlogStream> stream GUARDED_BY(stream_mu);
  std::shared_ptr<BinlogStream> Stream() const EXCLUDES(stream_mu) {
    MutexLock lock(&stream_mu);
    return stream;
  }
  // A stream whose callbacks reach this Server through a raw pointer:
  // BinlogStreams stops a stream before its Server can go away.
  std::shared_ptr<BinlogStream> NewStream(const BinlogOptions& options) {
    return std::make_shared<BinlogStream>(
        options, [this](const Commit& c) { Dispatch(c); },
        [this](const StreamState&) { WakeAll(); });
  }

  void Dispatch(const Commit& commit) EXCLUDES(mu) {
    std::vector<Commit::Table> touched;
    touched.reserve(commit.tables.size());
    for (const Commit::Table& t : commit.tables)
      touched.push_back({AsciiLower(t.database), AsciiLower(t.table), t.insert});
    MutexLock lock(&mu);
    for (const Subscriber& s : subscribers) {
      bool hit = commit.all, insert = commit.all;
      for (const Commit::Table& t : touched) {
        if (t.database != s.database || (!t.table.empty() && t.table != s.table)) continue;
        hit = true;
        insert = insert || t.insert;
      }
      if (hit) s.notice(insert ? BinlogStreams::Notice::kInsert : BinlogStreams::Notice::kChange);
    }
  }

  void WakeAll() EXCLUDES(mu) {
    MutexLock lock(&mu);
    for (const Subscriber& s : subscribers) s.notice(BinlogStreams::Notice::kStream);
  }
};

Subscription::~Subscription() {
  MutexLock lock(&server_->mu);
  auto& subs = server_->subscribers;
  subs.erase(std::remove_if(subs.begin(), subs.end(), [&](auto& s) { return s.id == id_; }),
             subs.end());
}

bool Subscription::up() const { return server_->Stream()->up(); }
std::string Subscription::reason() const { return server_->Stream()->reason(); }
StreamState Subscription::state() const { return server_->Stream()->state(); }
void Subscription::Reopen() { server_->Stream()->Reopen(); }

BinlogStreams::BinlogStreams() = default;

BinlogStreams::~BinlogStreams() {
  std::map<std::string, std::shared_ptr<Subscription::Server>> servers;
  {
    MutexLock lock(&mu_);
    servers.swap(servers_);
  }
  for (auto& [key, server] : servers) server->Stream()->Stop();
}

SubscriptionPtr BinlogStreams::Subscribe(const BinlogOptions& options, const std::string& database,
                                         const std::string& table, NoticeFn notice) {
  // Subscriptions with one ServerKey (config/config.h) share a stream.
  const std::string key = ServerKey(options.mysql);
  std::shared_ptr<Subscription::Server> server;
  uint64_t id;
  bool start = false;
  {
    MutexLock lock(&mu_);
    id = next_id_++;
    auto& slot = servers_[key];
    if (!slot) {
      slot = std::make_shared<Subscription::Server>();
      std::shared_ptr<BinlogStream> stream = slot->NewStream(options);
      MutexLock stream_lock(&slot->stream_mu);
      slot->stream = std::move(stream);
      start = true;
    }
    server = slot;
  }
  {
    MutexLock lock(&server->mu);
    server->subscribers.push_back({id, AsciiLower(database), AsciiLower(table), std::move(notice)});
  }
  if (start) server->Stream()->Start();
  return SubscriptionPtr(new Subscription(server, id));
}

std::vector<StreamState> BinlogStreams::StreamsForTesting() const {
  MutexLock lock(&mu_);
  std::vector<StreamState> out;
  for (const auto& [key, server] : servers_) out.push_back(server->Stream()->state());
  return out;
}

bool BinlogStreams::Reopen(const BinlogOptions& options) {
  std::shared_ptr<Subscription::Server> server;
  {
    MutexLock lock(&mu_);
    auto it = servers_.find(ServerKey(options.mysql));
    if (it == servers_.end()) return false;
    server = it->second;
  }
  std::shared_ptr<BinlogStream> fresh = server->NewStream(options);
  std::shared_ptr<BinlogStream> old;
  {
    MutexLock lock(&server->stream_mu);
    old = std::exchange(server->stream, fresh);
  }
  // The old stream ends before the new one starts: both would follow the
  // server as one replica server_id, and the server drops a replica whose
  // id another one takes. Meanwhile the subscribers see a stream that is
  // not up, and poll.
  old->Stop();
  server->WakeAll();
  fresh->Start();
  return true;
}

void BinlogStreams::Close(const std::string& server_key) {
  std::shared_ptr<Subscription::Server> server;
  {
    MutexLock lock(&mu_);
    auto it = servers_.find(server_key);
    if (it == servers_.end()) return;
    server = std::move(it->second);
    servers_.erase(it);
  }
  server->Stream()->Stop();
}

}  // namespace binlog
}  // namespace outbox
