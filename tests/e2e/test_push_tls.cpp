// monitor --push to an https receiver of the test's own, with a throwaway CA: the
// payloads arrive with the credentials; a wrong CA or credential is refused with one
// clear log line.
#include <catch2/catch.hpp>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sys/stat.h>
#include <thread>

#include "harness.h"
#include "serve/http.h"
#include "tls.h"

using namespace e2e;
using Catch::Matchers::Contains;

namespace {

struct Request {
	std::string authorization;
	size_t body_bytes = 0;
	int status = 0;
};

// An https receiver that accepts only the expected Authorization header.
class Receiver {
public:
	Receiver(const std::string &cert, const std::string &key, std::string expected)
		: server_(cert.c_str(), key.c_str()), expected_(std::move(expected))
	{
		REQUIRE(server_.is_valid());
		server_.Post("/ingest", [this](const httplib::Request &req, httplib::Response &res) {
			std::lock_guard<std::mutex> lock(mutex_);
			Request r{req.get_header_value("Authorization"), req.body.size(), 0};
			r.status = res.status = r.authorization == expected_ ? 200 : 401;
			res.set_content(r.status == 200 ? "" : "unauthorized\n", "text/plain");
			requests_.push_back(r);
		});
		port_ = server_.bind_to_any_port("127.0.0.1");
		REQUIRE(port_ > 0);
		thread_ = std::thread([this] { server_.listen_after_bind(); });
	}
	~Receiver()
	{
		server_.stop();
		thread_.join();
	}
	std::string url() const { return "https://127.0.0.1:" + std::to_string(port_); }
	std::vector<Request> requests()
	{
		std::lock_guard<std::mutex> lock(mutex_);
		return requests_;
	}

private:
	httplib::SSLServer server_;
	std::string expected_;
	int port_ = 0;
	std::mutex mutex_;
	std::vector<Request> requests_;
	std::thread thread_;
};

// monitor -d on a running hot target, pushing with args; its stderr.
std::string monitor_pushing(const std::vector<std::string> &args)
{
	Background t({target("hot"), "30"});
	std::string out = temp_dir();
	std::vector<std::string> argv = {e2e::usdtprof(), "monitor", "-p", std::to_string(t.pid()), "-i", "0.3", "-d",
					 "1.2", "-o", out + "/intervals"};
	argv.insert(argv.end(), args.begin(), args.end());
	Background mon(argv);
	int status = mon.wait();
	std::string err = mon.rest_of_stderr();
	INFO(err);
	REQUIRE(status == 0);
	REQUIRE(kill(t.pid(), 0) == 0); // the target goes on
	std::filesystem::remove_all(out);
	return err;
}

std::string private_file(const std::string &path, const std::string &text)
{
	std::ofstream(path) << text << "\n";
	REQUIRE(chmod(path.c_str(), 0600) == 0);
	return path;
}

// The intervals the monitor says it completed (each one is pushed).
size_t intervals(const std::string &err)
{
	const std::string said = "stopped after ";
	size_t at = err.find(said);
	REQUIRE(at != std::string::npos);
	return std::stoul(err.substr(at + said.size()));
}

size_t count(const std::string &text, const std::string &what)
{
	size_t n = 0;
	for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
		n++;
	return n;
}

} // namespace

TEST_CASE("monitor --push https: a throwaway CA and basic auth or a bearer token; a wrong CA or credential "
	  "is one log line",
	  "[push-tls]")
{
	std::string dir = temp_dir();
	make_test_ca(dir, "ca");
	make_test_ca(dir, "other");
	std::string ca = dir + "/ca.pem";
	// base64("pusher:s3cret pass")
	Receiver basic(dir + "/ca-srv.pem", dir + "/ca-srv.key", "Basic cHVzaGVyOnMzY3JldCBwYXNz");
	std::string cred = private_file(dir + "/cred", "pusher:s3cret pass");

	SECTION("the right CA and credential: every interval arrives, nothing is logged")
	{
		std::string err = monitor_pushing({"--push", basic.url(), "--push-ca-file", ca, "--push-basic-auth-file", cred});
		INFO(err);
		auto got = basic.requests();
		REQUIRE(got.size() == intervals(err));
		REQUIRE(got.size() >= 1);
		for (const Request &r : got) {
			REQUIRE(r.status == 200);
			REQUIRE(r.body_bytes > 20);
		}
		REQUIRE(count(err, "push to") == 0);
		// The credential is never on the command line nor in the log.
		REQUIRE(err.find("s3cret") == std::string::npos);
	}
	SECTION("a CA that did not sign the receiver's certificate: refused, one line")
	{
		std::string err = monitor_pushing({"--push", basic.url(), "--push-ca-file", dir + "/other.pem",
						   "--push-basic-auth-file", cred});
		REQUIRE(basic.requests().empty());
		INFO(err);
		REQUIRE(count(err, "usdtprof: push to " + basic.url() + ": SSL certificate problem") == 1);
		REQUIRE(err.find("s3cret") == std::string::npos);
	}
	SECTION("the system's CAs do not know the throwaway CA")
	{
		std::string err = monitor_pushing({"--push", basic.url(), "--push-basic-auth-file", cred});
		REQUIRE(basic.requests().empty());
		REQUIRE(count(err, "usdtprof: push to " + basic.url() + ": SSL certificate problem") == 1);
	}
	SECTION("a wrong password: the receiver's 401, one line, given up at once")
	{
		std::string wrong = private_file(dir + "/wrong", "pusher:guess");
		std::string err = monitor_pushing({"--push", basic.url(), "--push-ca-file", ca, "--push-basic-auth-file", wrong});
		auto got = basic.requests();
		REQUIRE(!got.empty());
		for (const Request &r : got)
			REQUIRE(r.status == 401);
		INFO(err);
		REQUIRE(count(err, "usdtprof: push to " + basic.url() + ": HTTP 401: unauthorized") == 1);
		// 4xx is not retried: one request per interval.
		REQUIRE(got.size() == intervals(err));
	}
	SECTION("a bearer token from the environment")
	{
		Receiver bearer(dir + "/ca-srv.pem", dir + "/ca-srv.key", "Bearer tok-123");
		setenv("USDTPROF_PUSH_BEARER_TOKEN", "tok-123", 1);
		std::string err = monitor_pushing({"--push", bearer.url(), "--push-ca-file", ca});
		unsetenv("USDTPROF_PUSH_BEARER_TOKEN");
		auto got = bearer.requests();
		INFO(err);
		REQUIRE(got.size() == intervals(err));
		REQUIRE(got.size() >= 1);
		for (const Request &r : got)
			REQUIRE(r.status == 200);
	}
	SECTION("refused at start: a credential file others can read, credentials to a plain-http remote")
	{
		std::string open_file = dir + "/open";
		std::ofstream(open_file) << "pusher:x\n";
		REQUIRE(chmod(open_file.c_str(), 0644) == 0);
		Output o = run({e2e::usdtprof(), "monitor", "-p", "1", "--push", basic.url(), "--push-basic-auth-file",
				open_file, "-o", dir + "/never"});
		REQUIRE(o.status == 1);
		REQUIRE(o.err == "usdtprof: the credential file " + open_file +
					 " is readable or writable by other users: chmod 600 it\n");
		o = run({e2e::usdtprof(), "monitor", "-p", "1", "--push", "http://192.0.2.1:4040", "--push-basic-auth-file",
			 cred, "-o", dir + "/never"});
		REQUIRE(o.status == 1);
		REQUIRE(o.err == "usdtprof: credentials are sent only over https:// (or http:// to this host)\n");
		REQUIRE(!std::filesystem::exists(dir + "/never"));
	}
	std::filesystem::remove_all(dir);
}
