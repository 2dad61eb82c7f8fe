#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "kafka/publisher.h"
#include "schema/value_encoder.h"

namespace outbox {

// What a SchemaPublisher reports, for metrics and logs (the relay's
// implementation counts and logs; the default does nothing). Called on the
// sending thread or the publisher's own, never under its lock.
class SchemaPublisherObserver {
 public:
  virtual ~SchemaPublisherObserver() = default;
  // A row's value could not be encoded (`reason`: docs/FORMATS.md); it goes DEAD.
  virtual void OnConversionFailure(const std::string& /*reason*/, const std::string& /*error*/) {}
  // The registry stopped answering (`why`), or answers again (`why` empty).
  virtual void OnRegistryChange(const std::string& /*why*/) {}
};

// A Publisher in front of another that encodes each message's value as its
// service's value format asks (ValueEncoder, docs/FORMATS.md) and hands the
// result on:
//  - a value that cannot be encoded (unknown subject, a payload that does not
//    fit its schema) completes kPermanent with reason schema: the row goes
//    DEAD with the field named, and its chain (its aggregate) stops as after
//    any failure;
//  - while the registry cannot answer, the message waits here and is tried
//    again every `retry_every`, until its claim's budget (`queued_until`,
//    at most `max_wait` after Send; an answer that comes later is not used
//    either): then it completes kNotAttempted with reason
//    schema_registry, and its row is released without an attempt counted,
//    as a broker outage releases the messages it holds. Never DEAD for that.
// Thread-safe; Send may be called from any thread and never waits for the
// registry: a message whose schema is not in the cache goes to the
// publisher's own thread, which makes the request and retries the waiting
// messages every `retry_every`.
class SchemaPublisher : public Publisher {
 public:
  struct Options {
    PublisherPtr inner;
    std::shared_ptr<const ValueEncoder> encoder;
    ClockPtr clock;
    // Kept as long as the publisher (null: reports go nowhere).
    std::shared_ptr<SchemaPublisherObserver> observer;
    std::chrono::milliseconds retry_every{1000};
    std::chrono::milliseconds max_wait{30000};
  };

  explicit SchemaPublisher(Options options);
  // Completes every waiting message kNotAttempted and stops the thread.
  ~SchemaPublisher() override;
  SchemaPublisher(const SchemaPublisher&) = delete;
  SchemaPublisher& operator=(const SchemaPublisher&) = delete;

  void Send(const Message& message, SentFn sent) override;
  bool Healthy() const override;
  // "" while the registry answers (or was never asked); else why it does not.
  std::string RegistryProblem() const;
  // Messages waiting for the registry.
  size_t Waiting() const;

 private:
  // What the retrier thread shares with the publisher: the thread keeps it
  // alive, so the publisher may go on any thread, the retrier's included.
  struct Held {
    Message message;
    SentFn sent;
    Clock::TimePoint until;
  };
  class Core;
  std::shared_ptr<Core> core_;
  std::thread retrier_;
};

}  // namespace outbox
