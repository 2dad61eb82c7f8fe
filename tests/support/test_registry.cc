#include "support/test_registry.h"

#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "support/http_probe.h"
#include "support/wait.h"

#ifndef OUTBOX_SOURCE_DIR
#error "OUTBOX_SOURCE_DIR must name the source tree (tests/CMakeLists.txt)"
#endif

namespace outbox::testing {

namespace {

// A self-signed certificate for localhost (no IP in it: https://127.0.0.1
// fails the host name check, which a test shows).
void MakeCertificate(const std::string& dir) {
  const ProcessResult r =
      RunProcess({"/usr/bin/openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                  "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost", "-keyout",
                  dir + "/key.pem", "-out", dir + "/cert.pem"},
                 {"PATH=/usr/bin:/bin"});
  if (r.exit_code != 0) throw std::runtime_error("openssl req failed: " + r.err);
}

}  // namespace

TestRegistry::TestRegistry(Options options) : options_(std::move(options)) {
  schemas_path_ = dir_.path() + "/schemas.json";
  WriteSchemas();
  const std::string port_file = dir_.path() + "/port";
  std::vector<std::string> argv = {
      "/usr/bin/python3", OUTBOX_SOURCE_DIR "/tests/support/test_registry.py",
      "--schemas",        schemas_path_,
      "--port-file",      port_file};
  if (!options_.user.empty())
    argv.insert(argv.end(), {"--user", options_.user, "--password", options_.password});
  if (options_.tls) {
    MakeCertificate(dir_.path());
    ca_file_ = dir_.path() + "/cert.pem";
    argv.insert(argv.end(), {"--tls-cert", ca_file_, "--tls-key", dir_.path() + "/key.pem"});
  }
  process_ = std::make_unique<ChildProcess>(argv, std::vector<std::string>{"PATH=/usr/bin:/bin"});
  if (!WaitFor([&] { return !ReadFile(port_file).empty() || !process_->running(); },
               std::chrono::seconds(20)) ||
      ReadFile(port_file).empty())
    throw std::runtime_error("the test registry did not start: " + process_->err());
  port_ = std::stoi(ReadFile(port_file));
}

TestRegistry::~TestRegistry() = default;

std::string TestRegistry::url() const {
  return (options_.tls ? "https://localhost:" : "http://127.0.0.1:") + std::to_string(port_);
}

int TestRegistry::Register(const std::string& subject, const std::string& schema,
                           const std::string& type) {
  int id = next_id_;
  for (const Version& v : versions_)
    if (v.schema == schema && v.type == type) id = v.id;
  if (id == next_id_) ++next_id_;
  versions_.push_back({subject, schema, type, id});
  WriteSchemas();
  return id;
}

void TestRegistry::WriteSchemas() {
  nlohmann::json subjects = nlohmann::json::object();
  for (const Version& v : versions_) {
    nlohmann::json entry = {{"id", v.id}, {"schema", v.schema}};
    if (v.type != "AVRO") entry["schemaType"] = v.type;
    subjects[v.subject].push_back(entry);
  }
  // Written whole, then renamed: the registry never reads half a file.
  const std::string tmp =
      dir_.Write("schemas.json.tmp", nlohmann::json{{"subjects", subjects}}.dump());
  if (std::rename(tmp.c_str(), schemas_path_.c_str()) != 0)
    throw std::runtime_error("cannot write " + schemas_path_);
}

void TestRegistry::SetMode(const std::string& mode, int delay_ms) {
  const HttpReply r =
      HttpGet(port_, "/_test/mode?mode=" + mode + "&delay_ms=" + std::to_string(delay_ms));
  if (r.status != 200) throw std::runtime_error("the test registry refused mode " + mode);
}

int TestRegistry::Requests() {
  const HttpReply r = HttpGet(port_, "/_test/requests");
  if (r.status != 200) throw std::runtime_error("the test registry did not answer /_test/requests");
  return nlohmann::json::parse(r.body)["count"].get<int>();
}

void TestRegistry::Stop() { process_.reset(); }

}  // namespace outbox::testing
