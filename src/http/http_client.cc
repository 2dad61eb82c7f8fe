#include "http/http_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace outbox {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;

Status ParseHttpUrl(const std::string& url, HttpUrl* out) {
  const std::string scheme = "http://";
  if (url.rfind(scheme, 0) != 0)
    return Status::Error("--url " + url + ": must start with http:// (https is not served)");
  std::string rest = url.substr(scheme.size());
  const size_t slash = rest.find('/');
  out->target = slash == std::string::npos ? "/" : rest.substr(slash);
  std::string authority = rest.substr(0, slash);
  size_t colon = authority.rfind(':');
  if (colon == std::string::npos || colon + 1 == authority.size() ||
      authority.find(']', colon) != std::string::npos)
    return Status::Error("--url " + url + ": give the port, e.g. http://127.0.0.1:9464/healthz");
  out->host = authority.substr(0, colon);
  out->port = authority.substr(colon + 1);
  if (out->host.size() > 1 && out->host.front() == '[')
    out->host = out->host.substr(1, out->host.size() - 2);
  if (out->host.empty()) return Status::Error("--url " + url + ": no host");
  return Status::Ok();
}

std::string LocalUrlForListen(const std::string& listen, const std::string& path) {
  const size_t colon = listen.rfind(':');
  std::string host = colon == std::string::npos ? "" : listen.substr(0, colon);
  const std::string port = listen.substr(colon == std::string::npos ? 0 : colon + 1);
  if (host.size() > 1 && host.front() == '[') host = host.substr(1, host.size() - 2);
  // The server accepts on every address; loopback is one of them.
  if (host.empty() || host == "0.0.0.0") host = "127.0.0.1";
  if (host == "::") host = "::1";
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  return "http://" + host + ":" + port + path;
}

Status HttpGet(const HttpUrl& url, std::chrono::milliseconds timeout, HttpGetResult* out) {
  // Asynchronous operations on a private io_context: only they honour the
  // stream's deadline.
  boost::asio::io_context io;
  tcp::resolver resolver(io);
  beast::tcp_stream stream(io);
  beast::flat_buffer buffer;
  http::request<http::empty_body> req(http::verb::get, url.target, 11);
  req.set(http::field::host, url.host);
  req.set(http::field::user_agent, "outbox-relay health");
  http::response<http::string_body> res;
  beast::error_code result;
  std::string step = "resolve";
  stream.expires_after(timeout);
  resolver.async_resolve(
      url.host, url.port, [&](beast::error_code ec, const tcp::resolver::results_type& r) {
        if (ec) return void(result = ec);
        step = "connect";
        stream.async_connect(r, [&](beast::error_code ec2, const tcp::endpoint&) {
          if (ec2) return void(result = ec2);
          step = "request";
          http::async_write(stream, req, [&](beast::error_code ec3, size_t) {
            if (ec3) return void(result = ec3);
            step = "response";
            http::async_read(stream, buffer, res,
                             [&](beast::error_code ec4, size_t) { result = ec4; });
          });
        });
      });
  // The resolver has no deadline of its own; run_for bounds it too.
  io.run_for(timeout + std::chrono::milliseconds(100));
  if (!io.stopped()) return Status::Error(url.host + ":" + url.port + ": " + step + " timed out");
  if (result)
    return Status::Error(url.host + ":" + url.port + ": " + step + ": " + result.message());
  out->status = static_cast<int>(res.result_int());
  out->body = std::move(res.body());
  return Status::Ok();
}

}  // namespace outbox
