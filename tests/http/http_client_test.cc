#include "http/http_client.h"

#include <catch2/catch.hpp>

using namespace outbox;

TEST_CASE("a wildcard listen address is probed on loopback and others as configured", "[http]") {
  CHECK(LocalUrlForListen("0.0.0.0:9464", "/healthz") == "http://127.0.0.1:9464/healthz");
  CHECK(LocalUrlForListen("[::]:9464", "/healthz") == "http://[::1]:9464/healthz");
  CHECK(LocalUrlForListen(":9464", "/healthz") == "http://127.0.0.1:9464/healthz");
  CHECK(LocalUrlForListen("127.0.0.1:9464", "/healthz") == "http://127.0.0.1:9464/healthz");
  CHECK(LocalUrlForListen("10.1.2.3:80", "/x") == "http://10.1.2.3:80/x");
  CHECK(LocalUrlForListen("[fd00::1]:9464", "/healthz") == "http://[fd00::1]:9464/healthz");
  CHECK(LocalUrlForListen("relay.local:9464", "/healthz") == "http://relay.local:9464/healthz");
}

TEST_CASE("health URLs parse into host port and target or name what is wrong", "[http]") {
  HttpUrl u;
  REQUIRE(ParseHttpUrl("http://[::1]:9464/healthz", &u).ok());
  CHECK(u.host == "::1");
  CHECK(u.port == "9464");
  CHECK(u.target == "/healthz");
  REQUIRE(ParseHttpUrl("http://127.0.0.1:9464", &u).ok());
  CHECK(u.target == "/");
  CHECK(ParseHttpUrl("https://127.0.0.1:9464/healthz", &u).message().find("http://") !=
        std::string::npos);
  CHECK(ParseHttpUrl("http://127.0.0.1/healthz", &u).message().find("port") != std::string::npos);
  CHECK(ParseHttpUrl("http://[::1]/healthz", &u).message().find("port") != std::string::npos);
  CHECK_FALSE(ParseHttpUrl("http://:9464/healthz", &u).ok());
}
