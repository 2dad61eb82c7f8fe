// The HTTP listener's default address (a security default that needs no
// database; the Kafka side is in tests/kafka/kafka_security_test.cc).

#include "http/http_server.h"

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

#include "config/config_loader.h"

using namespace outbox;

TEST_CASE("the HTTP listener defaults to 127.0.0.1 and binds loopback only", "[security]") {
  LoadOptions o;
  o.env = [](const std::string&) -> std::optional<std::string> { return std::nullopt; };
  auto loaded = LoadConfigText(
      "kafka: {bootstrap_servers: k:9092}\nservices:\n  - name: a\n    mysql: {user: u, "
      "database: d}\n",
      "c.yaml", o);
  CHECK(loaded.config.http_listen == "127.0.0.1:9464");
  CHECK(Config{}.http_listen == "127.0.0.1:9464");

  boost::asio::io_context io;
  HttpServer server(io, [](const std::string&) { return HttpResponse{200, "text/plain", ""}; });
  REQUIRE(server.Listen("127.0.0.1:0").ok());
  CHECK(server.port() != 0);
  CHECK(server.local_address() == "127.0.0.1");
}
