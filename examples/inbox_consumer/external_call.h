#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>

#include "outbox/inbox/event.h"
#include "outbox/inbox/handler.h"

namespace example {

// A side effect outside the consumer's database (docs/CONSUMERS.md "Side
// effects outside the database"): an HTTP call cannot join the inbox
// transaction, so a crash between the call and the COMMIT repeats the call
// on redelivery. The event's key goes along as the remote side's
// idempotency key, and the remote side answers a repeated key from its
// record of the first call: the call takes effect once.
//
// The order per event: insert the inbox row (a duplicate: no call), then
// CallWithEventKey, then the local effect and COMMIT, then the offset.

struct HttpCall {
  std::string method;
  std::string url;
  std::map<std::string, std::string> headers;
  std::string body;
};
struct HttpAnswer {
  int status = 0;  // 0: no answer (refused, timed out, cut off)
  std::string body;
};
// The HTTP client seam: any client that sends the headers as given.
using HttpSend = std::function<HttpAnswer(const HttpCall&)>;

enum class CallOutcome {
  kDone,        // 2xx, or 409: the remote side had done it already for this key
  kRetryLater,  // no answer, 408, 429 or 5xx: roll back, stall the partition, call again
  kRejected,    // another 4xx: this event's fault; dead-letter it
};

// POSTs the event's payload to `url` with `Idempotency-Key: <event_key>`
// (and the event's type and aggregate as headers, and its trace context as
// traceparent and tracestate when it has one). *why says what the
// remote side answered when the outcome is not kDone.
CallOutcome CallWithEventKey(const outbox::inbox::Event& event, const std::string& url,
                             const HttpSend& send, std::string* why);

// The example's second handler: the call above as a Handler. kDone, then
// `local` (when given) in the inbox transaction, so the local effect and
// the inbox row commit together after the call; kRetryLater is
// Status::Retriable (the partition waits), kRejected Status::Permanent (a
// dead letter at once). `send` and *local must outlive the handler.
class HttpCallHandler : public outbox::inbox::Handler {
 public:
  HttpCallHandler(std::string url, HttpSend send, outbox::inbox::Handler* local = nullptr)
      : url_(std::move(url)), send_(std::move(send)), local_(local) {}
  outbox::inbox::Status Apply(outbox::inbox::Transaction& tx,
                              const outbox::inbox::Event& event) override;

 private:
  const std::string url_;
  const HttpSend send_;
  outbox::inbox::Handler* const local_;
};

}  // namespace example
