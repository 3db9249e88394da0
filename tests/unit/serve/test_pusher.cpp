#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <netinet/in.h>
#include <string>
#include <sys/socket.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "serve/http.h"
#include "serve/pusher.h"
#include "../push_receiver.h"

using namespace usdtprof;
using namespace std::chrono_literals;
using namespace push_test;

namespace {

// A TCP socket of 127.0.0.1 bound to a port the kernel chose (not listened
// on), and that port.
int bind_loopback(int &port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	REQUIRE(fd >= 0);
	sockaddr_in addr{};
	addr.sin_family = AF_INET;
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t len = sizeof addr;
	REQUIRE(bind(fd, reinterpret_cast<sockaddr *>(&addr), len) == 0);
	REQUIRE(getsockname(fd, reinterpret_cast<sockaddr *>(&addr), &len) == 0);
	port = ntohs(addr.sin_port);
	return fd;
}

// An endpoint that reads one request, then answers with head, then with
// more() for as long as the client reads it (or until destroyed); bytes()
// is what it sent, closed() whether the client hung up.
class HostileEndpoint {
public:
	HostileEndpoint(std::string head, std::string more, std::chrono::milliseconds pace = 0ms)
		: head_(std::move(head)), more_(std::move(more)), pace_(pace)
	{
		fd_ = bind_loopback(port_);
		REQUIRE(listen(fd_, 4) == 0);
		thread_ = std::thread([this] { serve(); });
	}
	~HostileEndpoint()
	{
		stop_ = true;
		shutdown(fd_, SHUT_RDWR);
		thread_.join();
		close(fd_);
	}
	std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
	size_t bytes() const { return bytes_; }
	bool closed() const { return closed_; }

private:
	void serve()
	{
		int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
		if (c < 0)
			return;
		timeval tv{0, 100000};
		setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
		setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
		// The request: its head and a body of Content-Length bytes.
		std::string in;
		char buf[65536];
		size_t want = std::string::npos;
		while (!stop_ && in.size() < want) {
			ssize_t n = recv(c, buf, sizeof buf, 0);
			if (n == 0)
				break;
			if (n > 0)
				in.append(buf, size_t(n));
			size_t end = in.find("\r\n\r\n");
			size_t cl = in.find("Content-Length: ");
			if (end != std::string::npos && cl != std::string::npos)
				want = end + 4 + std::stoul(in.substr(cl + 16));
		}
		std::string out = head_;
		while (!stop_) {
			ssize_t n = send(c, out.data(), out.size(), MSG_NOSIGNAL);
			if (n < 0 && (errno == EAGAIN || errno == EINTR))
				continue;
			if (n < 0) {
				closed_ = true;
				break;
			}
			bytes_ += size_t(n);
			out = out.substr(size_t(n));
			if (out.empty()) {
				out = more_;
				std::this_thread::sleep_for(pace_);
			}
		}
		close(c);
	}

	std::string head_, more_;
	std::chrono::milliseconds pace_;
	int fd_ = -1, port_ = 0;
	std::atomic<bool> stop_{false}, closed_{false};
	std::atomic<size_t> bytes_{0};
	std::thread thread_;
};

// A port with nothing listening: bound (never listened on), then released.
// (Not with httplib::Server: its bind also listens and it never closes the socket.)
int closed_port()
{
	int port;
	close(bind_loopback(port));
	return port;
}

std::string binary_payload()
{
	std::string bytes = "\x1f\x8b\x08";
	bytes += std::string("\0\r\n&=?%{}", 9);
	for (int i = 0; i < 70000; i++)
		bytes += static_cast<char>((i * 131 + 7) & 0xff);
	return bytes;
}

} // namespace

TEST_CASE("pusher: URL parsing")
{
	auto u = parse_push_url("http://pyroscope:4040");
	REQUIRE(u.ok());
	CHECK(u.value().host == "pyroscope");
	CHECK(u.value().port == 4040);
	CHECK(u.value().base_path == "");
	u = parse_push_url("http://example.com/");
	REQUIRE(u.ok());
	CHECK(u.value().port == 80);
	CHECK(u.value().base_path == "");
	u = parse_push_url("http://10.0.0.1:8080/a/b/");
	REQUIRE(u.ok());
	CHECK(u.value().host == "10.0.0.1");
	CHECK(u.value().base_path == "/a/b");
	u = parse_push_url("http://[::1]:4040/p");
	REQUIRE(u.ok());
	CHECK(u.value().host == "::1");
	CHECK(u.value().port == 4040);
	CHECK(u.value().base_path == "/p");

	auto https = parse_push_url("https://pyroscope.example/base");
	REQUIRE(https.ok());
	CHECK(https.value().tls);
	CHECK(https.value().port == 443);
	CHECK(https.value().base_path == "/base");
	CHECK(!parse_push_url("http://h").value().tls);
	auto userinfo = parse_push_url("https://u:secret@h");
	REQUIRE(!userinfo.ok());
	CHECK(userinfo.error().message.find("--push-basic-auth-file") != std::string::npos);
	for (const char *bad : {"pyroscope:4040", "ftp://h", "http://", "http://:80", "http://h:", "http://h:0",
				"http://h:65536", "http://h:x", "http://h/p?x=1", "http://u@h", "http://[::1"}) {
		INFO(bad);
		auto r = parse_push_url(bad);
		REQUIRE(!r.ok());
		CHECK(r.error().message.rfind(std::string("invalid push URL '") + bad + "': ", 0) == 0);
		CHECK(r.error().message.find('\n') == std::string::npos);
	}
}

TEST_CASE("pusher: create() rejects bad options with one line")
{
	auto o = fast_options("http://h");
	o.auth.basic = "u:p";
	auto r = ProfilePusher::create(o);
	REQUIRE(!r.ok());
	CHECK(r.error().message == "credentials are sent only over https:// (or http:// to this host)");
	o = fast_options("https://h");
	o.auth.basic = "u:p";
	o.auth.bearer_token = "t";
	r = ProfilePusher::create(o);
	REQUIRE(!r.ok());
	CHECK(r.error().message == "give basic auth or a bearer token for --push, not both");
	o.auth = {};
	o.auth.basic = "no-colon";
	CHECK(ProfilePusher::create(o).error().message == "the basic auth credential must be USER:PASSWORD");
	o.auth = {};
	o.auth.ca_file = "/nonexistent/ca.pem";
	CHECK(ProfilePusher::create(o).error().message.rfind("cannot read the CA file /nonexistent/ca.pem", 0) == 0);
	o = fast_options("http://h");
	o.app_name = "my app{x}";
	r = ProfilePusher::create(o);
	REQUIRE(!r.ok());
	CHECK(r.error().message.rfind("invalid application name", 0) == 0);
	o = fast_options("http://h");
	o.queue_capacity = 0;
	CHECK(!ProfilePusher::create(o).ok());
	o = fast_options("http://h");
	o.max_attempts = 0;
	CHECK(!ProfilePusher::create(o).ok());
}

TEST_CASE("pusher: a container's id is a label of the pushed name")
{
	Receiver receiver;
	auto pusher = ProfilePusher::create(fast_options(receiver.url("")));
	REQUIRE(pusher.ok());
	PushItem item{binary_payload(), 1700000000, 1700000010, 7, "0123456789ab"};
	std::string target = pusher.value()->request_target(item);
	CHECK(target.find("name=myapp%7Bhostname%3D") != std::string::npos);
	CHECK(target.find("%2Cpid%3D7%2Ccontainer_id%3D0123456789ab%7D&from=") != std::string::npos);
}

TEST_CASE("pusher: POSTs the profile to /ingest with Pyroscope's query parameters")
{
	Receiver receiver;
	auto o = fast_options(receiver.url("/base/"));
	o.hostname = "web,1{x}";
	auto pusher = ProfilePusher::create(o);
	REQUIRE(pusher.ok());
	ProfilePusher &p = *pusher.value();

	PushItem item{binary_payload(), 1700000000, 1700000010, 4242, ""};
	CHECK(p.request_target(item) ==
	      "/base/ingest?name=myapp%7Bhostname%3Dweb_1_x_%2Cpid%3D4242%7D&from=1700000000&until=1700000010"
	      "&format=pprof&spyName=usdtprof");
	p.push(item);
	REQUIRE(eventually([&] { return p.sent() == 1; }));
	auto reqs = receiver.requests();
	REQUIRE(reqs.size() == 1);
	const Received &r = reqs[0];
	CHECK(r.path == "/base/ingest");
	CHECK(param(r, "name") == "myapp{hostname=web_1_x_,pid=4242}");
	CHECK(param(r, "from") == "1700000000");
	CHECK(param(r, "until") == "1700000010");
	CHECK(param(r, "format") == "pprof");
	CHECK(param(r, "spyName") == "usdtprof");
	CHECK(r.content_type == "application/octet-stream");
	CHECK(r.body.size() == item.bytes.size());
	CHECK(r.body == item.bytes);
	CHECK(p.dropped() == 0);
	CHECK(p.failed() == 0);
	CHECK(p.retries() == 0);
	CHECK(p.last_error() == "");

	// pid 0: no pid label.
	p.push(PushItem{"x", 1, 2, 0, ""});
	REQUIRE(eventually([&] { return p.sent() == 2; }));
	CHECK(param(receiver.requests().at(1), "name") == "myapp{hostname=web_1_x_}");
}

TEST_CASE("pusher: retries after 503 and sends the same bytes")
{
	Receiver receiver([](size_t n) { return n < 2 ? 503 : 200; });
	auto pusher = ProfilePusher::create(fast_options(receiver.url()));
	REQUIRE(pusher.ok());
	ProfilePusher &p = *pusher.value();
	std::string bytes = binary_payload();
	p.push(PushItem{bytes, 10, 20, 1, ""});
	REQUIRE(eventually([&] { return p.sent() == 1; }));
	auto reqs = receiver.requests();
	REQUIRE(reqs.size() == 3);
	for (const Received &r : reqs) {
		CHECK(r.path == "/ingest");
		CHECK(r.body == bytes);
		CHECK(param(r, "from") == "10");
	}
	CHECK(p.retries() == 2);
	CHECK(p.failed() == 0);
	// The last failed attempt is kept for the user, on one line.
	CHECK(p.last_error() == "push to " + receiver.url() + ": HTTP 503: try later");
}

TEST_CASE("pusher: gives up after max_attempts, and at once on a 4xx")
{
	Receiver receiver([](size_t) { return 503; });
	auto o = fast_options(receiver.url());
	o.max_attempts = 3;
	auto pusher = ProfilePusher::create(o);
	REQUIRE(pusher.ok());
	ProfilePusher &p = *pusher.value();
	p.push(PushItem{"a", 1, 2, 3, ""});
	REQUIRE(eventually([&] { return p.failed() == 1; }));
	CHECK(receiver.count() == 3);
	CHECK(p.retries() == 2);
	CHECK(p.sent() == 0);

	receiver.set_respond([](size_t) { return 400; });
	p.push(PushItem{"b", 1, 2, 3, ""});
	REQUIRE(eventually([&] { return p.failed() == 2; }));
	CHECK(receiver.count() == 4);
	CHECK(p.retries() == 2);
	CHECK(p.last_error().find("HTTP 400") != std::string::npos);
	CHECK(p.flush(5000ms));
}

TEST_CASE("pusher: a full queue drops the oldest while the receiver is down")
{
	std::atomic<bool> up{false};
	Receiver receiver([&](size_t) { return up ? 200 : 503; });
	auto o = fast_options(receiver.url());
	o.queue_capacity = 3;
	o.max_attempts = 100000;
	auto pusher = ProfilePusher::create(o);
	REQUIRE(pusher.ok());
	ProfilePusher &p = *pusher.value();

	p.push(PushItem{"item0", 0, 1, 1, ""});
	// Item 0 is being retried: everything else waits in the queue.
	REQUIRE(eventually([&] { return receiver.count() >= 1; }));
	for (int i = 1; i <= 10; i++) {
		p.push(PushItem{"item" + std::to_string(i), i, i + 1, 1, ""});
		CHECK(p.queued() <= 3);
	}
	CHECK(p.queued() == 3);
	CHECK(p.dropped() == 7);

	up = true;
	REQUIRE(eventually([&] { return p.sent() == 4; }));
	std::vector<std::string> accepted;
	for (const Received &r : receiver.requests())
		if (r.status == 200)
			accepted.push_back(r.body);
	CHECK(accepted == std::vector<std::string>{"item0", "item8", "item9", "item10"});
	CHECK(p.failed() == 0);
	CHECK(p.flush(5000ms));
	CHECK(p.queued() == 0);
}

TEST_CASE("pusher: unreachable endpoint: bounded memory, prompt destructor while backing off")
{
	auto o = fast_options("http://127.0.0.1:" + std::to_string(closed_port()));
	o.queue_capacity = 4;
	// The sender sleeps in its first backoff, 60 s: the bounds below (3 s) tell
	// "prompt" from "waited for it" with a wide margin for a loaded machine.
	o.initial_backoff = 60000ms;
	o.max_backoff = 120000ms;
	auto pusher = ProfilePusher::create(o);
	REQUIRE(pusher.ok());
	ProfilePusher &p = *pusher.value();

	p.push(PushItem{std::string(1000, 'x'), 0, 1, 1, ""});
	REQUIRE(eventually([&] { return p.retries() == 1; }));
	CHECK(p.last_error().rfind("push to " + o.url + ": ", 0) == 0);
	for (int i = 1; i <= 50; i++) {
		auto t0 = std::chrono::steady_clock::now();
		p.push(PushItem{std::string(1000, 'y'), i, i + 1, 1, ""});
		CHECK(std::chrono::steady_clock::now() - t0 < 3000ms); // never waits for the backoff
		REQUIRE(p.queued() <= 4);
	}
	CHECK(p.dropped() == 46);
	CHECK(p.sent() == 0);
	CHECK(!p.flush(10ms));

	auto t0 = std::chrono::steady_clock::now();
	pusher.value().reset();
	CHECK(std::chrono::steady_clock::now() - t0 < 3000ms);
}

TEST_CASE("pusher: the destructor aborts a request in progress")
{
	std::atomic<bool> release{false};
	std::atomic<int> started{0};
	Receiver receiver([&](size_t) {
		started++;
		for (int i = 0; i < 2000 && !release; i++) // at most 20 s
			std::this_thread::sleep_for(10ms);
		return 200;
	});
	// The request would take 20 s (the receiver) and may take 60 s (the
	// timeout): the bounds below (3 s) tell "prompt" from "waited for it".
	auto o = fast_options(receiver.url());
	o.timeout = 60000ms;
	auto pusher = ProfilePusher::create(o);
	REQUIRE(pusher.ok());
	pusher.value()->push(PushItem{"slow", 1, 2, 3, ""});
	REQUIRE(eventually([&] { return started == 1; }));
	// push() does not wait for the request in progress either.
	auto t0 = std::chrono::steady_clock::now();
	pusher.value()->push(PushItem{"next", 2, 3, 3, ""});
	CHECK(std::chrono::steady_clock::now() - t0 < 3000ms);

	t0 = std::chrono::steady_clock::now();
	pusher.value().reset();
	CHECK(std::chrono::steady_clock::now() - t0 < 3000ms);
	release = true;
}

TEST_CASE("pusher: flush waits for the queue to drain")
{
	Receiver receiver;
	auto pusher = ProfilePusher::create(fast_options(receiver.url()));
	REQUIRE(pusher.ok());
	ProfilePusher &p = *pusher.value();
	for (int i = 0; i < 5; i++)
		p.push(PushItem{"p" + std::to_string(i), i, i + 1, 7, ""});
	REQUIRE(p.flush(3000ms));
	CHECK(p.sent() == 5);
	CHECK(receiver.count() == 5);
	CHECK(p.queued() == 0);
}

TEST_CASE("pusher: an endless chunked response body is not read past its start")
{
	std::string chunk = "4000\r\n" + std::string(0x4000, 'x') + "\r\n";
	HostileEndpoint endpoint("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", chunk);
	auto pusher = ProfilePusher::create(fast_options(endpoint.url()));
	REQUIRE(pusher.ok());
	ProfilePusher &p = *pusher.value();
	p.push(PushItem{binary_payload(), 1, 2, 3, ""});
	REQUIRE(p.flush(3000ms));
	// Answered 200: sent, though its body was cut after the first KiB.
	CHECK(p.sent() == 1);
	CHECK(p.failed() == 0);
	REQUIRE(eventually([&] { return endpoint.closed(); }));
	// What the endpoint got out before the pusher hung up: socket buffers, not the stream.
	CHECK(endpoint.bytes() < 16u << 20);
}

TEST_CASE("pusher: endless response headers end the attempt with one line")
{
	std::string header = "X-Filler: " + std::string(1000, 'h') + "\r\n";
	HostileEndpoint endpoint("HTTP/1.1 200 OK\r\n", header);
	auto o = fast_options(endpoint.url());
	o.max_attempts = 1;
	auto pusher = ProfilePusher::create(o);
	REQUIRE(pusher.ok());
	ProfilePusher &p = *pusher.value();
	p.push(PushItem{"profile", 1, 2, 3, ""});
	REQUIRE(p.flush(3000ms));
	CHECK(p.sent() == 0);
	CHECK(p.failed() == 1);
	CHECK(p.last_error() == "push to " + o.url + ": response headers over 16384 bytes");
	REQUIRE(eventually([&] { return endpoint.closed(); }));
	CHECK(endpoint.bytes() < 16u << 20);
}

TEST_CASE("pusher: an endpoint that answers slowly is cut at the attempt's deadline")
{
	// A byte of header every 100 ms would keep a per-read timeout waiting forever.
	HostileEndpoint endpoint("HTTP/1.1 200 OK\r\n", "X", 100ms);
	auto o = fast_options(endpoint.url());
	o.max_attempts = 1;
	o.timeout = 500ms;
	auto pusher = ProfilePusher::create(o);
	REQUIRE(pusher.ok());
	ProfilePusher &p = *pusher.value();
	p.push(PushItem{"profile", 1, 2, 3, ""});
	CHECK(p.flush(10000ms)); // returns once the attempt is cut; the endpoint never ends
	CHECK(p.failed() == 1);
	CHECK(p.last_error().find("Operation timed out") != std::string::npos);
}

TEST_CASE("pusher: credentials come from a private file or the environment, one line each")
{
	char dir[] = "/tmp/usdtprof-cred-XXXXXX";
	REQUIRE(mkdtemp(dir));
	std::string file = std::string(dir) + "/cred";
	auto write = [&](const std::string &text, mode_t mode) {
		FILE *f = fopen(file.c_str(), "w");
		REQUIRE(f);
		fputs(text.c_str(), f);
		fclose(f);
		REQUIRE(chmod(file.c_str(), mode) == 0);
	};
	write("user:pass word\n", 0600);
	setenv("USDTPROF_TEST_CRED", "from-env", 1);
	CHECK(read_credential(file, "USDTPROF_TEST_CRED").value() == "user:pass word"); // the file first
	CHECK(read_credential("", "USDTPROF_TEST_CRED").value() == "from-env");
	unsetenv("USDTPROF_TEST_CRED");
	CHECK(read_credential("", "USDTPROF_TEST_CRED").value() == "");
	write("user:pass\n", 0644);
	CHECK(read_credential(file, "X").error().message ==
	      "the credential file " + file + " is readable or writable by other users: chmod 600 it");
	write("a\nb\n", 0600);
	CHECK(read_credential(file, "X").error().message == "the credential in " + file + " holds a line break or a control character");
	write("\n", 0600);
	CHECK(read_credential(file, "X").error().message == "the credential in " + file + " is empty");
	write(std::string(5000, 'x'), 0600);
	CHECK(read_credential(file, "X").error().message == "the credential file " + file + " is over 4096 bytes");
	CHECK(read_credential(std::string(dir), "X").error().message == "the credential file " + std::string(dir) + " is not a regular file");
	CHECK(read_credential(file + ".missing", "X").error().message.rfind("cannot read the credential file", 0) == 0);
	unlink(file.c_str());
	rmdir(dir);
}
