#include "config/env_expand.h"

#include <cstdlib>

namespace outbox {

EnvLookup ProcessEnv() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

namespace {
bool ValidVarName(const std::string& n) {
  if (n.empty()) return false;
  for (size_t i = 0; i < n.size(); ++i) {
    char c = n[i];
    bool ok = (c == '_') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
              (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

// Appends the value of one ${body} (NAME or NAME:-default) to *out; false
// with *error set when it has none.
bool ExpandReference(const std::string& body, const EnvLookup& env, std::string* out,
                     std::string* error) {
  std::string name = body;
  std::optional<std::string> fallback;
  size_t dflt = body.find(":-");
  if (dflt != std::string::npos) {
    name = body.substr(0, dflt);
    fallback = body.substr(dflt + 2);
    // The default ends at the first '}', so ${A:-${B}} would give "${B}"
    // followed by "}": refuse it rather than use a half-expanded value.
    if (fallback->find("${") != std::string::npos) {
      *error =
          "a default cannot hold ${...} (nested variables are not supported) in ${" + body + "}";
      return false;
    }
  }
  if (!ValidVarName(name)) {
    *error = "invalid variable name \"" + name + "\" in ${" + body + "}";
    return false;
  }
  std::optional<std::string> value = env(name);
  // Set but empty counts as unset when there is a default; without one,
  // empty is what the user set.
  if (value && (!value->empty() || !fallback)) {
    *out += *value;
  } else if (fallback) {
    *out += *fallback;
  } else {
    *error = "environment variable " + name + " is not set (write ${" + name +
             ":-default} to give a default)";
    return false;
  }
  return true;
}
}  // namespace

std::string ExpandEnv(const std::string& in, const EnvLookup& env, std::string* error) {
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '$') {
      out += in[i];
      continue;
    }
    if (i + 1 < in.size() && in[i + 1] == '$') {
      out += '$';
      ++i;
      continue;
    }
    if (i + 1 >= in.size() || in[i + 1] != '{') {
      out += '$';
      continue;
    }
    size_t close = in.find('}', i + 2);
    if (close == std::string::npos) {
      *error = "unterminated ${ in \"" + in + "\"";
      return "";
    }
    if (!ExpandReference(in.substr(i + 2, close - i - 2), env, &out, error)) return "";
    i = close;
  }
  return out;
}

}  // namespace outbox
