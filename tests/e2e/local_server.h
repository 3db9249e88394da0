// A plain-HTTP server on 127.0.0.1 (a port the kernel chose), whose routes
// the test sets on server() before start(); it serves on a thread of its own
// until destroyed. A receiver of pushes, for instance.
#pragma once

#include <catch2/catch.hpp>
#include <thread>

#include "serve/http.h"

namespace e2e {

class LocalServer {
public:
	LocalServer() { REQUIRE((port_ = server_.bind_to_any_port("127.0.0.1")) > 0); }
	~LocalServer() { stop(); }
	LocalServer(const LocalServer &) = delete;
	LocalServer &operator=(const LocalServer &) = delete;

	httplib::Server &server() { return server_; }
	void start() { thread_ = std::thread([this] { server_.listen_after_bind(); }); }
	int port() const { return port_; }
	// Stops serving: no request is handled after it returns.
	void stop()
	{
		server_.stop();
		if (thread_.joinable())
			thread_.join();
	}

private:
	httplib::Server server_;
	int port_ = 0;
	std::thread thread_;
};

} // namespace e2e
