// Serves a MetricsRegistry at GET /metrics for Prometheus, on a background
// thread, to any client that can connect: every bound below holds whatever
// the clients send (docs/security.md, "/metrics server").
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "serve/metrics.h"
#include "base/result.h"
#include "serve/web_config.h"

namespace usdtprof {

struct ListenAddress {
	std::string host; // without brackets; "0.0.0.0" when the address was ":PORT"
	int port = 0;     // 0: any free port
};

// "HOST:PORT", "[IPV6]:PORT" or ":PORT" (all IPv4 interfaces); one clear line when malformed.
Result<ListenAddress> parse_listen_address(const std::string &listen);

struct MetricsServerLimits {
	// Open connections; when full, the oldest one is closed for a new one.
	// Far below any descriptor limit (the monitor raises its own to the hard limit).
	size_t max_connections = 64;
	// Request line and headers; a request that does not end within is answered 431.
	size_t max_request_bytes = 8192;
	// From accepting a connection to the last byte of the response.
	std::chrono::milliseconds deadline{5000};
};

class MetricsServer {
public:
	// Binds listen (e.g. "127.0.0.1:9464"; port 0 picks a free port) and
	// serves on a background thread until destroyed. Fails with one line for
	// a malformed address, an unresolvable host, a port in use or not
	// permitted. The registry must outlive the server.
	// web: TLS and basic auth (docs/monitoring.md, "/metrics over TLS"); a failed
	// handshake or a refused credential costs that connection only.
	static Result<std::unique_ptr<MetricsServer>> start(const std::string &listen,
							     const MetricsRegistry &registry,
							     MetricsServerLimits limits = {}, const WebConfig &web = {});
	// Stops serving and joins the thread.
	~MetricsServer();
	MetricsServer(const MetricsServer &) = delete;
	MetricsServer &operator=(const MetricsServer &) = delete;

	bool tls() const; // https
	const std::string &host() const;
	int port() const; // the bound port
	// Connections closed early: by the deadline, or for a newer one when full.
	uint64_t connections_cut() const;

	struct Impl;

private:
	explicit MetricsServer(std::unique_ptr<Impl> impl);
	std::unique_ptr<Impl> impl_;
};

} // namespace usdtprof
