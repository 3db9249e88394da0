#include "serve/metrics_server.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <map>
#include <netdb.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <strings.h>

#include "base/unique_fd.h"
#include "serve/web_config.h"

// A small HTTP/1.1 server of one poll() thread instead of a general library:
// Debian's cpp-httplib 0.11 bounds neither the number of headers nor the
// connections, and its worker threads are held by slow clients. Here every
// connection is one request, answered and closed; each has a fixed budget of
// bytes and time, and there are at most a fixed number of them.

namespace usdtprof {

namespace {

using Clock = std::chrono::steady_clock;

constexpr const char *kContentType = "text/plain; version=0.0.4; charset=utf-8";
constexpr int kListenBacklog = 64;
constexpr int kAcceptsPerWake = 16;
// What is read and thrown away of a request body after the answer, so that
// closing does not reset the connection before the client has read it.
constexpr size_t kDrainBytes = 64 * 1024;
// Out of descriptors: accepting waits this long rather than spin.
constexpr auto kAcceptPause = std::chrono::milliseconds(100);

std::string display(const ListenAddress &a)
{
	bool v6 = a.host.find(':') != std::string::npos;
	return (v6 ? "[" + a.host + "]" : a.host) + ":" + std::to_string(a.port);
}

// A listening, non-blocking socket on the address (SO_REUSEADDR, no
// SO_REUSEPORT: a second server must not bind a port in use).
Result<UniqueFd> listen_on(ListenAddress &a)
{
	addrinfo hints{};
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE;
	addrinfo *res = nullptr;
	std::string port = std::to_string(a.port);
	if (int rc = getaddrinfo(a.host.c_str(), port.c_str(), &hints, &res))
		return Error{"cannot listen on " + display(a) + ": cannot resolve '" + a.host + "': " + gai_strerror(rc)};
	int err = 0;
	UniqueFd fd;
	for (addrinfo *ai = res; ai; ai = ai->ai_next) {
		fd = UniqueFd(socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol));
		if (fd.get() < 0) {
			err = errno;
			continue;
		}
		int one = 1;
		setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		if (bind(fd.get(), ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd.get(), kListenBacklog) == 0) {
			err = 0;
			break;
		}
		err = errno;
		fd = UniqueFd();
	}
	freeaddrinfo(res);
	if (fd.get() < 0)
		return Error{"cannot listen on " + display(a) + ": " + (err ? strerror(err) : "no address")};
	sockaddr_storage bound{};
	socklen_t len = sizeof bound;
	if (getsockname(fd.get(), reinterpret_cast<sockaddr *>(&bound), &len) == 0)
		a.port = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6 *>(&bound)->sin6_port)
						     : ntohs(reinterpret_cast<sockaddr_in *>(&bound)->sin_port);
	return fd;
}

std::string http_response(const char *status, const char *content_type, const std::string &body,
			  const char *extra_headers = "")
{
	return std::string("HTTP/1.1 ") + status + "\r\nContent-Type: " + content_type +
	       "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" + extra_headers +
	       "Connection: close\r\n\r\n" + body;
}

// The end of the request head (request line and headers), npos while incomplete.
size_t head_end(const std::string &in)
{
	size_t crlf = in.find("\r\n\r\n"), lf = in.find("\n\n");
	return std::min(crlf, lf);
}

// The value of header name (lower case, with its colon) in a request head, "" if absent.
std::string header_value(const std::string &head, const std::string &name)
{
	for (size_t at = head.find('\n'); at != std::string::npos; at = head.find('\n', at + 1)) {
		if (strncasecmp(head.c_str() + at + 1, name.c_str(), name.size()) != 0)
			continue;
		size_t begin = head.find_first_not_of(" \t", at + 1 + name.size());
		size_t end = head.find_first_of("\r\n", at + 1);
		return begin == std::string::npos || begin >= end ? "" : head.substr(begin, end - begin);
	}
	return "";
}

// "Basic BASE64(user:password)" -> user and password; false when malformed.
bool basic_credentials(const std::string &authorization, std::string &user, std::string &password)
{
	if (strncasecmp(authorization.c_str(), "basic ", 6) != 0)
		return false;
	std::string b64 = authorization.substr(6);
	if (b64.empty() || b64.size() % 4 != 0 || b64.size() > 2048)
		return false;
	std::string raw(b64.size() / 4 * 3, '\0');
	int n = EVP_DecodeBlock(reinterpret_cast<unsigned char *>(raw.data()),
				reinterpret_cast<const unsigned char *>(b64.data()), int(b64.size()));
	if (n < 0)
		return false;
	raw.resize(size_t(n) - (b64.end()[-1] == '=') - (b64.end()[-2] == '='));
	size_t colon = raw.find(':');
	if (colon == std::string::npos)
		return false;
	user = raw.substr(0, colon);
	password = raw.substr(colon + 1);
	return true;
}

std::string sha256(const std::string &s)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned len = 0;
	EVP_Digest(s.data(), s.size(), md, &len, EVP_sha256(), nullptr);
	return std::string(reinterpret_cast<char *>(md), len);
}

// Basic auth against bcrypt hashes. bcrypt costs tens of ms by design (~400 ms on a
// loaded 2-vCPU host), on the server's one thread: a password once accepted is
// remembered by its SHA-256, so a scrape costs one hash, not one bcrypt (as
// exporter-toolkit caches), and so are the last kRefusedKept refused ones, so that a
// scraper configured with a wrong password does not stall the right one's scrapes. An
// unknown user costs a bcrypt too, so timing does not tell which users exist.
class BasicAuth {
public:
	explicit BasicAuth(std::map<std::string, std::string> users) : users_(std::move(users)) {}
	bool on() const { return !users_.empty(); }
	bool allows(const std::string &head)
	{
		std::string user, password;
		if (!basic_credentials(header_value(head, "authorization:"), user, password))
			return false;
		auto it = users_.find(user);
		if (it == users_.end()) {
			bcrypt_matches(password, kDummyHash);
			return false;
		}
		std::string digest = sha256(password);
		auto same = [&](const std::string &d) { return CRYPTO_memcmp(d.data(), digest.data(), digest.size()) == 0; };
		auto known = accepted_.find(user);
		if (known != accepted_.end() && same(known->second))
			return true;
		for (const auto &[u, d] : refused_)
			if (u == user && same(d))
				return false;
		if (!bcrypt_matches(password, it->second)) {
			if (refused_.size() == kRefusedKept)
				refused_.pop_front();
			refused_.emplace_back(user, digest);
			return false;
		}
		accepted_[user] = digest;
		return true;
	}

private:
	static constexpr size_t kRefusedKept = 64;
	std::deque<std::pair<std::string, std::string>> refused_; // (user, SHA-256), oldest first
	static constexpr const char *kDummyHash = "$2b$10$EyidjeWTec/iWEZywfwwue0moogBbbB9frIxmXSwopvIIfJhmAsMC";
	std::map<std::string, std::string> users_, accepted_;
};

// The answer to a complete request head: GET /metrics only, any query ignored.
std::string answer(const std::string &head, const MetricsRegistry &registry, BasicAuth &auth)
{
	std::string line = head.substr(0, head.find('\n'));
	if (!line.empty() && line.back() == '\r')
		line.pop_back();
	size_t sp1 = line.find(' '), sp2 = line.rfind(' ');
	if (sp1 == std::string::npos || sp1 == sp2 || line.compare(sp2 + 1, 7, "HTTP/1.") != 0)
		return http_response("400 Bad Request", "text/plain", "bad request\n");
	if (auth.on() && !auth.allows(head))
		return http_response("401 Unauthorized", "text/plain", "unauthorized\n",
				     "WWW-Authenticate: Basic realm=\"usdtprof\", charset=\"UTF-8\"\r\n");
	std::string method = line.substr(0, sp1), target = line.substr(sp1 + 1, sp2 - sp1 - 1);
	if (method != "GET")
		return http_response("405 Method Not Allowed", "text/plain", "only GET /metrics\n", "Allow: GET\r\n");
	if (target.substr(0, target.find('?')) != "/metrics")
		return http_response("404 Not Found", "text/plain", "not found: the metrics are at /metrics\n");
	return http_response("200 OK", kContentType, registry.render());
}

struct SslFree {
	void operator()(SSL *ssl) const { SSL_free(ssl); }
	void operator()(SSL_CTX *ctx) const { SSL_CTX_free(ctx); }
};

struct Connection {
	enum class State { reading, writing, draining };
	UniqueFd fd;
	std::unique_ptr<SSL, SslFree> ssl; // with TLS on; freed before fd closes (member order)
	short ssl_wants = 0;                // POLLIN or POLLOUT a TLS record needs first; 0: none
	Clock::time_point deadline;
	State state = State::reading;
	std::string in;  // the request head so far
	std::string out; // the response
	size_t done = 0; // bytes of out sent, or drained
};

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
	Impl(const MetricsRegistry &r, MetricsServerLimits l, std::map<std::string, std::string> users)
		: registry(r), limits(l), auth(std::move(users))
	{
	}
	void run();
	void accept_new(Clock::time_point now);
	void step(Connection &c, short revents);
	void read_request(Connection &c);
	void write_response(Connection &c);
	void drain(Connection &c);
	void close(Connection &c)
	{
		c.ssl.reset();
		c.fd = UniqueFd();
	}
	ssize_t receive(Connection &c, char *buf, size_t n);
	ssize_t transmit(Connection &c, const char *buf, size_t n);
	ssize_t tls_result(Connection &c, int r);

	const MetricsRegistry &registry;
	const MetricsServerLimits limits;
	BasicAuth auth;
	std::unique_ptr<SSL_CTX, SslFree> tls; // null: plain http
	ListenAddress address;
	UniqueFd listener;
	UniqueFd wake; // eventfd: the destructor's stop
	std::deque<Connection> connections; // oldest first
	Clock::time_point accept_paused_until;
	std::atomic<uint64_t> cut{0};
	std::thread thread;
};

void MetricsServer::Impl::run()
{
	std::vector<pollfd> fds;
	for (;;) {
		auto now = Clock::now();
		for (Connection &c : connections)
			if (c.deadline <= now) {
				cut++; // before the close a client may see
				close(c);
			}
		std::erase_if(connections, [](const Connection &c) { return c.fd.get() < 0; });

		bool accepting = now >= accept_paused_until;
		fds.assign({{wake.get(), POLLIN, 0}, {accepting ? listener.get() : -1, POLLIN, 0}});
		Clock::time_point next = accepting ? Clock::time_point::max() : accept_paused_until;
		for (const Connection &c : connections) {
			fds.push_back({c.fd.get(),
				       c.ssl_wants ? c.ssl_wants
						   : short(c.state == Connection::State::writing ? POLLOUT : POLLIN),
				       0});
			next = std::min(next, c.deadline);
		}
		int timeout = -1;
		if (next != Clock::time_point::max())
			timeout = int(std::max<int64_t>(0, std::chrono::ceil<std::chrono::milliseconds>(next - now).count()));
		if (poll(fds.data(), fds.size(), timeout) < 0 && errno != EINTR)
			return;
		if (fds[0].revents)
			return;
		for (size_t i = 0; i < connections.size(); i++)
			if (fds[i + 2].revents)
				step(connections[i], fds[i + 2].revents);
		std::erase_if(connections, [](const Connection &c) { return c.fd.get() < 0; });
		if (fds[1].revents)
			accept_new(Clock::now());
	}
}

void MetricsServer::Impl::accept_new(Clock::time_point now)
{
	for (int i = 0; i < kAcceptsPerWake; i++) {
		int fd = accept4(listener.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
				accept_paused_until = now + kAcceptPause;
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return;
		}
		if (connections.size() >= limits.max_connections) {
			// The oldest that is not being answered: a scrape that sent its
			// request is not pushed out by a flood of idle connections.
			auto victim = std::find_if(connections.begin(), connections.end(), [](const Connection &c) {
				return c.state != Connection::State::writing;
			});
			cut++;
			connections.erase(victim == connections.end() ? connections.begin() : victim);
		}
		Connection &c = connections.emplace_back();
		c.fd = UniqueFd(fd);
		c.deadline = now + limits.deadline;
		if (tls) { // the handshake happens in the first reads, under the same deadline
			c.ssl.reset(SSL_new(tls.get()));
			if (!c.ssl || SSL_set_fd(c.ssl.get(), fd) != 1) {
				connections.pop_back();
				continue;
			}
			SSL_set_accept_state(c.ssl.get());
		}
		// A client usually sends its request with the connection: answered
		// before a flood of newer connections could push it out.
		read_request(connections.back());
		if (connections.back().fd.get() < 0)
			connections.pop_back();
	}
}

void MetricsServer::Impl::step(Connection &c, short revents)
{
	if (c.state == Connection::State::reading)
		read_request(c);
	else if (c.state == Connection::State::writing)
		write_response(c);
	else
		drain(c);
	if (c.fd.get() >= 0 && (revents & POLLNVAL))
		close(c);
}

// An SSL_read or SSL_write's result as receive() and transmit() give theirs.
ssize_t MetricsServer::Impl::tls_result(Connection &c, int r)
{
	c.ssl_wants = 0;
	if (r > 0)
		return r;
	switch (SSL_get_error(c.ssl.get(), r)) {
	case SSL_ERROR_WANT_READ:
		c.ssl_wants = POLLIN;
		return -1;
	case SSL_ERROR_WANT_WRITE:
		c.ssl_wants = POLLOUT;
		return -1;
	default: // a failed handshake (a wrong CA, plain http), a reset: this connection only
		ERR_clear_error();
		return 0;
	}
}

// Bytes read, through TLS when it is on; 0: closed or failed; -1: would block.
ssize_t MetricsServer::Impl::receive(Connection &c, char *buf, size_t n)
{
	if (c.ssl)
		return tls_result(c, SSL_read(c.ssl.get(), buf, int(n)));
	ssize_t r = recv(c.fd.get(), buf, n, 0);
	return r < 0 && (errno == EAGAIN || errno == EINTR) ? -1 : std::max<ssize_t>(r, 0);
}

// Bytes written, as receive().
ssize_t MetricsServer::Impl::transmit(Connection &c, const char *buf, size_t n)
{
	if (c.ssl)
		return tls_result(c, SSL_write(c.ssl.get(), buf, int(n)));
	ssize_t r = send(c.fd.get(), buf, n, MSG_NOSIGNAL);
	return r < 0 && (errno == EAGAIN || errno == EINTR) ? -1 : std::max<ssize_t>(r, 0);
}

void MetricsServer::Impl::read_request(Connection &c)
{
	char buf[4096];
	while (c.in.size() < limits.max_request_bytes) {
		ssize_t n = receive(c, buf, std::min(sizeof buf, limits.max_request_bytes - c.in.size()));
		if (n < 0)
			return;
		if (n == 0)
			return close(c);
		c.in.append(buf, size_t(n));
		if (size_t end = head_end(c.in); end != std::string::npos) {
			c.out = answer(c.in.substr(0, end), registry, auth);
			break;
		}
	}
	if (c.out.empty())
		c.out = http_response("431 Request Header Fields Too Large", "text/plain", "request too large\n");
	c.in = std::string();
	c.state = Connection::State::writing;
	write_response(c);
}

void MetricsServer::Impl::write_response(Connection &c)
{
	while (c.done < c.out.size()) {
		ssize_t n = transmit(c, c.out.data() + c.done, c.out.size() - c.done);
		if (n < 0)
			return;
		if (n == 0)
			return close(c);
		c.done += size_t(n);
	}
	if (c.ssl) { // close_notify, best effort: the response is whole either way
		SSL_shutdown(c.ssl.get());
		ERR_clear_error();
		c.ssl_wants = 0;
	}
	shutdown(c.fd.get(), SHUT_WR);
	c.out = std::string();
	c.done = 0;
	c.state = Connection::State::draining;
	drain(c);
}

void MetricsServer::Impl::drain(Connection &c)
{
	char buf[4096];
	while (c.done < kDrainBytes) {
		ssize_t n = receive(c, buf, sizeof buf);
		if (n < 0)
			return;
		if (n == 0)
			break;
		c.done += size_t(n);
	}
	close(c);
}

MetricsServer::MetricsServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

namespace {

// A TLS server context of the key pair (TLS 1.2 or newer); one line when it cannot be.
Result<std::unique_ptr<SSL_CTX, SslFree>> tls_context(const WebConfig &web)
{
	std::unique_ptr<SSL_CTX, SslFree> ctx(SSL_CTX_new(TLS_server_method()));
	auto failed = [&](const std::string &what) {
		unsigned long e = ERR_get_error();
		char why[256] = "unknown error";
		if (e)
			ERR_error_string_n(e, why, sizeof why);
		ERR_clear_error();
		return Error{"/metrics TLS: " + what + ": " + why};
	};
	if (!ctx)
		return failed("cannot create a context");
	SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
	if (SSL_CTX_use_certificate_chain_file(ctx.get(), web.cert_file.c_str()) != 1)
		return failed("cannot use the certificate " + web.cert_file);
	if (SSL_CTX_use_PrivateKey_file(ctx.get(), web.key_file.c_str(), SSL_FILETYPE_PEM) != 1)
		return failed("cannot use the key " + web.key_file);
	if (SSL_CTX_check_private_key(ctx.get()) != 1)
		return failed("the key does not match the certificate");
	return ctx;
}

} // namespace

Result<std::unique_ptr<MetricsServer>> MetricsServer::start(const std::string &listen,
							    const MetricsRegistry &registry,
							    MetricsServerLimits limits, const WebConfig &web)
{
	auto parsed = parse_listen_address(listen);
	if (!parsed)
		return parsed.error();
	auto impl = std::make_unique<Impl>(registry, limits, web.basic_auth_users);
	if (web.tls()) {
		auto ctx = tls_context(web);
		if (!ctx)
			return ctx.error();
		impl->tls = std::move(*ctx);
	}
	impl->address = parsed.value();
	auto listener = listen_on(impl->address);
	if (!listener)
		return listener.error();
	impl->listener = std::move(*listener);
	impl->wake = UniqueFd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
	if (impl->wake.get() < 0)
		return Error{std::string("cannot start the metrics server: eventfd: ") + strerror(errno)};
	Impl *p = impl.get();
	p->thread = std::thread([p] { p->run(); });
	return std::unique_ptr<MetricsServer>(new MetricsServer(std::move(impl)));
}

MetricsServer::~MetricsServer()
{
	uint64_t one = 1;
	if (write(impl_->wake.get(), &one, sizeof one) < 0) {
		// An eventfd's counter cannot be full after one write: nothing to do.
	}
	if (impl_->thread.joinable())
		impl_->thread.join();
}

bool MetricsServer::tls() const
{
	return impl_->tls != nullptr;
}

const std::string &MetricsServer::host() const
{
	return impl_->address.host;
}

int MetricsServer::port() const
{
	return impl_->address.port;
}

uint64_t MetricsServer::connections_cut() const
{
	return impl_->cut;
}

} // namespace usdtprof
