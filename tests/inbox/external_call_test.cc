// docs/CONSUMERS.md "Side effects outside the database": an HTTP call made
// idempotent with the event's key (examples/inbox_consumer/external_call.h),
// against a remote side that keeps the keys it has seen, as a payment or
// shipping API with idempotency keys does. The consumer's crash between the
// call and its COMMIT is played out: the redelivery calls again, the remote
// side acts once.
#include "external_call.h"

#include <catch2/catch.hpp>
#include <set>
#include <stdexcept>

#include "inbox/event.h"  // SetTraceContext

using example::CallOutcome;
using example::CallWithEventKey;
using example::HttpAnswer;
using example::HttpCall;
using outbox::inbox::Event;

namespace {

// The remote side: ships once per Idempotency-Key, answers a repeated key
// with the first answer. `lose_answers`: it acts, but the answer is lost.
struct ShippingService {
  std::map<std::string, HttpAnswer> done;  // key -> first answer
  int shipments = 0;
  int lose_answers = 0;
  int fail_next = 0;  // answer 503 without acting

  HttpAnswer Handle(const HttpCall& c) {
    if (fail_next > 0) {
      --fail_next;
      return {503, "busy"};
    }
    auto key = c.headers.find("Idempotency-Key");
    if (key == c.headers.end()) return {400, "Idempotency-Key required"};
    if (auto it = done.find(key->second); it != done.end()) return it->second;
    ++shipments;
    HttpAnswer a{201, "shipment " + std::to_string(shipments)};
    done[key->second] = a;
    if (lose_answers > 0) {
      --lose_answers;
      return {0, ""};
    }
    return a;
  }
};

// The consumer's step for one delivery: the inbox (a set standing in for
// t_inbox), the call, then the commit; `crash_before_commit` loses the
// transaction as a kill -9 would.
CallOutcome Deliver(const Event& ev, ShippingService& remote, std::set<std::string>& inbox,
                    bool crash_before_commit = false) {
  if (inbox.count(ev.event_key)) return CallOutcome::kDone;  // a duplicate: no call
  std::string why;
  const CallOutcome r = CallWithEventKey(
      ev, "http://shipping/shipments", [&](const HttpCall& c) { return remote.Handle(c); }, &why);
  if (r == CallOutcome::kDone && !crash_before_commit) inbox.insert(ev.event_key);
  return r;
}

Event Paid() {
  Event e;
  e.event_key = "OrderPaid-42-2";
  e.event_type = "OrderPaid";
  e.aggregate_type = "Order";
  e.aggregate_id = 42;
  e.payload = R"({"orderId":42})";
  return e;
}

}  // namespace

TEST_CASE("a crash between the call and the commit repeats the call and the remote side ships once",
          "[consumer][external]") {
  ShippingService remote;
  std::set<std::string> inbox;
  CHECK(Deliver(Paid(), remote, inbox, /*crash_before_commit=*/true) == CallOutcome::kDone);
  CHECK(inbox.empty());  // the transaction died with the process
  CHECK(Deliver(Paid(), remote, inbox) == CallOutcome::kDone);  // the redelivery
  CHECK(Deliver(Paid(), remote, inbox) == CallOutcome::kDone);  // a duplicate: no call at all
  CHECK(remote.shipments == 1);
  CHECK(inbox.count("OrderPaid-42-2") == 1);
}

TEST_CASE("a lost answer or a busy remote side is retried later with the same key",
          "[consumer][external]") {
  ShippingService remote;
  std::set<std::string> inbox;
  remote.lose_answers = 1;
  CHECK(Deliver(Paid(), remote, inbox) == CallOutcome::kRetryLater);  // it shipped; we don't know
  remote.fail_next = 1;
  CHECK(Deliver(Paid(), remote, inbox) == CallOutcome::kRetryLater);
  CHECK(Deliver(Paid(), remote, inbox) == CallOutcome::kDone);
  CHECK(remote.shipments == 1);
}

TEST_CASE("the call carries the event's key and type and payload and a 4xx is the event's fault",
          "[consumer][external]") {
  HttpCall seen;
  std::string why;
  auto answer = [&](int status) {
    return [&seen, status](const HttpCall& c) {
      seen = c;
      return HttpAnswer{status, "no"};
    };
  };
  CHECK(CallWithEventKey(Paid(), "http://x/s", answer(409), &why) == CallOutcome::kDone);
  CHECK(seen.method == "POST");
  CHECK(seen.headers.at("Idempotency-Key") == "OrderPaid-42-2");
  CHECK(seen.headers.at("X-Aggregate") == "Order/42");
  CHECK(seen.body == R"({"orderId":42})");
  CHECK(CallWithEventKey(Paid(), "http://x/s", answer(422), &why) == CallOutcome::kRejected);
  CHECK(why == "http://x/s answered 422: no");
  CHECK(CallWithEventKey(Paid(), "http://x/s", answer(429), &why) == CallOutcome::kRetryLater);
  CHECK(CallWithEventKey(Paid(), "http://x/s", answer(502), &why) == CallOutcome::kRetryLater);
}

TEST_CASE("the call carries the event's trace context so the remote side continues its trace",
          "[consumer][external][trace]") {
  HttpCall seen;
  std::string why;
  const auto send = [&seen](const HttpCall& c) {
    seen = c;
    return HttpAnswer{201, ""};
  };
  Event ev = Paid();
  CHECK(CallWithEventKey(ev, "http://x/s", send, &why) == CallOutcome::kDone);
  CHECK(seen.headers.count("traceparent") == 0);
  CHECK(seen.headers.count("tracestate") == 0);
  outbox::inbox::SetTraceContext("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                                 "congo=t61rcWkgMzE", &ev);
  CHECK(CallWithEventKey(ev, "http://x/s", send, &why) == CallOutcome::kDone);
  CHECK(seen.headers.at("traceparent") ==
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  CHECK(seen.headers.at("tracestate") == "congo=t61rcWkgMzE");
}

namespace {

// No statements: the handlers below make none (HttpCallHandler without a
// local effect).
class NoStatements : public outbox::inbox::Transaction {
 public:
  sql::PreparedStatement& Prepare(const std::string&) override { throw std::logic_error("none"); }
  const std::string& consumer() const override { return consumer_; }

 private:
  std::string consumer_ = "fulfillment";
};

}  // namespace

TEST_CASE("HttpCallHandler turns the remote side's answer into the handler's Status",
          "[inbox-consumer]") {
  ShippingService shipping;
  example::HttpCallHandler handler("http://shipping/shipments",
                                   [&](const HttpCall& c) { return shipping.Handle(c); });
  NoStatements tx;
  Event ev;
  ev.event_key = "OrderPaid-7-1";
  shipping.fail_next = 1;
  const outbox::inbox::Status busy = handler.Apply(tx, ev);
  CHECK(busy.code() == outbox::inbox::Status::Code::kRetriable);
  CHECK(busy.message() == "http://shipping/shipments answered 503: busy");
  CHECK(handler.Apply(tx, ev).ok());
  CHECK(handler.Apply(tx, ev).ok());  // a redelivery: answered from the first call
  CHECK(shipping.shipments == 1);
  example::HttpCallHandler refused("http://shipping/shipments", [](const HttpCall&) {
    return HttpAnswer{422, "no address"};
  });
  CHECK(refused.Apply(tx, ev).code() == outbox::inbox::Status::Code::kPermanent);
}
