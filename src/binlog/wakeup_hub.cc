#include "binlog/wakeup_hub.h"

#include "common/text.h"

namespace outbox {
namespace binlog {

// One server: its stream and the subscribers it wakes.
struct Subscription::Server {
  struct Subscriber {
    uint64_t id;
    std::string database;  // lower case
    std::string table;     // lower case
    WakeupHub::WakeFn wake;
  };

  std::mutex mu;
  std::vector<Subscriber> subscribers;  // guarded by mu
  BinlogStreamPtr stream;               // constant after the hub created it

  void Dispatch(const Commit& commit) {
    std::vector<Commit::Table> touched;
    touched.reserve(commit.tables.size());
    for (const Commit::Table& t : commit.tables)
      touched.push_back({AsciiLower(t.database), AsciiLower(t.table), t.insert});
    std::lock_guard<std::mutex> lock(mu);
    for (const Subscriber& s : subscribers) {
      bool hit = commit.all, insert = commit.all;
      for (const Commit::Table& t : touched) {
        if (t.database != s.database || (!t.table.empty() && t.table != s.table)) continue;
        hit = true;
        insert = insert || t.insert;
      }
      if (hit) s.wake(insert);
    }
  }

  void WakeAll() {
    std::lock_guard<std::mutex> lock(mu);
    for (const Subscriber& s : subscribers) s.wake(false);
  }
};

Subscription::~Subscription() {
  std::lock_guard<std::mutex> lock(server_->mu);
  auto& subs = server_->subscribers;
  subs.erase(std::remove_if(subs.begin(), subs.end(), [&](auto& s) { return s.id == id_; }),
             subs.end());
}

bool Subscription::up() const { return server_->stream->up(); }
std::string Subscription::reason() const { return server_->stream->reason(); }
StreamState Subscription::state() const { return server_->stream->state(); }
void Subscription::Reopen() { server_->stream->Reopen(); }

WakeupHub::WakeupHub() = default;

WakeupHub::~WakeupHub() {
  std::map<std::string, std::shared_ptr<Subscription::Server>> servers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    servers.swap(servers_);
  }
  for (auto& [key, server] : servers) server->stream->Stop();
}

SubscriptionPtr WakeupHub::Subscribe(const BinlogOptions& options, const std::string& database,
                                     const std::string& table, WakeFn wake) {
  // Subscriptions with one ServerKey (config/config.h) share a stream.
  const std::string key = ServerKey(options.mysql);
  std::shared_ptr<Subscription::Server> server;
  uint64_t id;
  bool start = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    id = next_id_++;
    auto& slot = servers_[key];
    if (!slot) {
      slot = std::make_shared<Subscription::Server>();
      Subscription::Server* raw = slot.get();
      // The stream's callbacks reach the Server through a raw pointer: the
      // hub stops the stream before the Server can go away.
      slot->stream = std::make_unique<BinlogStream>(
          options, [raw](const Commit& c) { raw->Dispatch(c); },
          [raw](const StreamState&) { raw->WakeAll(); });
      start = true;
    }
    server = slot;
  }
  {
    std::lock_guard<std::mutex> lock(server->mu);
    server->subscribers.push_back({id, AsciiLower(database), AsciiLower(table), std::move(wake)});
  }
  if (start) server->stream->Start();
  return SubscriptionPtr(new Subscription(server, id));
}

std::vector<StreamState> WakeupHub::Streams() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<StreamState> out;
  for (const auto& [key, server] : servers_) out.push_back(server->stream->state());
  return out;
}

}  // namespace binlog
}  // namespace outbox
