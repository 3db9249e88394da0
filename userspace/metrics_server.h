// Serves a MetricsRegistry at GET /metrics for Prometheus, on a background thread.
#pragma once

#include <memory>
#include <string>

#include "metrics.h"
#include "result.h"

namespace usdtprof {

struct ListenAddress {
	std::string host; // without brackets; "0.0.0.0" when the address was ":PORT"
	int port = 0;     // 0: any free port
};

// "HOST:PORT", "[IPV6]:PORT" or ":PORT" (all IPv4 interfaces); one clear line when malformed.
Result<ListenAddress> parse_listen_address(const std::string &listen);

class MetricsServer {
public:
	// Binds listen (e.g. "127.0.0.1:9464"; port 0 picks a free port) and
	// serves on a background thread until destroyed. Fails with one line for
	// a malformed address, an unresolvable host, a port in use or not
	// permitted. The registry must outlive the server.
	static Result<std::unique_ptr<MetricsServer>> start(const std::string &listen,
							     const MetricsRegistry &registry);
	// Stops serving and joins the thread.
	~MetricsServer();
	MetricsServer(const MetricsServer &) = delete;
	MetricsServer &operator=(const MetricsServer &) = delete;

	const std::string &host() const;
	int port() const; // the bound port

	struct Impl;

private:
	explicit MetricsServer(std::unique_ptr<Impl> impl);
	std::unique_ptr<Impl> impl_;
};

} // namespace usdtprof
