#include "http/http_server.h"

#include <spdlog/spdlog.h>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace outbox {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;

namespace {

// One connection: read requests, answer, until the peer closes or idles.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, HttpServer::Handler& handler)
      : stream_(std::move(socket)), handler_(handler) {}

  void Start() { Read(); }

 private:
  void Read() {
    request_ = {};
    // A slow or silent client cannot hold the connection forever.
    stream_.expires_after(std::chrono::seconds(10));
    http::async_read(stream_, buffer_, request_,
                     [self = shared_from_this()](beast::error_code ec, size_t) {
                       if (ec) return self->Close();
                       self->Respond();
                     });
  }

  void Respond() {
    HttpResponse r;
    if (request_.method() != http::verb::get && request_.method() != http::verb::head) {
      r = {405, "text/plain; charset=utf-8", "method not allowed\n"};
    } else {
      std::string target(request_.target());
      if (auto q = target.find('?'); q != std::string::npos) target.resize(q);
      r = handler_(target);
    }
    auto res = std::make_shared<http::response<http::string_body>>(
        static_cast<http::status>(r.status), request_.version());
    res->set(http::field::server, "outbox-relay");
    res->set(http::field::content_type, r.content_type);
    res->keep_alive(request_.keep_alive());
    if (request_.method() != http::verb::head) res->body() = std::move(r.body);
    res->prepare_payload();
    http::async_write(stream_, *res,
                      [self = shared_from_this(), res](beast::error_code ec, size_t) {
                        if (ec || !res->keep_alive()) return self->Close();
                        self->Read();
                      });
  }

  void Close() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  http::request<http::string_body> request_;
  HttpServer::Handler& handler_;
};

}  // namespace

HttpServer::HttpServer(boost::asio::io_context& io, Handler handler)
    : io_(io), handler_(std::move(handler)), acceptor_(io) {}

Status HttpServer::Listen(const std::string& listen) {
  auto colon = listen.rfind(':');
  std::string host = listen.substr(0, colon);
  if (host.size() > 1 && host.front() == '[') host = host.substr(1, host.size() - 2);
  unsigned short port = static_cast<unsigned short>(std::stoi(listen.substr(colon + 1)));
  beast::error_code ec;
  tcp::resolver resolver(io_);
  auto results = resolver.resolve(host, std::to_string(port), ec);
  if (ec || results.empty())
    return Status::Error("http.listen " + listen + ": cannot resolve " + host + ": " +
                         ec.message());
  tcp::endpoint ep = results.begin()->endpoint();
  acceptor_.open(ep.protocol(), ec);
  if (!ec) acceptor_.set_option(boost::asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(ep, ec);
  if (!ec) acceptor_.listen(boost::asio::socket_base::max_listen_connections, ec);
  if (ec) return Status::Error("http.listen " + listen + ": " + ec.message());
  port_ = acceptor_.local_endpoint().port();
  Accept();
  return Status::Ok();
}

std::string HttpServer::local_address() const {
  beast::error_code ec;
  auto ep = acceptor_.local_endpoint(ec);
  return ec ? "" : ep.address().to_string();
}

void HttpServer::Accept() {
  acceptor_.async_accept([this](beast::error_code ec, tcp::socket socket) {
    if (ec == boost::asio::error::operation_aborted) return;
    if (!ec) std::make_shared<Session>(std::move(socket), handler_)->Start();
    Accept();
  });
}

void HttpServer::Close() {
  beast::error_code ec;
  acceptor_.close(ec);
}

}  // namespace outbox
