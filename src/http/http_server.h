#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <functional>
#include <memory>
#include <string>

#include "common/status.h"

namespace outbox {

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

// A small HTTP/1.1 server on Boost.Beast for /metrics, /healthz and /readyz.
// Runs on the io_context it is given; handlers run on that thread and must
// not block for long.
class HttpServer {
 public:
  using Handler = std::function<HttpResponse(const std::string& target)>;

  HttpServer(boost::asio::io_context& io, Handler handler);
  // Binds host:port (port 0 picks a free one). Call once, before io.run().
  Status Listen(const std::string& listen);
  unsigned short port() const { return port_; }
  // The bound address, e.g. "127.0.0.1". REQUIRES: Listen succeeded.
  std::string local_address() const;
  void Close();

 private:
  void Accept();

  boost::asio::io_context& io_;
  Handler handler_;
  boost::asio::ip::tcp::acceptor acceptor_;
  unsigned short port_ = 0;
};

}  // namespace outbox
