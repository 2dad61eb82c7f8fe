#include "schema/registry_http.h"

#include <openssl/ssl.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

namespace outbox {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

namespace {

// One request's state, on a private io_context: asynchronous operations
// are the ones that honour the stream's deadline.
struct Call {
  asio::io_context io;
  tcp::resolver resolver{io};
  http::request<http::empty_body> req;
  http::response<http::string_body> res;
  beast::flat_buffer buffer;
  beast::error_code result;
  std::string step = "resolve";
};

template <class Stream>
void WriteAndRead(Call* c, Stream* stream) {
  c->step = "request";
  http::async_write(*stream, c->req, [c, stream](beast::error_code ec, size_t) {
    if (ec) return void(c->result = ec);
    c->step = "answer";
    http::async_read(*stream, c->buffer, c->res,
                     [c](beast::error_code ec2, size_t) { c->result = ec2; });
  });
}

// Resolves and connects `socket`, then calls `next`.
template <class Next>
void Connect(Call* c, const RegistryUrl& url, beast::tcp_stream* socket, Next next) {
  c->resolver.async_resolve(
      url.host, url.port,
      [c, socket, next](beast::error_code ec, const tcp::resolver::results_type& r) {
        if (ec) return void(c->result = ec);
        c->step = "connect";
        socket->async_connect(r, [c, next](beast::error_code ec2, const tcp::endpoint&) {
          if (ec2) return void(c->result = ec2);
          next();
        });
      });
}

void RunPlain(Call* c, const RegistryUrl& url, std::chrono::milliseconds timeout) {
  beast::tcp_stream stream(c->io);
  stream.expires_after(timeout);
  Connect(c, url, &stream, [c, &stream] { WriteAndRead(c, &stream); });
  // The resolver has no deadline of its own; run_for bounds it too.
  c->io.run_for(timeout + std::chrono::milliseconds(100));
}

void RunTls(Call* c, const RegistryUrl& url, ssl::context* ctx, std::chrono::milliseconds timeout) {
  beast::ssl_stream<beast::tcp_stream> stream(c->io, *ctx);
  // SNI, and the certificate checked against the host name.
  SSL_set_tlsext_host_name(stream.native_handle(), url.host.c_str());
  stream.set_verify_callback(ssl::host_name_verification(url.host));
  beast::get_lowest_layer(stream).expires_after(timeout);
  Connect(c, url, &beast::get_lowest_layer(stream), [c, &stream] {
    c->step = "TLS handshake";
    stream.async_handshake(ssl::stream_base::client, [c, &stream](beast::error_code ec) {
      if (ec) return void(c->result = ec);
      WriteAndRead(c, &stream);
    });
  });
  c->io.run_for(timeout + std::chrono::milliseconds(100));
}

}  // namespace

Status HttpSchemaRegistry::Make(RegistryEndpoint endpoint,
                                std::shared_ptr<HttpSchemaRegistry>* out) {
  RegistryUrl url;
  if (Status s = ParseRegistryUrl(endpoint.url, &url); !s.ok()) return s;
  std::shared_ptr<HttpSchemaRegistry> r(new HttpSchemaRegistry(std::move(endpoint), url));
  if (url.tls) {
    r->tls_ = std::make_unique<ssl::context>(ssl::context::tls_client);
    beast::error_code ec;
    r->tls_->set_verify_mode(ssl::verify_peer, ec);
    if (r->endpoint_.ca_file.empty())
      r->tls_->set_default_verify_paths(ec);
    else
      r->tls_->load_verify_file(r->endpoint_.ca_file, ec);
    if (ec)
      return Status::Invalid(
          "schema registry " + r->endpoint_.url + ": CA certificates " +
          (r->endpoint_.ca_file.empty() ? "of the system" : "\"" + r->endpoint_.ca_file + "\"") +
          ": " + ec.message());
  }
  *out = std::move(r);
  return Status::Ok();
}

HttpSchemaRegistry::HttpSchemaRegistry(RegistryEndpoint endpoint, RegistryUrl url)
    : endpoint_(std::move(endpoint)), url_(std::move(url)) {
  if (!endpoint_.username.empty())
    authorization_ = "Basic " + Base64(endpoint_.username + ":" + endpoint_.password);
}

HttpSchemaRegistry::~HttpSchemaRegistry() = default;

Status HttpSchemaRegistry::GetSubjectVersion(const std::string& subject, const std::string& version,
                                             RegisteredSchema* out) {
  Status s = Get(
      "/subjects/" + PercentEncodeSegment(subject) + "/versions/" + PercentEncodeSegment(version),
      "subject " + subject + " version " + version, out);
  if (s.ok() && out->subject.empty()) out->subject = subject;
  return s;
}

Status HttpSchemaRegistry::GetSchemaById(int32_t id, RegisteredSchema* out) {
  Status s = Get("/schemas/ids/" + std::to_string(id), "schema id " + std::to_string(id), out);
  // The answer by id names no id (Confluent's gives the schema alone).
  if (s.ok()) out->id = id;
  return s;
}

Status HttpSchemaRegistry::Get(const std::string& path, const std::string& what,
                               RegisteredSchema* out) {
  int status = 0;
  std::string body;
  if (Status s = Exchange(path, &status, &body); !s.ok()) return s;
  return ReadRegistryAnswer(status, body, what, out);
}

Status HttpSchemaRegistry::Exchange(const std::string& path, int* status, std::string* body) {
  Call c;
  c.req = http::request<http::empty_body>(http::verb::get, url_.prefix + path, 11);
  const bool default_port = url_.port == (url_.tls ? "443" : "80");
  const std::string host =
      url_.host.find(':') != std::string::npos ? "[" + url_.host + "]" : url_.host;
  c.req.set(http::field::host, default_port ? host : host + ":" + url_.port);
  c.req.set(http::field::user_agent, "outbox-relay");
  c.req.set(http::field::accept, "application/vnd.schemaregistry.v1+json, application/json");
  if (!authorization_.empty()) c.req.set(http::field::authorization, authorization_);
  if (url_.tls)
    RunTls(&c, url_, tls_.get(), endpoint_.timeout);
  else
    RunPlain(&c, url_, endpoint_.timeout);
  const std::string where = "schema registry " + endpoint_.url + ": ";
  if (!c.io.stopped())
    return Status::Unavailable(where + c.step + " timed out after " +
                               std::to_string(endpoint_.timeout.count()) + " ms");
  if (c.result) return Status::Unavailable(where + c.step + ": " + c.result.message());
  *status = static_cast<int>(c.res.result_int());
  *body = std::move(c.res.body());
  return Status::Ok();
}

}  // namespace outbox
