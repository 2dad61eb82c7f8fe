// The Schema Registry's URL taken apart, for the relay's and the consumer's
// config checks and the registry's HTTP client.
#include "config/registry_url.h"

#include <cctype>

namespace outbox {

namespace {

Status UrlError(const std::string& url, const std::string& what) {
  return Status::Invalid("schema registry url \"" + url + "\": " + what);
}

// "host", "host:port", "[::1]:port" -> host and port (empty when absent).
bool SplitAuthority(const std::string& authority, std::string* host, std::string* port) {
  size_t host_end = 0;
  if (!authority.empty() && authority[0] == '[') {
    const size_t close = authority.find(']');
    if (close == std::string::npos) return false;
    *host = authority.substr(1, close - 1);
    host_end = close + 1;
  } else {
    host_end = authority.find(':');
    if (host_end == std::string::npos) host_end = authority.size();
    *host = authority.substr(0, host_end);
  }
  if (host_end < authority.size()) {
    if (authority[host_end] != ':') return false;
    *port = authority.substr(host_end + 1);
    for (char c : *port)
      if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    if (port->empty()) return false;
  }
  return !host->empty();
}

}  // namespace

Status ParseRegistryUrl(const std::string& url, RegistryUrl* out) {
  std::string rest;
  if (url.rfind("https://", 0) == 0) {
    out->tls = true;
    rest = url.substr(8);
  } else if (url.rfind("http://", 0) == 0) {
    out->tls = false;
    rest = url.substr(7);
  } else {
    return UrlError(url, "must start with http:// or https://");
  }
  const size_t slash = rest.find('/');
  const std::string authority = rest.substr(0, slash);
  if (authority.find('@') != std::string::npos)
    return UrlError(url, "credentials go in username and password, not in the url");
  out->port.clear();
  if (!SplitAuthority(authority, &out->host, &out->port))
    return UrlError(url, "expected host, host:port or [v6-address]:port after the scheme");
  if (out->port.empty()) out->port = out->tls ? "443" : "80";
  out->prefix = slash == std::string::npos ? "" : rest.substr(slash);
  while (!out->prefix.empty() && out->prefix.back() == '/') out->prefix.pop_back();
  if (out->prefix.find_first_of("?#") != std::string::npos)
    return UrlError(url, "a query or fragment has no place in it");
  return Status::Ok();
}

}  // namespace outbox
