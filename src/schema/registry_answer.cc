// The registry's answers, read into RegisteredSchema (schema_registry.h).
#include <nlohmann/json.hpp>

#include "schema/schema_registry.h"

namespace outbox {

namespace {

using nlohmann::json;

// The error body's message ({"error_code": 40401, "message": "Subject not
// found."}), or the body's start when it is not one.
std::string ErrorText(const std::string& body) {
  const json j = json::parse(body, nullptr, false);
  if (j.is_object() && j.contains("message") && j["message"].is_string()) {
    std::string text = j["message"].get<std::string>();
    if (j.contains("error_code")) text += " (error_code " + j["error_code"].dump() + ")";
    return text;
  }
  return body.substr(0, 200);
}

// Whether the body is the registry API's error ({"error_code": ...}): only
// the registry's own word makes a row DEAD. Anything else (a proxy's or a
// load balancer's page, a redirect) is the registry not answering.
bool IsApiError(const std::string& body) {
  const json j = json::parse(body, nullptr, false);
  return j.is_object() && j.contains("error_code");
}

Status ErrorFor(int http_status, const std::string& body, const std::string& what) {
  const std::string text =
      "schema registry: " + what + ": HTTP " + std::to_string(http_status) + ": " + ErrorText(body);
  if (http_status == 401 || http_status == 403) return Status::Error(StatusCode::kPermission, text);
  if (http_status >= 500 || http_status == 429 || http_status == 408 || !IsApiError(body))
    return Status::Unavailable(text);
  if (http_status == 404) return Status::Schema(text);
  return Status::Invalid(text);
}

}  // namespace

Status ReadRegistryAnswer(int http_status, const std::string& body, const std::string& what,
                          RegisteredSchema* out) {
  if (http_status != 200) return ErrorFor(http_status, body, what);
  const json j = json::parse(body, nullptr, false);
  if (!j.is_object())
    return Status::Unavailable("schema registry: " + what +
                               ": the answer is not the registry's JSON: " + body.substr(0, 200));
  if (!j.contains("schema") || !j["schema"].is_string())
    return Status::Invalid("schema registry: " + what +
                           ": the answer holds no schema: " + body.substr(0, 200));
  out->schema = j["schema"].get<std::string>();
  if (auto t = j.find("schemaType"); t != j.end() && t->is_string())
    out->type = t->get<std::string>();
  if (auto s = j.find("subject"); s != j.end() && s->is_string())
    out->subject = s->get<std::string>();
  if (auto v = j.find("version"); v != j.end() && v->is_number_integer())
    out->version = v->get<int>();
  if (auto id = j.find("id"); id != j.end() && id->is_number_integer())
    out->id = id->get<int32_t>();
  if (auto r = j.find("references"); r != j.end() && r->is_array())
    out->has_references = !r->empty();
  return Status::Ok();
}

}  // namespace outbox
