#pragma once

// A Schema Registry of the tests' own (support/test_registry.py) as a child
// process: the relay's registry client reads from it, the test registers
// schemas in it and injects failures (down, slow, 404, 500). Not thread-safe.

#include <memory>
#include <string>
#include <vector>

#include "support/process.h"

namespace outbox::testing {

class TestRegistry {
 public:
  struct Options {
    std::string user;  // basic auth when not empty
    std::string password;
    // https with a throwaway certificate for "localhost" (openssl), signed
    // by itself: ca_file() is the CA a client must trust.
    bool tls = false;
  };

  // Starts the registry and waits until it listens; throws
  // std::runtime_error when it does not start.
  explicit TestRegistry(Options options);
  TestRegistry() : TestRegistry(Options()) {}
  ~TestRegistry();
  TestRegistry(const TestRegistry&) = delete;
  TestRegistry& operator=(const TestRegistry&) = delete;

  // "http://127.0.0.1:PORT", or "https://localhost:PORT" with tls.
  std::string url() const;
  int port() const { return port_; }
  const std::string& ca_file() const { return ca_file_; }

  // Registers `schema` as the next version of `subject` ("AVRO", "JSON")
  // and returns its id: the id it already has when the same text and type
  // were registered before (under any subject), as Confluent's registry does.
  int Register(const std::string& subject, const std::string& schema,
               const std::string& type = "AVRO");
  // mode: ok | down | slow | 404 | 500 (test_registry.py).
  void SetMode(const std::string& mode, int delay_ms = 0);
  // How many API requests it has received.
  int Requests();
  // Kills it: connections are refused from now on.
  void Stop();

 private:
  struct Version {
    std::string subject, schema, type;
    int id;
  };
  void WriteSchemas();

  Options options_;
  TempDir dir_;
  std::string schemas_path_, ca_file_;
  std::unique_ptr<ChildProcess> process_;
  int port_ = 0;
  std::vector<Version> versions_;
  int next_id_ = 1;
};

}  // namespace outbox::testing
