#include "schema/registry_http.h"

#include <catch2/catch.hpp>

#include "schema/schema_cache.h"
#include "support/http_probe.h"
#include "support/test_registry.h"

using namespace outbox;
using namespace std::chrono_literals;
using outbox::testing::TestRegistry;

namespace {

constexpr const char* kOrder =
    R"({"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"}]})";

std::shared_ptr<HttpSchemaRegistry> ClientOf(RegistryEndpoint endpoint) {
  std::shared_ptr<HttpSchemaRegistry> client;
  const Status s = HttpSchemaRegistry::Make(std::move(endpoint), &client);
  INFO(s.message());
  REQUIRE(s.ok());
  return client;
}

std::shared_ptr<HttpSchemaRegistry> ClientOf(const TestRegistry& registry) {
  RegistryEndpoint e;
  e.url = registry.url();
  e.timeout = 2s;
  return ClientOf(e);
}

}  // namespace

TEST_CASE("registry urls name scheme host port and prefix or say what is wrong", "[schema]") {
  RegistryUrl u;
  REQUIRE(ParseRegistryUrl("https://registry.example/apis/ccompat/v7/", &u).ok());
  CHECK(u.tls);
  CHECK(u.host == "registry.example");
  CHECK(u.port == "443");
  CHECK(u.prefix == "/apis/ccompat/v7");
  REQUIRE(ParseRegistryUrl("http://[::1]:8081", &u).ok());
  CHECK(u.host == "::1");
  CHECK(u.port == "8081");
  CHECK(u.prefix.empty());
  CHECK(ParseRegistryUrl("registry:8081", &u).message() ==
        "schema registry url \"registry:8081\": must start with http:// or https://");
  CHECK(ParseRegistryUrl("http://user:pw@registry:8081", &u).message() ==
        "schema registry url \"http://user:pw@registry:8081\": credentials go in username and "
        "password, not in the url");
  CHECK_FALSE(ParseRegistryUrl("http://registry:80x", &u).ok());
}

TEST_CASE("subjects are percent-encoded and basic auth is base64", "[schema]") {
  CHECK(PercentEncodeSegment("orders-value") == "orders-value");
  CHECK(PercentEncodeSegment("a/b c") == "a%2Fb%20c");
  CHECK(Base64("relay:s3cret") == "cmVsYXk6czNjcmV0");
  CHECK(Base64("a") == "YQ==");
  CHECK(Base64("ab") == "YWI=");
}

TEST_CASE("the registry's answers and errors become schemas and statuses", "[schema]") {
  RegisteredSchema r;
  REQUIRE(ReadRegistryAnswer(200, R"({"subject": "s", "version": 3, "id": 7, "schema": "\"int\""})",
                             "subject s version latest", &r)
              .ok());
  CHECK(r.id == 7);
  CHECK(r.version == 3);
  CHECK(r.type == "AVRO");
  const Status missing =
      ReadRegistryAnswer(404, R"({"error_code": 40401, "message": "Subject 's' not found."})",
                         "subject s version 1", &r);
  CHECK(missing.code() == StatusCode::kSchema);
  CHECK(
      missing.message() ==
      "schema registry: subject s version 1: HTTP 404: Subject 's' not found. (error_code 40401)");
  CHECK(ReadRegistryAnswer(401, "", "x", &r).code() == StatusCode::kPermission);
  CHECK(ReadRegistryAnswer(503, "<html>", "x", &r).code() == StatusCode::kUnavailable);
  CHECK(ReadRegistryAnswer(200, "{}", "x", &r).code() == StatusCode::kInvalid);
}

TEST_CASE("only the registry's own error body makes an answer final", "[schema]") {
  RegisteredSchema r;
  const std::string api_error = "{\"error_code\": 42201, \"message\": \"bad\"}";
  CHECK(ReadRegistryAnswer(400, api_error, "x", &r).code() == StatusCode::kInvalid);
  // Not the registry's word (a proxy's page, a redirect): the registry does not answer.
  CHECK(ReadRegistryAnswer(404, "<html>Not Found</html>", "x", &r).code() ==
        StatusCode::kUnavailable);
  CHECK(ReadRegistryAnswer(302, "", "x", &r).code() == StatusCode::kUnavailable);
  CHECK(ReadRegistryAnswer(200, "<html>login</html>", "x", &r).code() == StatusCode::kUnavailable);
}

TEST_CASE("the http client reads a subject's versions and an id from a registry",
          "[schema][registry-http]") {
  TestRegistry registry;
  const int id = registry.Register("orders/v-value", kOrder);
  const int json_id = registry.Register("orders/v-value", R"({"type": "object"})", "JSON");
  auto client = ClientOf(registry);
  RegisteredSchema r;
  REQUIRE(client->GetSubjectVersion("orders/v-value", "latest", &r).ok());
  CHECK(r.id == json_id);
  CHECK(r.version == 2);
  CHECK(r.type == "JSON");
  REQUIRE(client->GetSubjectVersion("orders/v-value", "1", &r).ok());
  CHECK(r.id == id);
  CHECK(r.schema == kOrder);
  RegisteredSchema by_id;
  REQUIRE(client->GetSchemaById(id, &by_id).ok());
  CHECK(by_id.id == id);
  CHECK(by_id.schema == kOrder);
  CHECK(client->GetSubjectVersion("nobody-value", "latest", &r).code() == StatusCode::kSchema);
  CHECK(client->GetSchemaById(999, &r).code() == StatusCode::kSchema);
}

TEST_CASE("a registry that is down slow or failing is unavailable and a 404 is a schema error",
          "[schema][registry-http]") {
  TestRegistry registry;
  const int id = registry.Register("orders-value", kOrder);
  auto client = ClientOf(registry);
  RegisteredSchema r;
  registry.SetMode("down");
  const Status down = client->GetSchemaById(id, &r);
  CHECK(down.code() == StatusCode::kUnavailable);
  registry.SetMode("slow", 3000);
  const Status slow = client->GetSchemaById(id, &r);
  CHECK(slow.code() == StatusCode::kUnavailable);
  CHECK(slow.message().find("answer") != std::string::npos);
  registry.SetMode("500");
  CHECK(client->GetSchemaById(id, &r).code() == StatusCode::kUnavailable);
  registry.SetMode("404");
  CHECK(client->GetSchemaById(id, &r).code() == StatusCode::kSchema);
  registry.SetMode("ok");
  CHECK(client->GetSchemaById(id, &r).ok());
  const int port = registry.port();
  registry.Stop();
  RegistryEndpoint gone;
  gone.url = "http://127.0.0.1:" + std::to_string(port);
  gone.timeout = 2s;
  const Status refused = ClientOf(gone)->GetSchemaById(id, &r);
  CHECK(refused.code() == StatusCode::kUnavailable);
  CHECK(refused.message().find("connect") != std::string::npos);
}

TEST_CASE("the http client logs in with basic auth and a wrong password is a permission error",
          "[schema][registry-http]") {
  TestRegistry::Options options;
  options.user = "relay";
  options.password = "s3cret";
  TestRegistry registry(options);
  const int id = registry.Register("orders-value", kOrder);
  RegistryEndpoint e;
  e.url = registry.url();
  e.username = "relay";
  e.password = "s3cret";
  RegisteredSchema r;
  CHECK(ClientOf(e)->GetSchemaById(id, &r).ok());
  e.password = "wrong";
  CHECK(ClientOf(e)->GetSchemaById(id, &r).code() == StatusCode::kPermission);
  e.username.clear();
  CHECK(ClientOf(e)->GetSchemaById(id, &r).code() == StatusCode::kPermission);
}

TEST_CASE("over https the registry's certificate and host name are verified",
          "[schema][registry-http]") {
  TestRegistry::Options options;
  options.tls = true;
  TestRegistry registry(options);
  const int id = registry.Register("orders-value", kOrder);
  RegistryEndpoint e;
  e.url = registry.url();
  e.ca_file = registry.ca_file();
  e.timeout = 5s;
  RegisteredSchema r;
  const Status trusted = ClientOf(e)->GetSchemaById(id, &r);
  INFO(trusted.message());
  CHECK(trusted.ok());
  e.ca_file.clear();  // the system's CAs did not sign it
  const Status untrusted = ClientOf(e)->GetSchemaById(id, &r);
  CHECK(untrusted.code() == StatusCode::kUnavailable);
  CHECK(untrusted.message().find("TLS handshake") != std::string::npos);
  e.ca_file = registry.ca_file();
  e.url = "https://127.0.0.1:" + std::to_string(registry.port());  // not the certificate's name
  CHECK(ClientOf(e)->GetSchemaById(id, &r).code() == StatusCode::kUnavailable);
  e.ca_file = "/nonexistent/ca.pem";
  std::shared_ptr<HttpSchemaRegistry> none;
  CHECK(HttpSchemaRegistry::Make(e, &none).code() == StatusCode::kInvalid);
}

TEST_CASE("the cache over the http client serves a held schema through a registry outage",
          "[schema][registry-http]") {
  TestRegistry registry;
  registry.Register("orders-value", kOrder);
  SchemaCache::Options options;
  options.latest_ttl = 0ms;  // every lookup asks the registry
  SchemaCache cache(ClientOf(registry), DefaultClock(), options);
  ResolvedSchemaPtr s;
  REQUIRE(cache.BySubject("orders-value", "latest", &s).ok());
  registry.SetMode("down");
  REQUIRE(cache.BySubject("orders-value", "latest", &s).ok());
  CHECK(s->subject == "orders-value");
  CHECK(registry.Requests() == 2);
}
