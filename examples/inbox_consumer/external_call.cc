#include "external_call.h"

namespace example {

using outbox::inbox::Event;
using outbox::inbox::Status;
using outbox::inbox::Transaction;

CallOutcome CallWithEventKey(const Event& ev, const std::string& url, const HttpSend& send,
                             std::string* why) {
  HttpCall call;
  call.method = "POST";
  call.url = url;
  // The key that makes a repeated call harmless: the same business event
  // always carries the same event_key, whichever delivery it came with.
  call.headers["Idempotency-Key"] = ev.event_key;
  call.headers["Content-Type"] = "application/json";
  call.headers["X-Event-Type"] = ev.event_type;
  call.headers["X-Aggregate"] = ev.aggregate_type + "/" + std::to_string(ev.aggregate_id);
  // W3C trace context over HTTP: the remote side's spans join the trace of
  // the transaction that wrote the event.
  if (!ev.traceparent.empty()) call.headers["traceparent"] = ev.traceparent;
  if (!ev.tracestate.empty()) call.headers["tracestate"] = ev.tracestate;
  call.body = std::string(ev.payload);
  const HttpAnswer a = send(call);
  if (a.status >= 200 && a.status < 300) return CallOutcome::kDone;
  if (a.status == 409) return CallOutcome::kDone;  // done before, under this key
  *why = a.status == 0 ? "no answer from " + url
                       : url + " answered " + std::to_string(a.status) + ": " + a.body;
  if (a.status == 0 || a.status == 408 || a.status == 429 || a.status >= 500)
    return CallOutcome::kRetryLater;
  return CallOutcome::kRejected;
}

Status HttpCallHandler::Apply(Transaction& tx, const Event& event) {
  std::string why;
  switch (CallWithEventKey(event, url_, send_, &why)) {
    case CallOutcome::kDone:
      return local_ ? local_->Apply(tx, event) : Status::Ok();
    case CallOutcome::kRetryLater:
      return Status::Retriable(why);
    case CallOutcome::kRejected:
      break;
  }
  return Status::Permanent(why);
}

}  // namespace example
