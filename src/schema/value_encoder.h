#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/topic_template.h"
#include "kafka/publisher.h"
#include "schema/schema_cache.h"

namespace outbox {

// What became of one message's value.
struct EncodeResult {
  enum class Kind {
    kReady,  // the value is encoded; send it
    kWait,   // the registry cannot answer now: try again later (never DEAD)
    kFail,   // the row cannot be sent as its config asks: DEAD, with `error`
    kAsk,    // Encode(..., may_ask = false) needs a registry request: call again with true
  };
  Kind kind = Kind::kReady;
  std::string error;      // kWait, kFail: what and where, for last_error and logs
  std::string reason;     // kFail: the conversion-failure label (docs/FORMATS.md)
  int32_t schema_id = 0;  // kReady with a schema
};

// Encodes a message's value as its service's value format says
// (docs/FORMATS.md): the event_type's entry of `values`, else `value`. The
// schema is the one of the row's schema_id column when it has one, else the
// subject's, which comes from the message's topic and its event_type and
// aggregate_type headers (the router sets both). Immutable after
// construction; thread-safe (the cache is).
class ValueEncoder {
 public:
  // REQUIRES: the templates in `value` and `values` passed the config's
  // checks; `cache` is not null when any format is not bytes.
  ValueEncoder(std::string service, const ValueConfig& value,
               const std::map<std::string, ValueConfig>& values,
               std::shared_ptr<SchemaCache> cache);

  // Encodes m->value in place (kReady), or leaves it as it was. Without
  // `may_ask` it makes no registry request (which may take the registry's
  // timeout) and answers kAsk instead.
  EncodeResult Encode(Message* m, bool may_ask = true) const;
  // The subject a message of `event_type` on `topic` goes under; "" when its
  // value format is bytes.
  std::string Subject(const std::string& topic, const std::string& aggregate_type,
                      const std::string& event_type) const;

 private:
  struct Rule {
    ValueConfig config;
    TopicTemplate record;
    std::vector<TopicTemplate> subject_parts;  // the template between its {topic}s
  };
  static Rule MakeRule(const ValueConfig& config);
  const Rule& RuleFor(const std::string& event_type) const;
  std::string SubjectOf(const Rule& rule, const std::string& topic,
                        const std::string& aggregate_type, const std::string& event_type) const;
  EncodeResult WithSchema(const Rule& rule, const std::string& subject, bool may_ask,
                          Message* m) const;
  // The row's schema_id column names the schema.
  EncodeResult WithId(const Rule& rule, int32_t id, bool may_ask, Message* m) const;
  // Encodes with `schema`; a conversion failure gives kFail.
  static EncodeResult Apply(const ValueConfig& config, const ResolvedSchema& schema, Message* m);

  const std::string service_;
  Rule rule_;
  std::map<std::string, Rule> rules_;
  const std::shared_ptr<SchemaCache> cache_;
};

// The value of header `name` of `m`, or "".
std::string HeaderValue(const Message& m, const std::string& name);

}  // namespace outbox
