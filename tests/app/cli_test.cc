// The command line through the real binary: exit codes, -c, the default
// config, --version, and `health` against an in-process HTTP server.

#include <catch2/catch.hpp>
#include <thread>

#include "common/build_info.h"
#include "http/http_server.h"
#include "support/process.h"

using namespace outbox;
using namespace outbox::testing;

namespace {

const std::string kValid =
    "kafka: {bootstrap_servers: 127.0.0.1:1}\nservices:\n  - name: order\n    mysql: {user: u, "
    "database: d}\n";

ProcessResult Cli(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
  std::vector<std::string> argv = {OUTBOX_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProcess(argv, ChildEnv(env), std::chrono::seconds(30));
}

// An HTTP server on 127.0.0.1:<free port> answering /healthz with `status`.
class FakeRelayHttp {
 public:
  explicit FakeRelayHttp(int status)
      : server_(io_, [status](const std::string& target) -> HttpResponse {
          if (target != "/healthz") return {404, "text/plain", "not found\n"};
          return {status, "text/plain", status == 200 ? "ok\n" : "stalled:\norder/claim: hung\n"};
        }) {
    REQUIRE(server_.Listen("127.0.0.1:0").ok());
    thread_ = std::thread([this] { io_.run(); });
  }
  ~FakeRelayHttp() {
    io_.stop();
    thread_.join();
  }
  unsigned short port() const { return server_.port(); }

 private:
  boost::asio::io_context io_;
  HttpServer server_;
  std::thread thread_;
};

}  // namespace

TEST_CASE("no arguments print usage on stderr and exit 2", "[cli][process]") {
  ProcessResult r = Cli({});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("\nUsage: outbox-relay [OPTIONS] [SUBCOMMAND]\n") != std::string::npos);
  CHECK(r.err.find("-c,--config") != std::string::npos);
  CHECK(r.out.empty());
}

TEST_CASE("the version command and its flags print version revision and library versions",
          "[cli][process]") {
  for (const auto& arg : {"--version", "-V", "version"}) {
    ProcessResult r = Cli({arg});
    INFO(arg << "\n" << r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out.rfind(std::string("outbox-relay ") + BuildVersion() + "\nrevision " +
                          BuildRevision() + "\n",
                      0) == 0);
    CHECK(r.out.find("\nlibrdkafka ") != std::string::npos);
    // "MySQL Connector/C++ 1.1.12" and the client library, on one line or two.
    CHECK(r.out.find("\nMySQL ") != std::string::npos);
    CHECK(r.out.find("client library ") != std::string::npos);
  }
}

TEST_CASE("the short config flag -c is accepted before and after the subcommand",
          "[cli][process]") {
  TempDir dir;
  const std::string file = dir.Write("c.yaml", kValid);
  for (const auto& args : std::vector<std::vector<std::string>>{{"-c", file, "check"},
                                                                {"check", "-c", file},
                                                                {"--config", file, "check"},
                                                                {"check", "--config", file},
                                                                {"--config=" + file, "check"}}) {
    ProcessResult r = Cli(args);
    INFO(args[0] << " " << args[1] << "\n" << r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find(": configuration is valid (1 service(s))") != std::string::npos);
  }
  // Two levels down, after the subcommand's own options: the file is read
  // (the service name is checked against it).
  ProcessResult r = Cli({"dead", "list", "--service", "nope", "-c", file});
  CHECK(r.exit_code == 2);
  CHECK(r.err == file + ": no service named \"nope\" (services: order)\n");
}

TEST_CASE("without -c the config is OUTBOX_RELAY_CONFIG and else the default path",
          "[cli][process]") {
  TempDir dir;
  const std::string file = dir.Write("env.yaml", kValid);
  ProcessResult from_env = Cli({"check"}, {"OUTBOX_RELAY_CONFIG=" + file});
  CHECK(from_env.exit_code == 0);
  CHECK(from_env.out.rfind(file + ": configuration is valid", 0) == 0);
  // -c wins over the variable.
  const std::string other = dir.Write("other.yaml", kValid);
  CHECK(Cli({"check", "-c", other}, {"OUTBOX_RELAY_CONFIG=" + file}).out.rfind(other, 0) == 0);
  // Empty counts as unset: the default path (absent on a build machine).
  for (const auto& env : std::vector<std::vector<std::string>>{{"OUTBOX_RELAY_CONFIG="}, {}}) {
    ProcessResult r = Cli({"check"}, env);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("/etc/outbox-relay/config.yaml") != std::string::npos);
    CHECK(r.err.find("no --config given") != std::string::npos);
  }
}

TEST_CASE("usage errors exit 2", "[cli][process]") {
  CHECK(Cli({"frobnicate"}).exit_code == 2);
  CHECK(Cli({"check", "--no-such-flag"}).exit_code == 2);
  CHECK(Cli({"dead"}).exit_code == 2);
  CHECK(Cli({"help", "frobnicate"}).exit_code == 2);
}

TEST_CASE("help and --help show the program's name and every option a command accepts",
          "[cli][process]") {
  ProcessResult top = Cli({"help"});
  CHECK(top.exit_code == 0);
  CHECK(top.out.find("Usage: outbox-relay [OPTIONS] [SUBCOMMAND]\n") != std::string::npos);
  CHECK(top.out.find("-c,--config") != std::string::npos);
  for (const auto& cmd : {"run", "check", "health", "version", "dead"})
    CHECK(top.out.find(std::string("\n  ") + cmd + " ") != std::string::npos);

  // `help check` and `check --help` print the same text: the subcommand's
  // own options and the program's, which it accepts too.
  ProcessResult help_check = Cli({"help", "check"});
  ProcessResult check_help = Cli({"check", "--help"});
  CHECK(help_check.exit_code == 0);
  CHECK(check_help.exit_code == 0);
  CHECK(help_check.out == check_help.out);
  CHECK(check_help.out.find("Usage: outbox-relay check [OPTIONS]\n") != std::string::npos);
  CHECK(check_help.out.find("--connect") != std::string::npos);
  CHECK(check_help.out.find("-c,--config") != std::string::npos);
  CHECK(check_help.out.find("-V,--version") != std::string::npos);

  ProcessResult replay = Cli({"help", "dead", "replay"});
  CHECK(replay.exit_code == 0);
  CHECK(replay.out.find("Usage: outbox-relay dead replay [OPTIONS]\n") != std::string::npos);
  for (const auto& opt : {"--service", "--id", "--all", "--event-type", "--dry-run", "-c,--config"})
    CHECK(replay.out.find(opt) != std::string::npos);
  ProcessResult health = Cli({"health", "--help"});
  for (const auto& opt : {"--url", "--timeout-ms", "-c,--config"})
    CHECK(health.out.find(opt) != std::string::npos);
}

TEST_CASE("health exits 0 when healthz answers 200 and 1 on 503 or no answer", "[cli][process]") {
  FakeRelayHttp healthy(200);
  ProcessResult ok =
      Cli({"health", "--url", "http://127.0.0.1:" + std::to_string(healthy.port()) + "/healthz"});
  INFO(ok.out << ok.err);
  CHECK(ok.exit_code == 0);
  CHECK(ok.out.find(": 200\nok\n") != std::string::npos);

  FakeRelayHttp stalled(503);
  ProcessResult bad =
      Cli({"health", "--url", "http://127.0.0.1:" + std::to_string(stalled.port()) + "/healthz"});
  CHECK(bad.exit_code == 1);
  CHECK(bad.out.find("503\nstalled:\norder/claim: hung\n") != std::string::npos);

  // A port nobody listens on (the server was given one and closed it).
  unsigned short closed_port;
  { closed_port = FakeRelayHttp(200).port(); }
  ProcessResult none =
      Cli({"health", "--url", "http://127.0.0.1:" + std::to_string(closed_port) + "/healthz",
           "--timeout-ms", "3000"});
  CHECK(none.exit_code == 1);
  CHECK(none.out.find("unhealthy") != std::string::npos);
}

TEST_CASE("health reads http.listen from the config and probes loopback for a wildcard address",
          "[cli][process]") {
  FakeRelayHttp healthy(200);
  TempDir dir;
  const std::string file = dir.Write(
      "c.yaml", "http: {listen: \"0.0.0.0:" + std::to_string(healthy.port()) + "\"}\n" + kValid);
  ProcessResult r = Cli({"health", "-c", file});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.rfind("http://127.0.0.1:" + std::to_string(healthy.port()) + "/healthz: 200", 0) ==
        0);
  // It needs no secret: an unset password variable and an unreadable
  // password file do not stop it (check refuses both).
  const std::string secretless = dir.Write(
      "s.yaml", "http: {listen: \"0.0.0.0:" + std::to_string(healthy.port()) +
                    "\"}\nkafka: {bootstrap_servers: 127.0.0.1:1}\nservices:\n  - name: a\n"
                    "    mysql: {user: u, database: d, password_env: HEALTH_TEST_UNSET}\n"
                    "  - name: b\n    mysql: {user: u, database: d, password_file: " +
                    dir.path() + "/no-such-secret}\n");
  CHECK(Cli({"health", "-c", secretless}).exit_code == 0);
  CHECK(Cli({"check", "-c", secretless}).exit_code == 2);
  // Nothing but http.listen is read: an empty broker list, an unknown key
  // and no services at all do not stop it.
  const std::string partial =
      dir.Write("p.yaml", "http: {listen: \"127.0.0.1:" + std::to_string(healthy.port()) +
                              "\"}\nkafka: {bootstrap_servers: \"\"}\nfrobnicate: 1\n");
  CHECK(Cli({"health", "-c", partial}).exit_code == 0);
}

TEST_CASE("health exits 1 and never 2 for a config it cannot read or a bad URL", "[cli][process]") {
  TempDir dir;
  const std::vector<std::vector<std::string>> cases = {
      {"health", "-c", dir.path() + "/missing.yaml"},
      {"health", "-c", dir.Write("syntax.yaml", "http: {listen: \"127.0.0.1:1\n")},
      {"health", "-c", dir.Write("listen.yaml", "http: {listen: nope}\n")},
      {"health", "-c", dir.Write("unset.yaml", "http: {listen: \"${HEALTH_TEST_UNSET}\"}\n")},
      {"health", "--url", "https://127.0.0.1:1/healthz"},
      {"health", "--url", "bogus"},
      {"health", "--no-such-flag"},
      {"health", "--timeout-ms", "0"}};
  for (const auto& args : cases) {
    ProcessResult r = Cli(args);
    INFO(args.back() << "\n" << r.err);
    CHECK(r.exit_code == 1);
    CHECK_FALSE(r.err.empty());
  }
}
