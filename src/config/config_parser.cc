#include "config/config_parser.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "common/text.h"
#include "config/env_expand.h"

namespace outbox {
namespace config_internal {

namespace {
// Secrets and certificates are small; a larger "file" is a mistake (a
// device, a log) and must not be slurped into memory.
constexpr std::streamsize kMaxSecretFileBytes = 1 << 20;
}  // namespace

FileRead ReadFileFromDisk(const std::string& path) {
  FileRead r;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    r.error = std::strerror(errno);
    return r;
  }
  if (!S_ISREG(st.st_mode)) {
    r.error = "not a regular file";
    return r;
  }
  if (st.st_size > kMaxSecretFileBytes) {
    r.error = "larger than 1 MiB, not a secret or certificate";
    return r;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    r.error = std::strerror(errno);
    return r;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  FileInfo info;
  info.contents = ss.str();
  info.group_or_other_readable = (st.st_mode & 044) != 0;
  r.info = std::move(info);
  return r;
}

std::string Quoted(const std::string& s) {
  constexpr size_t kMax = 200;
  // Appended, not `"\"" + s`: see common/text.h on GCC bug 105329.
  std::string out = "\"";
  out.append(s, 0, std::min(s.size(), kMax)).append("\"");
  if (s.size() > kMax) out.append("... (").append(std::to_string(s.size())).append(" characters)");
  return out;
}

namespace {
bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
}  // namespace

// [A-Za-z_][A-Za-z0-9_$]{0,63}: what the relay splices into SQL, quoted.
bool IsIdentifier(const std::string& s) {
  if (s.empty() || s.size() > 64 || !(IsAlpha(s[0]) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return IsAlpha(c) || IsDigit(c) || c == '_' || c == '$'; });
}

bool IsServiceName(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return IsAlpha(c) || IsDigit(c) || c == '_' || c == '.' || c == '-';
  });
}

bool IsVariableName(const std::string& s) {
  if (s.empty() || !(IsAlpha(s[0]) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return IsAlpha(c) || IsDigit(c) || c == '_'; });
}

namespace {

// +HH:MM / -HH:MM, hours 00-14. REQUIRES: tz.size() == 6.
bool IsOffset(const std::string& tz) {
  const bool digits = IsDigit(tz[1]) && IsDigit(tz[2]) && IsDigit(tz[5]);
  return digits && tz[3] == ':' && tz[4] >= '0' && tz[4] <= '5' &&
         (tz[1] - '0') * 10 + (tz[2] - '0') <= 14;
}

bool IsZoneHead(char c) { return IsAlpha(c) || c == '_'; }
bool IsZonePart(char c) { return IsAlpha(c) || IsDigit(c) || c == '_' || c == '+' || c == '-'; }

// [A-Za-z_]+ then /[A-Za-z0-9_+-]+ parts, e.g. America/Argentina/Buenos_Aires.
bool IsZoneName(const std::string& tz) {
  size_t slash = tz.find('/');
  std::string head = tz.substr(0, slash);
  if (head.empty() || !std::all_of(head.begin(), head.end(), IsZoneHead)) return false;
  while (slash != std::string::npos) {
    size_t next = tz.find('/', slash + 1);
    std::string part = tz.substr(slash + 1, next == std::string::npos ? next : next - slash - 1);
    if (part.empty() || !std::all_of(part.begin(), part.end(), IsZonePart)) return false;
    slash = next;
  }
  return true;
}

}  // namespace

// +HH:MM / -HH:MM (hours 00-14), SYSTEM, or a zone name like Asia/Shanghai.
bool IsTimeZone(const std::string& tz) {
  if (tz.size() == 6 && (tz[0] == '+' || tz[0] == '-')) return IsOffset(tz);
  if (tz.empty() || tz.size() > 64) return false;
  return IsZoneName(tz);
}

namespace {

bool IsPortNumber(const std::string& port) {
  return !port.empty() && port.size() <= 5 && std::all_of(port.begin(), port.end(), IsDigit) &&
         std::stoi(port) <= 65535;
}

bool IsHexOrColon(char c) {
  return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == ':' || c == '.';
}

// A host name, an IPv4 address or a bracketed IPv6 address (not empty).
bool IsListenHost(const std::string& host) {
  if (host.size() > 255) return false;  // DNS names have at most 253 characters
  if (host.front() == '[')
    return host.size() >= 3 && host.back() == ']' &&
           std::all_of(host.begin() + 1, host.end() - 1, IsHexOrColon);
  return std::all_of(host.begin(), host.end(),
                     [](char c) { return IsAlpha(c) || IsDigit(c) || c == '.' || c == '-'; });
}

}  // namespace

// host:port with a host name, an IPv4 address or a bracketed IPv6 address.
bool IsListenAddress(const std::string& s) {
  size_t colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  return IsListenHost(s.substr(0, colon)) && IsPortNumber(s.substr(colon + 1));
}

void Parser::Report(const YAML::Mark& mark, const std::string& path,
                    const std::string& what) const {
  // A second problem on one key follows from the first (a stand-in value),
  // and a required key is not missing when a misspelling of it was found.
  for (const auto& p : problems_)
    if (p.path == path) return;
  if (what.rfind("is required", 0) == 0 && suggested_.count(path)) return;
  std::ostringstream os;
  os << file_;
  if (!mark.is_null()) os << ":" << mark.line + 1 << ":" << mark.column + 1;
  os << ": " << (path.empty() ? "(top level)" : path) << ": " << what;
  Problem p;
  if (!mark.is_null()) {
    p.line = mark.line;
    p.column = mark.column;
  }
  p.path = path;
  p.text = OneLine(os.str());
  problems_.push_back(std::move(p));
}

void Parser::Fail(const YAML::Mark& mark, const std::string& path, const std::string& what) const {
  Report(mark, path, what);
  throw Abandoned{};
}

bool Parser::Guard(const std::function<void()>& section) const {
  try {
    section();
    return true;
  } catch (const Abandoned&) {
  } catch (const YAML::Exception& e) {
    // E.g. a subscript into a scalar where a mapping belongs.
    Report(e.mark, "yaml", e.msg);
  }
  return false;
}

void Parser::ThrowIfProblems() const {
  if (problems_.empty()) return;
  std::vector<Problem> sorted = problems_;
  std::stable_sort(sorted.begin(), sorted.end(), [](const Problem& a, const Problem& b) {
    return std::pair(a.line, a.column) < std::pair(b.line, b.column);
  });
  std::vector<std::string> lines;
  std::string text;
  for (const auto& p : sorted) {
    if (lines.size() == kMaxProblems) break;
    lines.push_back(p.text);
    text += (text.empty() ? "" : "\n") + p.text;
  }
  if (sorted.size() > kMaxProblems)
    text += "\n" + file_ + ": " + std::to_string(sorted.size() - kMaxProblems) +
            " more problem(s) not shown: fix these and check again";
  throw ConfigError(text, std::move(lines));
}

void Parser::RequireMap(const YAML::Node& n, const std::string& path) const {
  if (!n.IsMap()) Fail(n.Mark(), path, "must be a mapping (key: value pairs)");
}

namespace {
// "unknown key (did you mean "x"?)" when a known key is near, else the list.
// *suggested: the key suggested, if any.
std::string UnknownKey(const std::string& key, const std::vector<std::string>& allowed,
                       std::string* suggested) {
  std::string best;
  size_t best_d = std::numeric_limits<size_t>::max();
  for (const auto& a : allowed) {
    size_t d = EditDistance(key, a);
    if (d < best_d) {
      best_d = d;
      best = a;
    }
  }
  std::string msg = "unknown key";
  if (best_d <= std::max<size_t>(2, key.size() / 3)) {
    *suggested = best;
    return msg + " (did you mean \"" + best + "\"?)";
  }
  msg += " (known keys:";
  for (const auto& a : allowed) msg += " " + a;
  return msg + ")";
}
}  // namespace

void Parser::CheckKeys(const YAML::Node& map, const std::string& path,
                       const std::vector<std::string>& allowed) const {
  std::set<std::string> seen;
  for (const auto& kv : map) {
    (void)Guard([&] {
      std::string key = Key(kv.first, path);
      std::string where = path.empty() ? key : path + "." + key;
      if (!seen.insert(key).second) Fail(kv.first.Mark(), where, "duplicate key");
      if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) return;
      if (key == "<<")
        Fail(kv.first.Mark(), where,
             "YAML merge keys (<<) are not supported: write the keys out, or use ${VAR} for "
             "shared values");
      std::string suggested;
      const std::string what = UnknownKey(key, allowed, &suggested);
      if (!suggested.empty()) suggested_.insert(path.empty() ? suggested : path + "." + suggested);
      Fail(kv.first.Mark(), where, what);
    });
  }
}

// A mapping key: a plain scalar, never a list or mapping.
std::string Parser::Key(const YAML::Node& k, const std::string& path) const {
  if (!k.IsScalar()) Fail(k.Mark(), path, "a key must be a plain string, not a list or mapping");
  return k.Scalar();
}

// A bad value is recorded and read as "", so the walk goes on.
std::string Parser::Str(const YAML::Node& n, const std::string& path, const char* what) const {
  if (!n.IsScalar()) {
    Report(n.Mark(), path, std::string("must be ") + what + ", not " + Shape(n));
    return "";
  }
  std::string err;
  std::string v = ExpandEnv(n.Scalar(), options_.env, &err);
  if (!err.empty()) {
    Report(n.Mark(), path, err);
    return "";
  }
  return v;
}

const char* Parser::Shape(const YAML::Node& n) {
  if (n.IsNull()) return "empty";
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a mapping";
  return "a scalar";
}

// A bad value is recorded and read as `min`.
int64_t Parser::Int(const YAML::Node& n, const std::string& path, int64_t min, int64_t max) const {
  const size_t before = problems_.size();
  std::string s = Str(n, path, "an integer");
  if (problems_.size() != before) return min;
  const std::string range =
      "must be between " + std::to_string(min) + " and " + std::to_string(max);
  // Plain decimal only: no spaces, signs other than '-', fractions or units.
  size_t digits = s.size() > 0 && s[0] == '-' ? 1 : 0;
  if (s.size() == digits ||
      !std::all_of(s.begin() + static_cast<std::ptrdiff_t>(digits), s.end(), IsDigit)) {
    Report(n.Mark(), path, "must be an integer (got " + Quoted(s) + ")");
    return min;
  }
  int64_t v = 0;
  try {
    v = std::stoll(s);
  } catch (const std::out_of_range&) {
    Report(n.Mark(), path, range + " (got " + Quoted(s) + ")");
    return min;
  }
  if (v < min || v > max) {
    Report(n.Mark(), path, range + " (got " + s + ")");
    return min;
  }
  return v;
}

// A bad value is recorded and read as the first of `values`.
size_t Parser::OneOf(const YAML::Node& n, const std::string& path,
                     const std::vector<std::string>& values) const {
  std::string list;
  for (const auto& v : values) list += (list.empty() ? "" : " | ") + v;
  const std::string what = "one of " + list;
  const size_t before = problems_.size();
  std::string s = Str(n, path, what.c_str());
  if (problems_.size() != before) return 0;
  auto it = std::find(values.begin(), values.end(), s);
  if (it != values.end()) return static_cast<size_t>(it - values.begin());
  Report(n.Mark(), path, "must be " + what + " (got " + Quoted(s) + ")");
  return 0;
}

std::map<std::string, std::string> Parser::StringMap(const YAML::Node& n,
                                                     const std::string& path) const {
  std::map<std::string, std::string> out;
  if (n.IsNull()) return out;
  RequireMap(n, path);
  for (const auto& kv : n) {
    (void)Guard([&] {
      std::string key = Key(kv.first, path);
      if (out.count(key)) Fail(kv.first.Mark(), path + "." + key, "duplicate key");
      if (key.find("${") != std::string::npos)
        Fail(kv.first.Mark(), path + "." + key,
             "keys are never expanded (${VAR} works in values only); write the key itself");
      out[key] = Str(kv.second, path + "." + key);
    });
  }
  return out;
}

FileInfo Parser::ReadNamedFile(const YAML::Node& n, const std::string& path,
                               const std::string& file, const std::string& shown) const {
  if (file.empty()) {
    Report(n.Mark(), path, "must not be empty");
    return {};
  }
  FileRead r = options_.read_file ? options_.read_file(file) : ReadFileFromDisk(file);
  if (!r.info) {
    Report(n.Mark(), path, "cannot read " + Quoted(shown.empty() ? file : shown) + ": " + r.error);
    return {};
  }
  return std::move(*r.info);
}

}  // namespace config_internal
}  // namespace outbox
