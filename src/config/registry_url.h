#pragma once

#include <string>

#include "common/status.h"

namespace outbox {

// A registry URL taken apart.
struct RegistryUrl {
  bool tls = false;
  std::string host;    // without brackets for IPv6
  std::string port;    // 80 or 443 when the URL names none
  std::string prefix;  // "" or "/apis/ccompat/v7" (no trailing slash)
};

// Parses a registry URL; an error names what is wrong with it.
Status ParseRegistryUrl(const std::string& url, RegistryUrl* out);

}  // namespace outbox
