#include "metrics_server.h"

#include "http.h"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <netdb.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

namespace usdtprof {

namespace {

constexpr const char *kContentType = "text/plain; version=0.0.4; charset=utf-8";

std::string display(const ListenAddress &a)
{
	bool v6 = a.host.find(':') != std::string::npos;
	return (v6 ? "[" + a.host + "]" : a.host) + ":" + std::to_string(a.port);
}

// Why binding failed: httplib reports only false, so bind a plain socket the
// same way (SO_REUSEADDR, no SO_REUSEPORT) to learn errno.
std::string bind_failure(const ListenAddress &a)
{
	addrinfo hints{};
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE;
	addrinfo *res = nullptr;
	std::string port = std::to_string(a.port);
	if (int rc = getaddrinfo(a.host.c_str(), port.c_str(), &hints, &res))
		return std::string("cannot resolve '") + a.host + "': " + gai_strerror(rc);
	int err = 0;
	for (addrinfo *ai = res; ai; ai = ai->ai_next) {
		int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0) {
			err = errno;
			continue;
		}
		int one = 1;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		int rc = bind(fd, ai->ai_addr, ai->ai_addrlen);
		err = rc == 0 ? 0 : errno;
		close(fd);
		if (rc == 0)
			break;
	}
	freeaddrinfo(res);
	if (err == 0)
		return "cannot bind the socket";
	return strerror(err);
}

} // namespace

Result<ListenAddress> parse_listen_address(const std::string &listen)
{
	auto bad = [&](const std::string &why) {
		return Error{"invalid listen address '" + listen + "': " + why +
			     " (expected HOST:PORT, e.g. 127.0.0.1:9464)"};
	};
	ListenAddress a;
	std::string port;
	if (!listen.empty() && listen[0] == '[') {
		size_t close = listen.find(']');
		if (close == std::string::npos || close + 1 >= listen.size() || listen[close + 1] != ':')
			return bad("unterminated IPv6 address or missing port");
		a.host = listen.substr(1, close - 1);
		port = listen.substr(close + 2);
		if (a.host.empty())
			return bad("empty IPv6 address");
	} else {
		size_t colon = listen.rfind(':');
		if (colon == std::string::npos)
			return bad("missing port");
		a.host = listen.substr(0, colon);
		port = listen.substr(colon + 1);
		if (a.host.find(':') != std::string::npos)
			return bad("IPv6 addresses need brackets");
		if (a.host.empty())
			a.host = "0.0.0.0";
	}
	if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos)
		return bad("port must be a number from 0 to 65535");
	a.port = std::stoi(port);
	if (a.port > 65535)
		return bad("port must be a number from 0 to 65535");
	return a;
}

struct MetricsServer::Impl {
	ListenAddress address;
	httplib::Server server;
	std::thread thread;
	std::atomic<bool> done{false};
};

MetricsServer::MetricsServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<MetricsServer>> MetricsServer::start(const std::string &listen,
							    const MetricsRegistry &registry)
{
	auto parsed = parse_listen_address(listen);
	if (!parsed)
		return parsed.error();
	auto impl = std::make_unique<Impl>();
	impl->address = parsed.value();
	httplib::Server &server = impl->server;

	// httplib's default socket options add SO_REUSEPORT, which would let a
	// second server bind a port already in use: keep SO_REUSEADDR only.
	server.set_socket_options([](socket_t sock) {
		int one = 1;
		setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	});
	// Scrapes are seconds apart: a small pool, one request per connection
	// (so no idle keep-alive connection delays the shutdown).
	server.new_task_queue = [] { return new httplib::ThreadPool(2); };
	server.set_keep_alive_max_count(1);
	server.set_read_timeout(5, 0);
	server.set_write_timeout(5, 0);
	server.Get("/metrics", [&registry](const httplib::Request &, httplib::Response &res) {
		res.set_content(registry.render(), kContentType);
	});
	server.set_error_handler([](const httplib::Request &, httplib::Response &res) {
		if (res.status == 404)
			res.set_content("not found: the metrics are at /metrics\n", "text/plain");
	});

	ListenAddress &a = impl->address;
	bool bound;
	if (a.port == 0) {
		int port = server.bind_to_any_port(a.host);
		bound = port > 0;
		if (bound)
			a.port = port;
	} else {
		bound = server.bind_to_port(a.host, a.port);
	}
	if (!bound)
		return Error{"cannot listen on " + display(a) + ": " + bind_failure(a)};

	Impl *p = impl.get();
	p->thread = std::thread([p] {
		p->server.listen_after_bind();
		p->done = true;
	});
	// httplib's stop() does nothing before the accept loop runs: wait for it,
	// so the destructor's stop() is never lost.
	while (!p->server.is_running() && !p->done)
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	if (!p->server.is_running()) {
		p->thread.join();
		return Error{"cannot listen on " + display(a) + ": the accept loop failed"};
	}
	return std::unique_ptr<MetricsServer>(new MetricsServer(std::move(impl)));
}

MetricsServer::~MetricsServer()
{
	impl_->server.stop();
	if (impl_->thread.joinable())
		impl_->thread.join();
}

const std::string &MetricsServer::host() const
{
	return impl_->address.host;
}

int MetricsServer::port() const
{
	return impl_->address.port;
}

} // namespace usdtprof
