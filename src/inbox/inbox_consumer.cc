#include "inbox/inbox_consumer.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "inbox/inbox_log.h"

namespace outbox::inbox {
namespace {

// Housekeeping (parked rows, the oldest gap, retention, lag) every 10 s; at
// once again while retention finds a full batch.
constexpr std::chrono::seconds kHousekeepingInterval{10};
constexpr int kRetentionBatch = 1000;
// While the database cannot take events: checked again this often, so that
// consuming resumes soon after it can.
constexpr std::chrono::seconds kBlockedRecheck{1};

// Every header as "name: value" lines, for a parked message.
std::string HeaderLines(const rd_kafka_message_t* m) {
  rd_kafka_headers_t* hdrs = nullptr;
  std::string out;
  if (rd_kafka_message_headers(m, &hdrs) != RD_KAFKA_RESP_ERR_NO_ERROR) return out;
  const char* name = nullptr;
  const void* value = nullptr;
  size_t size = 0;
  for (size_t i = 0; rd_kafka_header_get_all(hdrs, i, &name, &value, &size) == 0; ++i)
    out += std::string(name) + ": " +
           (value ? std::string(static_cast<const char*>(value), size) : "") + "\n";
  return out;
}

}  // namespace

InboxConsumer::InboxConsumer(const ConsumerConfig& config, Handler& handler,
                             const ConsumerOptions& options, TestSeams seams, int member)
    : config_(config),
      member_(member),
      options_(options),
      seams_(std::move(seams)),
      clock_(seams_.clock ? seams_.clock : outbox::DefaultClock()),
      store_(config.mysql, config.consumer, config.version_check, handler, seams_.use_inbox),
      dlq_(config, clock_, static_cast<bool>(options.log)),
      failing_seeks_(seams_.failing_seeks) {
  if (seams_.before_db_commit) store_.set_before_commit(seams_.before_db_commit);
}

InboxConsumer::~InboxConsumer() {
  dead_letters_.clear();  // their messages belong to the consumer: gone before it
  if (rk_) rd_kafka_destroy(rk_);
}

void InboxConsumer::LogStarted() const {
  static const char* kChecks[] = {"none", "newer", "strict"};
  const std::string& registry = config_.schema_registry.url;
  log::Info(
      "consumer {} started: group {}, {}, dead letters to {}, version_check {}, database "
      "{}@{}:{}/{}, values decode {} ({})",
      config_.consumer, GroupId(config_),
      config_.kafka.topic_regex.empty() ? std::to_string(config_.kafka.topics.size()) + " topic(s)"
                                        : "topics matching " + config_.kafka.topic_regex,
      config_.kafka.dead_letter_topic, kChecks[static_cast<int>(config_.version_check)],
      config_.mysql.user, config_.mysql.host, config_.mysql.port, config_.mysql.database,
      config_.decode == ValueDecode::kJson ? "json" : "raw",
      registry.empty() ? "no schema registry" : "schema registry " + registry);
}

void InboxConsumer::Shutdown() {
  DrainDeadLetters();
  // Shutdown: commit what was stored, synchronously, then leave the group
  // (its revoke callback commits again, finding nothing new).
  rd_kafka_resp_err_t e = rd_kafka_commit(rk_, nullptr, 0);
  if (e && e != RD_KAFKA_RESP_ERR__NO_OFFSET)
    log::Warn(
        "offset commit at shutdown failed: {}; those messages come again and the inbox "
        "skips them",
        rd_kafka_err2str(e));
  LeaveGroup();
  rd_kafka_consumer_close(rk_);
}

int InboxConsumer::Run(const std::atomic<bool>& stop) {
  std::optional<outbox::ScopedLogSink> host_log;  // this thread's lines to the host's logger
  if (options_.log) host_log.emplace(HostLogSink(options_.log), LevelName(options_.log_level));
  std::string error;
  if (!Start(&error)) {
    log::Error("{}", error);
    return 1;
  }
  LogStarted();
  next_stats_at_ = clock_->Now() + std::chrono::minutes(1);
  // At once: a database that is down or lacks the tables is said now, not
  // at the first event.
  next_housekeeping_at_ = clock_->Now();
  // The stop flag is read between messages only: a message that has started
  // is finished (committed, its offset stored) before the consumer stops.
  while (!stop.load() && exit_code_ < 0) {
    MaybeResume();
    MessagePtr m(rd_kafka_consumer_poll(rk_, 100));
    SettleDeadLetters(dlq_.Poll());
    if (clock_->Now() >= next_stats_at_) LogStats("progress");
    if (clock_->Now() >= next_housekeeping_at_) Housekeep();
    if (!m) continue;
    if (m->err) {
      OnKafkaError(m->err, rd_kafka_message_errstr(m.get()));
      continue;
    }
    BrokerAnswers();
    if (!gate_.Held(PartitionOf(m.get()))) Handle(std::move(m));
    // else: fetched before its partition was paused; read again from the
    // held offset when the partition resumes.
    if (seams_.stop_after_messages && stats_.messages >= seams_.stop_after_messages) break;
  }
  Shutdown();
  LogStats("stopped");
  return exit_code_ < 0 ? 0 : exit_code_;
}

bool InboxConsumer::SkipDeadLetterTopic(const std::string& topic) {
  // A topic_regex such as '^outbox\.event\..*' also matches the dead-letter
  // topics ("{topic}.dlq"). Their messages failed here already: processing
  // them again would dead-letter them again, to "{topic}.dlq.dlq", forever.
  if (!IsDeadLetterTopic(config_.kafka.dead_letter_topic, topic)) return false;
  ++stats_.dead_letters_read;
  if (options_.observer) options_.observer->Outcome("dead_letter_read");
  if (skipped_topics_.insert(topic).second)
    log::Warn(
        "skipping messages of {}: a dead-letter topic of this consumer "
        "(kafka.topic_regex matches it; anchor the pattern to leave it out)",
        topic);
  return true;
}

void InboxConsumer::Handle(MessagePtr m) {
  if (first_at_ == TimePoint{}) first_at_ = clock_->Now();
  const std::string topic = rd_kafka_topic_name(m->rkt);
  if (SkipDeadLetterTopic(topic)) return Done(m.get());
  Event ev;
  std::string reason;
  const bool parsed = ParseEvent(m.get(), config_.version_check, &ev, &reason);
  // Every line about this message, from here to its end, carries trace_id.
  const outbox::ScopedLogFields trace_fields(TraceLogFields(ev));
  if (!parsed) return Unparsable(std::move(m), reason, ev.trace_id);
  if (!ReadValue(&m, &ev)) return;
  int drained = 0;
  const ApplyResult r = store_.Apply(ev, ev.source, &reason, &drained);
  if (r == ApplyResult::kUnavailable) return Stall(m.get(), "database: " + reason);
  if (r == ApplyResult::kRetryLater) return Stall(m.get(), reason);
  if (r == ApplyResult::kDeadLetter) {
    ++stats_.failed_attempts;
    if (options_.observer) options_.observer->FailedAttempt();
    const int attempts = gate_.Attempts(PartitionOf(m.get()), m->offset) + 1;
    return DeadLetter(std::move(m), reason, attempts, ev.trace_id);
  }
  if (r == ApplyResult::kRejected) return Rejected(std::move(m), reason, ev.trace_id);
  if (r == ApplyResult::kLostTransaction) {
    // Never committed: the event waits and is tried again, as for a database failure.
    ++stats_.lost_transactions;
    if (options_.observer) options_.observer->LostTransaction();
    return Stall(m.get(), reason);
  }
  if (r == ApplyResult::kApplied && seams_.after_db_commit) seams_.after_db_commit();
  Count(r, drained, ev, m.get());
  Done(m.get());
}

void InboxConsumer::Unparsable(MessagePtr m, const std::string& reason,
                               const std::string& trace_id) {
  // Headers or a key that do not parse: no retry can change that.
  ++stats_.failed_attempts;
  if (options_.observer) options_.observer->FailedAttempt();
  DeadLetter(std::move(m), reason, 1, trace_id);
}

// A registry that does not answer stalls the partition (the lookup is
// tried again after the backoff, never a dead letter); a value that cannot
// be read is dead-lettered at once: the same bytes and schema id fail the
// same way every time.
bool InboxConsumer::ReadValue(MessagePtr* m, Event* ev) {
  const ValueRead v = values_->Read(ev);
  if (v.kind == ValueRead::Kind::kWait) {
    Stall(m->get(), "schema registry: " + v.reason);
    return false;
  }
  if (v.kind == ValueRead::Kind::kDeadLetter) {
    if (options_.observer) options_.observer->ValueFailure(v.label);
    Unparsable(std::move(*m), v.reason, ev->trace_id);
    return false;
  }
  return true;
}

// The database refused a value: retried after a backoff (a trigger or a
// constraint may change), then dead-lettered.
void InboxConsumer::Rejected(MessagePtr m, const std::string& reason, const std::string& trace_id) {
  ++stats_.failed_attempts;
  if (options_.observer) options_.observer->FailedAttempt();
  const int attempts = gate_.Attempts(PartitionOf(m.get()), m->offset) + 1;
  if (attempts >= config_.max_attempts) return DeadLetter(std::move(m), reason, attempts, trace_id);
  Retry(m.get(), reason);
}

void InboxConsumer::Count(ApplyResult r, int drained, const Event& ev,
                          const rd_kafka_message_t* m) {
  const char* outcome = r == ApplyResult::kApplied     ? "applied"
                        : r == ApplyResult::kDuplicate ? "duplicate"
                        : r == ApplyResult::kStale     ? "stale"
                                                       : "parked";
  uint64_t* counter = r == ApplyResult::kApplied     ? &stats_.applied
                      : r == ApplyResult::kDuplicate ? &stats_.duplicates
                      : r == ApplyResult::kStale     ? &stats_.stale
                                                     : &stats_.parked;
  ++*counter;
  if (options_.observer) options_.observer->Outcome(outcome);
  if (drained > 0) {
    stats_.unparked += static_cast<uint64_t>(drained);
    stats_.applied += static_cast<uint64_t>(drained);
    if (options_.observer) options_.observer->Outcome("unparked", static_cast<uint64_t>(drained));
    log::Info("{} {}: version {} filled the gap; {} parked version(s) applied after it",
              ev.aggregate_type, ev.aggregate_id, ev.aggregate_version, drained);
  }
  log::Debug("{} event {} ({} {} {}, outbox_id {}, version {}) from {}/{}/{}", outcome,
             ev.event_key, ev.event_type, ev.aggregate_type, ev.aggregate_id, ev.outbox_id,
             ev.aggregate_version, rd_kafka_topic_name(m->rkt), m->partition, m->offset);
}

// To the dead-letter topic. The partition waits for the broker's answer
// (the loop polls on, the other partitions go on): acknowledged, the message
// is finished; refused for good, it is parked instead; not taken now, its
// partition stalls and the message is dead-lettered again after a backoff.
void InboxConsumer::DeadLetter(MessagePtr m, const std::string& reason, int attempts,
                               const std::string& trace_id) {
  const TopicPartition tp = PartitionOf(m.get());
  const uint64_t ticket = next_ticket_++;
  dlq_.Send(m.get(), DeadLetterTopic(config_.kafka.dead_letter_topic, tp.first), reason, attempts,
            ticket);
  gate_.AwaitDeadLetter(tp, m->offset);
  if (!PauseAndSeek(tp, m->offset)) gate_.SeekFailed(tp, clock_->Now());
  dead_letters_[ticket] = {std::move(m), reason, attempts, false, trace_id};
}

void InboxConsumer::SettleDeadLetters(const std::vector<DeadLetterProducer::Delivery>& answers) {
  for (const auto& a : answers) {
    auto it = dead_letters_.find(a.ticket);
    if (it == dead_letters_.end()) continue;
    PendingDeadLetter p = std::move(it->second);
    dead_letters_.erase(it);
    rd_kafka_message_t* m = p.message.get();
    const outbox::ScopedLogFields trace_fields(
        p.trace_id.empty() ? std::vector<outbox::LogField>{}
                           : std::vector<outbox::LogField>{{"trace_id", p.trace_id}});
    if (p.revoked) {
      // Its offset cannot be stored any more: the partition's next owner
      // reads the message again and dead-letters it (again, if this one
      // was sent).
      log::Info("dead letter of {}/{} answered after its partition was revoked",
                PartitionName(PartitionOf(m)), m->offset);
      continue;
    }
    switch (a.result) {
      case DeadLetterProducer::Result::kSent:
        ++stats_.dead_lettered;
        if (options_.observer) options_.observer->Outcome("dead_lettered");
        log::Warn("message {}/{} sent to dead-letter topic {} after {} attempt(s): {}",
                  PartitionName(PartitionOf(m)), m->offset,
                  DeadLetterTopic(config_.kafka.dead_letter_topic, rd_kafka_topic_name(m->rkt)),
                  p.attempts, p.reason);
        Done(m);
        break;
      case DeadLetterProducer::Result::kRefused:
        ParkUndeliverable(m, a.error + " (dead letter because: " + p.reason + ")");
        break;
      case DeadLetterProducer::Result::kFailed:
        Stall(m, "broker: " + a.error);
        break;
    }
  }
}

void InboxConsumer::DrainDeadLetters() {
  // Bounded: a broker that does not answer must not hold the stop up. An
  // unanswered dead letter's offset is not stored, so its message is read
  // again at the next start (and dead-lettered again if this one arrives).
  const auto until = clock_->Now() + std::chrono::seconds(10);
  while (!dead_letters_.empty() && clock_->Now() < until) SettleDeadLetters(dlq_.Poll(100));
  if (!dead_letters_.empty())
    log::Warn("stopping with {} dead letter(s) unanswered: their messages are read again",
              dead_letters_.size());
  dead_letters_.clear();
}

void InboxConsumer::ParkUndeliverable(rd_kafka_message_t* m, const std::string& why) {
  Undeliverable u;
  u.source = {rd_kafka_topic_name(m->rkt), m->partition, m->offset};
  u.detail = why;
  if (m->key) u.message_key.assign(static_cast<const char*>(m->key), m->key_len);
  u.headers = HeaderLines(m);
  if (m->payload) u.payload = std::string_view(static_cast<const char*>(m->payload), m->len);
  std::string error;
  if (store_.Park(u, &error) != ApplyResult::kParked)
    return Stall(m, "database (parking a refused dead letter): " + error);
  ++stats_.undeliverable;
  if (options_.observer) options_.observer->Outcome("undeliverable");
  log::Error(
      "message {} parked in t_inbox_parked (reason undeliverable): {}; the consumer goes on "
      "(docs/CONSUMERS.md, \"Parked messages\")",
      u.source.ToString(), why);
  Done(m);
}

// The message is finished: its transaction committed (or its dead letter was
// acknowledged, or it was parked). Only now is its offset stored for the
// next commit.
void InboxConsumer::Done(rd_kafka_message_t* m) {
  rd_kafka_topic_partition_list_t* l = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(l, rd_kafka_topic_name(m->rkt), m->partition)->offset =
      m->offset + 1;  // a committed offset names the next message to read
  rd_kafka_offsets_store(rk_, l);
  rd_kafka_topic_partition_list_destroy(l);
  ++stats_.messages;
  last_at_ = clock_->Now();
  if (gate_.Finished(PartitionOf(m), m->offset))
    log::Info("resumed: {} goes on (the database and the broker answer again)",
              PartitionName(PartitionOf(m)));
}

// A database or broker failure: never a reason to dead-letter. Pause this
// partition at the unfinished message and try again after the backoff.
// Polling goes on meanwhile (paused partitions return nothing, the others
// go on), so the group membership and rebalances keep working.
void InboxConsumer::Stall(rd_kafka_message_t* m, const std::string& what) {
  ++stats_.stalls;
  if (options_.observer) options_.observer->Stalled();
  const TopicPartition tp = PartitionOf(m);
  const auto wait = gate_.Stall(tp, m->offset, clock_->Now());
  log::Warn("{}; pausing consumption of {} at offset {}, retrying in {} ms", what,
            PartitionName(tp), m->offset, wait.count());
  if (!PauseAndSeek(tp, m->offset)) gate_.SeekFailed(tp, clock_->Now());
}

// A failed attempt that may succeed later: the partition waits, the loop polls.
void InboxConsumer::Retry(rd_kafka_message_t* m, const std::string& reason) {
  const TopicPartition tp = PartitionOf(m);
  const auto wait = gate_.Retry(tp, m->offset, clock_->Now());
  log::Debug("message {}/{} cannot be processed (attempt {} of {}): {}; again in {} ms",
             PartitionName(tp), m->offset, gate_.Attempts(tp, m->offset), config_.max_attempts,
             reason, wait.count());
  if (!PauseAndSeek(tp, m->offset)) gate_.SeekFailed(tp, clock_->Now());
}

// Between messages, every 10 s (every second while the database is not
// usable): whether it is, what t_inbox_parked holds (a gap older than
// max_gap_age_s is logged), retention, and the lag per partition.
void InboxConsumer::Housekeep() {
  next_housekeeping_at_ = clock_->Now() + kHousekeepingInterval;
  const bool up = CheckDatabase();
  if (options_.observer) options_.observer->DatabaseUp(up);
  if (up)
    HousekeepTables();
  else
    next_housekeeping_at_ = clock_->Now() + kBlockedRecheck;
  ReportLag();
}

bool InboxConsumer::CheckDatabase() {
  std::string error;
  const DatabaseCheck check = store_.Check(&error);
  if (check == DatabaseCheck::kDown && blockers_.Raise(Blocker::kDatabase))
    log::Warn(
        "database: {}; no event is applied until it answers: check mysql.host, mysql.port, "
        "mysql.user and its password, and that the server runs (checked again every second)",
        error);
  if (check == DatabaseCheck::kMissingTable && blockers_.Raise(Blocker::kTables))
    log::Warn(
        "database: {}; no event is applied until the inbox's tables exist: create them "
        "(docs/CONSUMERS.md, \"Tables\")",
        error);
  if (check != DatabaseCheck::kDown && blockers_.Clear(Blocker::kDatabase))
    log::Info("database: answers again");
  if (check == DatabaseCheck::kOk && blockers_.Clear(Blocker::kTables))
    log::Info("database: the inbox's tables are there now");
  return check == DatabaseCheck::kOk;
}

void InboxConsumer::HousekeepTables() {
  ParkedSummary p;
  std::string error;
  if (!store_.Housekeep(config_.inbox_retention_days, kRetentionBatch, &p, &error)) {
    log::Debug("housekeeping skipped: {}", error);
    return;
  }
  if (options_.observer) {
    options_.observer->Parked(p.version_gaps, p.undeliverable, p.oldest_gap_age_s);
    options_.observer->Purged(static_cast<uint64_t>(p.purged_inbox_rows));
  }
  if (p.purged_inbox_rows >= kRetentionBatch) next_housekeeping_at_ = clock_->Now();
  if (p.purged_inbox_rows > 0)
    log::Info("retention: deleted {} inbox row(s) older than {} day(s)", p.purged_inbox_rows,
              config_.inbox_retention_days);
  if (p.oldest_gap_age_s > config_.max_gap_age_s &&
      clock_->Now() - gap_warned_at_ >= std::chrono::minutes(1)) {
    gap_warned_at_ = clock_->Now();
    log::Warn(
        "version gap older than max_gap_age_s ({} s > {} s): {}; {} event(s) parked in "
        "t_inbox_parked wait for it (docs/CONSUMERS.md, \"Parked messages\")",
        p.oldest_gap_age_s, config_.max_gap_age_s, p.oldest_gap, p.version_gaps);
  }
}

void InboxConsumer::ReportLag() {
  if (!options_.observer) return;
  rd_kafka_topic_partition_list_t* assigned = nullptr;
  if (rd_kafka_assignment(rk_, &assigned) != RD_KAFKA_RESP_ERR_NO_ERROR) return;
  rd_kafka_position(rk_, assigned);
  for (int i = 0; i < assigned->cnt; ++i) {
    const auto& e = assigned->elems[i];
    int64_t low = 0, high = 0;
    if (rd_kafka_get_watermark_offsets(rk_, e.topic, e.partition, &low, &high) || high < 0 ||
        e.offset < 0)
      continue;
    options_.observer->Lag(e.topic, e.partition, std::max<int64_t>(0, high - e.offset));
  }
  rd_kafka_topic_partition_list_destroy(assigned);
}

void InboxConsumer::LogStats(const char* when) {
  next_stats_at_ = clock_->Now() + std::chrono::minutes(1);
  const ConsumerStats& s = stats_;
  if (std::strcmp(when, "progress") == 0 && s.messages == logged_.messages &&
      s.stalls == logged_.stalls && s.failed_attempts == logged_.failed_attempts &&
      s.kafka_errors == logged_.kafka_errors && s.lost_transactions == logged_.lost_transactions)
    return;
  logged_ = s;
  log::Info(
      "{}: {} message(s) handled: {} applied, {} duplicate(s) skipped, {} stale, {} parked "
      "({} applied later), {} dead-lettered, {} undeliverable (parked), "
      "{} read from dead-letter topics; "
      "{} failed attempt(s), {} stall(s), {} Kafka error(s), {} transaction(s) lost under the "
      "handler",
      when, s.messages, s.applied, s.duplicates, s.stale, s.parked, s.unparked, s.dead_lettered,
      s.undeliverable, s.dead_letters_read, s.failed_attempts, s.stalls, s.kafka_errors,
      s.lost_transactions);
}

}  // namespace outbox::inbox
