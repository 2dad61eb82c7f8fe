// A service's envelope and cloudevents keys (docs/CONFIG.md "envelope").

#include "config/config_parser.h"
#include "config/topic_template.h"

namespace outbox {
namespace config_internal {

void Parser::ServiceEnvelope(const YAML::Node& n, const std::string& path, ServiceConfig* s,
                             std::vector<std::string>* warnings) const {
  if (n["envelope"])
    s->envelope =
        static_cast<Envelope>(OneOf(n["envelope"], path + ".envelope", {"plain", "cloudevents"}));
  const YAML::Node ce = n["cloudevents"];
  if (!ce || ce.IsNull()) return;
  const std::string cp = path + ".cloudevents";
  RequireMap(ce, cp);
  CheckKeys(ce, cp, {"source", "type"});
  // source is a URI reference, so '/' is allowed here, unlike in a topic.
  if (ce["source"])
    s->cloudevents.source =
        EventTemplate(ce["source"], cp + ".source", TopicTemplate::Syntax::kUriReference);
  if (ce["type"])
    s->cloudevents.type = EventTemplate(ce["type"], cp + ".type", TopicTemplate::Syntax::kText);
  if (s->envelope == Envelope::kPlain)
    warnings->push_back(cp +
                        ": has no effect with envelope plain (set envelope: cloudevents to send "
                        "the CloudEvents attributes)");
}

std::string Parser::EventTemplate(const YAML::Node& n, const std::string& path,
                                  TopicTemplate::Syntax syntax) const {
  std::string text = Str(n, path);
  TopicTemplate t;
  std::string err;
  if (!TopicTemplate::Parse(text, &t, &err, syntax)) Report(n.Mark(), path, err);
  return text;
}

}  // namespace config_internal
}  // namespace outbox
