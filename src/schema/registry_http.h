#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "config/registry_url.h"
#include "schema/schema_registry.h"

namespace boost::asio::ssl {
class context;
}

namespace outbox {

// Where a Schema Registry answers and how the relay logs in.
struct RegistryEndpoint {
  // "http://host:port" or "https://host[:port]", with an optional path
  // prefix ("https://registry.example/apis/ccompat/v7" for Apicurio).
  std::string url;
  // HTTP basic auth (Confluent Cloud's API key and secret); no
  // Authorization header when the username is empty.
  std::string username;
  std::string password;  // never logged
  // https: the CA certificates (PEM) that sign the registry's certificate;
  // empty: the system's bundle (ca-certificates). The certificate and its
  // host name are always verified.
  std::string ca_file;
  // Bounds one whole request (resolve, connect, TLS, request, answer): a
  // registry slower than this counts as down, and the rows wait.
  std::chrono::milliseconds timeout{5000};
};

// `segment` percent-encoded for a URL path (every byte but [A-Za-z0-9._~-]):
// subject names may hold any character.
std::string PercentEncodeSegment(std::string_view segment);

// RFC 4648 base64, for the basic auth header.
std::string Base64(std::string_view bytes);

// The SchemaRegistry seam over HTTP/1.1 (Boost.Beast; TLS with OpenSSL
// through Boost.Asio): one connection per request (the cache in front of it,
// schema_cache.h, makes requests rare). Thread-safe: requests on several
// threads run side by side.
class HttpSchemaRegistry : public SchemaRegistry {
 public:
  // Checks the URL and, for https, loads the CA file. A config error
  // (StatusCode::kInvalid) when either fails.
  static Status Make(RegistryEndpoint endpoint, std::shared_ptr<HttpSchemaRegistry>* out);
  ~HttpSchemaRegistry() override;

  Status GetSubjectVersion(const std::string& subject, const std::string& version,
                           RegisteredSchema* out) override;
  Status GetSchemaById(int32_t id, RegisteredSchema* out) override;

 private:
  HttpSchemaRegistry(RegistryEndpoint endpoint, RegistryUrl url);
  Status Get(const std::string& path, const std::string& what, RegisteredSchema* out);
  // One GET of prefix + path: the HTTP status and body, or kUnavailable.
  Status Exchange(const std::string& path, int* status, std::string* body);

  const RegistryEndpoint endpoint_;
  const RegistryUrl url_;
  std::string authorization_;                       // "Basic ..." or ""
  std::unique_ptr<boost::asio::ssl::context> tls_;  // https only
};

}  // namespace outbox
