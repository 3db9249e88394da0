// A local Pyroscope-style ingest endpoint for unit tests of the pusher and of
// the monitor's push sink, and what they share: options that retry quickly,
// a wait for a condition, a request's query parameter.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "serve/http.h"
#include "serve/pusher.h"

namespace push_test {

using namespace std::chrono_literals;
using usdtprof::PusherOptions;

struct Received {
	std::string path;
	std::multimap<std::string, std::string> params;
	std::string content_type;
	std::string body;
	int status = 0; // what the receiver answered
};

// A local ingest endpoint that records every request; respond(n) gives the
// status for the n-th request (0-based).
class Receiver {
public:
	explicit Receiver(std::function<int(size_t)> respond = [](size_t) { return 200; })
		: respond_(std::move(respond))
	{
		server_.Post("/.*", [this](const httplib::Request &req, httplib::Response &res) {
			Received r;
			r.path = req.path;
			r.params = req.params;
			r.content_type = req.get_header_value("Content-Type");
			r.body = req.body;
			std::function<int(size_t)> respond;
			size_t n;
			{
				std::lock_guard<std::mutex> lock(mutex_);
				respond = respond_;
				n = requests_.size();
			}
			r.status = respond(n);
			res.status = r.status;
			{
				std::lock_guard<std::mutex> lock(mutex_);
				requests_.push_back(r);
			}
			if (r.status != 200)
				res.set_content("try later\nsecond line", "text/plain");
		});
		port_ = server_.bind_to_any_port("127.0.0.1");
		REQUIRE(port_ > 0);
		thread_ = std::thread([this] { server_.listen_after_bind(); });
		while (!server_.is_running())
			std::this_thread::sleep_for(1ms);
	}
	~Receiver()
	{
		server_.stop();
		thread_.join();
	}

	std::string url(const std::string &path = "") const
	{
		return "http://127.0.0.1:" + std::to_string(port_) + path;
	}
	void set_respond(std::function<int(size_t)> respond)
	{
		std::lock_guard<std::mutex> lock(mutex_);
		respond_ = std::move(respond);
	}
	std::vector<Received> requests() const
	{
		std::lock_guard<std::mutex> lock(mutex_);
		return requests_;
	}
	size_t count() const
	{
		std::lock_guard<std::mutex> lock(mutex_);
		return requests_.size();
	}

private:
	httplib::Server server_;
	std::thread thread_;
	int port_ = 0;
	mutable std::mutex mutex_;
	std::function<int(size_t)> respond_;
	std::vector<Received> requests_;
};

template <class F> bool eventually(F done, std::chrono::milliseconds limit = 3000ms)
{
	auto deadline = std::chrono::steady_clock::now() + limit;
	while (!done()) {
		if (std::chrono::steady_clock::now() > deadline)
			return false;
		std::this_thread::sleep_for(1ms);
	}
	return true;
}

inline PusherOptions fast_options(const std::string &url)
{
	PusherOptions o;
	o.url = url;
	o.app_name = "myapp";
	o.hostname = "testhost";
	o.initial_backoff = 5ms;
	o.max_backoff = 20ms;
	o.connect_timeout = 1000ms;
	o.timeout = 2000ms;
	return o;
}

inline std::string param(const Received &r, const std::string &key)
{
	auto it = r.params.find(key);
	return it == r.params.end() ? "<missing>" : it->second;
}

} // namespace push_test
