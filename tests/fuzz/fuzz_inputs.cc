#include "fuzz_inputs.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/log.h"
#include "common/trace_context.h"
#include "config/config_loader.h"
#include "config/topic_template.h"
#include "relay/router.h"

namespace outbox::fuzz {

namespace {

// Splits on '\0' into at most `n` fields; missing ones are empty.
std::vector<std::string> Fields(const uint8_t* data, size_t size, size_t n) {
  std::vector<std::string> out(n);
  std::string_view in(reinterpret_cast<const char*>(data), size);
  for (size_t i = 0; i < n; ++i) {
    size_t z = i + 1 < n ? in.find('\0') : std::string_view::npos;
    out[i] = std::string(in.substr(0, z));
    if (z == std::string_view::npos) break;
    in.remove_prefix(z + 1);
  }
  return out;
}

bool AllTopicChars(std::string_view s) {
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

void Require(bool invariant) {
  if (!invariant) std::abort();
}

}  // namespace

void ConfigLoaderInput(const uint8_t* data, size_t size) {
  LoadOptions o;
  o.env = [](const std::string& name) -> std::optional<std::string> {
    if (name == "PW") return std::string("hunter2");
    if (name == "PORT") return std::string("3306");
    if (name == "EMPTY") return std::string();
    if (name == "HOST") return std::string("db.example");
    return std::nullopt;
  };
  o.read_file = [](const std::string& path) -> FileRead {
    if (path == "/secrets/pw") return {FileInfo{"hunter2\n", false}, ""};
    if (path == "/secrets/open") return {FileInfo{"hunter2", true}, ""};
    if (path == "/secrets/empty") return {FileInfo{"\n", false}, ""};
    if (path == "/tls/ca.pem") return {FileInfo{"-----BEGIN CERTIFICATE-----\n", false}, ""};
    return {std::nullopt, "No such file or directory"};
  };
  const std::string text(reinterpret_cast<const char*>(data), size);
  // The secret may show only where the file itself wrote it or routed the
  // variable into a plain value (e.g. table: ${PW}).
  const bool names_secret =
      text.find("hunter2") != std::string::npos || text.find("PW") != std::string::npos;
  try {
    LoadedConfig c = LoadConfigText(text, "fuzz.yaml", o);
    // What a loaded config promises the rest of the relay.
    Require(!c.config.services.empty());
    for (const auto& s : c.config.services) {
      TopicTemplate t;
      std::string err;
      Require(TopicTemplate::Parse(s.topic, &t, &err));
      Require(s.batch_size >= 1 && s.lease_ms >= 2000 && !s.kafka.bootstrap_servers.empty());
      Require(s.mysql.password.find("hunter2") == std::string::npos ||
              s.mysql.password_source != "none");
    }
  } catch (const ConfigError& e) {
    // The expected answer to a bad file: one line per problem, at most 20
    // (and a line saying how many more), never the secret.
    std::string_view msg = e.what();
    Require(!e.problems().empty() && e.problems().size() <= 20);
    for (const auto& p : e.problems()) Require(p.find('\n') == std::string::npos);
    Require(static_cast<size_t>(std::count(msg.begin(), msg.end(), '\n')) <= e.problems().size());
    Require(names_secret || msg.find("hunter2") == std::string_view::npos);
  }
}

void TopicTemplateInput(const uint8_t* data, size_t size) {
  std::vector<std::string> f = Fields(data, size, 4);
  TopicTemplate t;
  std::string err;
  if (!TopicTemplate::Parse(f[0], &t, &err)) {
    Require(!err.empty());
    return;
  }
  std::string topic = t.Render(f[1], f[2], f[3]);
  std::string why;
  bool valid = IsValidTopicName(topic, &why);
  if (AllTopicChars(f[1]) && AllTopicChars(f[2]) && AllTopicChars(f[3]) && !topic.empty() &&
      topic.size() <= 249 && topic != "." && topic != "..")
    Require(valid);
  if (!t.uses_row_fields()) Require(topic == t.Render("", "", f[3]));
}

namespace {

// The value of the last header `name` of `m`, or nullopt.
std::optional<std::string> HeaderOf(const Message& m, const std::string& name) {
  std::optional<std::string> out;
  for (const auto& [k, v] : m.headers)
    if (k == name) out = v;
  return out;
}

// What a routed message promises about trace context and the envelope.
void CheckRouted(const OutboxRow& row, const Message& m, bool cloudevents) {
  std::string why;
  Require(IsValidTopicName(m.topic, &why));
  Require(m.key == std::to_string(row.aggregate.id));
  Require(m.headers.size() >= 5);
  // A row without a traceparent may name the trace headers in its headers
  // column; with one (valid or not) only the relay sets them.
  const bool has = row.traceparent && !row.traceparent->empty();
  const bool valid = has && CheckTraceparent(*row.traceparent).valid;
  const auto traceparent = HeaderOf(m, "traceparent");
  if (has) Require(traceparent == (valid ? row.traceparent : std::nullopt));
  if (has && !valid) Require(!HeaderOf(m, "tracestate"));
  if (!cloudevents) return;
  Require(HeaderOf(m, "ce_specversion") == std::optional<std::string>("1.0"));
  Require(HeaderOf(m, "ce_id") == std::optional<std::string>(row.event_key));
  Require(!row.event_key.empty() && !HeaderOf(m, "ce_source").value_or("").empty());
  Require(HeaderOf(m, "ce_traceparent") == (valid ? row.traceparent : std::nullopt));
}

}  // namespace

void RouterInput(const uint8_t* data, size_t size) {
  std::vector<std::string> f = Fields(data, size, 10);
  ServiceConfig s;
  s.name = "fuzz";
  s.topic = "outbox.{service}.{aggregate_type}.{event_type}";
  s.topics = {{"Override", "over.ride"}};
  OutboxRow row;
  auto num = [](const std::string& v) -> int64_t {
    int64_t n = 0;
    std::memcpy(&n, v.data(), std::min(v.size(), sizeof n));
    return n;
  };
  row.id = num(f[0]);
  // The id's lowest bit picks the envelope.
  if (row.id & 1) s.envelope = Envelope::kCloudEvents;
  Router router(s);
  row.aggregate.id = num(f[1]);
  row.created_at_unix = num(f[2]);
  row.aggregate.type = f[3];
  row.event_type = f[4];
  row.event_key = f[5];
  if (!f[6].empty()) row.topic = f[6].substr(1);  // first byte: present or not
  if (!f[7].empty()) row.headers = f[7];
  if (!f[8].empty()) row.traceparent = f[8].substr(1);
  if (!f[9].empty()) row.tracestate = f[9];
  row.payload = "{}";
  std::string error;
  std::optional<Message> m = router.Route(row, &error);
  if (!m) {
    Require(!error.empty());
    return;
  }
  CheckRouted(row, *m, s.envelope == Envelope::kCloudEvents);
}

void TraceparentInput(const uint8_t* data, size_t size) {
  // A copy of exactly `size` bytes: ASan catches a read past the value.
  std::vector<char> bytes(data, data + size);
  const std::string_view v(bytes.data(), bytes.size());
  const TraceparentCheck c = CheckTraceparent(v);
  auto lower_hex = [](std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char ch) {
      return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f');
    });
  };
  auto zero = [](std::string_view s) { return s.find_first_not_of('0') == std::string_view::npos; };
  const bool expected =
      v.size() >= 55 && lower_hex(v.substr(0, 2)) && v.substr(0, 2) != "ff" &&
      (v.substr(0, 2) == "00" ? v.size() == 55 : v.size() == 55 || v[55] == '-') && v[2] == '-' &&
      v[35] == '-' && v[52] == '-' && lower_hex(v.substr(3, 32)) && !zero(v.substr(3, 32)) &&
      lower_hex(v.substr(36, 16)) && !zero(v.substr(36, 16)) && lower_hex(v.substr(53, 2));
  Require(c.valid == expected);
  Require(c.valid ? c.trace_id == v.substr(3, 32) && c.parent_id == v.substr(36, 16)
                  : c.trace_id.empty() && *c.why != '\0');
}

void LogLineInput(const uint8_t* data, size_t size) {
  std::vector<std::string> f = Fields(data, size, 4);
  int64_t id = 0;
  std::memcpy(&id, f[3].data(), std::min(f[3].size(), sizeof id));
  const LogField fields[] = {
      {f[1], f[2]}, {"outbox_id", id}, {"error", f[3]}, {"count", f[1].size()}};
  // Up to 2^40 ms after the epoch (year 2004): the nanosecond clock holds it.
  const auto time = std::chrono::system_clock::time_point(
      std::chrono::milliseconds(static_cast<int64_t>(static_cast<uint64_t>(id) % (1ULL << 40))));
  for (LogFormat format : {LogFormat::kJson, LogFormat::kText}) {
    for (bool prefix : {false, true}) {
      LogLineOptions o{format, f[2], prefix};
      const auto level = static_cast<spdlog::level::level_enum>(static_cast<size_t>(id) % 7);
      const std::string line = FormatLogLine(o, level, time, f[0], fields);
      Require(!line.empty() && line.find('\n') == line.size() - 1);
      std::string_view body(line.data(), line.size() - 1);
      if (prefix) {
        Require(body.size() > 3 && body[0] == '<' && body[2] == '>' && body[1] >= '3' &&
                body[1] <= '7');
        body.remove_prefix(3);
      }
      if (format == LogFormat::kText) {
        for (char c : body) Require(static_cast<unsigned char>(c) >= 0x20 && c != 0x7f);
        continue;
      }
      auto j = nlohmann::json::parse(body, nullptr, false);
      Require(j.is_object() && j.at("outbox_id") == std::to_string(id) && j.contains("msg"));
    }
  }
}

}  // namespace outbox::fuzz
