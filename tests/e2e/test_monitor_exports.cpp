// usdtprof monitor's two outlets, end to end against real consumers: a real
// Prometheus server scraping /metrics, and a Pyroscope-style ingest endpoint
// receiving each interval's gzip'd pprof (docs/monitoring.md).
#include <algorithm>
#include <catch2/catch.hpp>
#include <arpa/inet.h>
#include <crypt.h>
#include <chrono>
#include <csignal>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include "serve/http.h"
#include <map>
#include <mutex>
#include <netinet/in.h>
#include <sstream>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "gzip.h"
#include "tls.h"
#include "harness.h"
#include "local_server.h"
#include "proto/profile.pb.h"

using namespace e2e;
using nlohmann::json;

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

void sleep_s(double s)
{
	std::this_thread::sleep_for(std::chrono::duration<double>(s));
}

// A temporary directory, removed with everything in it at the end of scope.
struct TempDir {
	std::string path = temp_dir();
	~TempDir()
	{
		std::error_code ec;
		fs::remove_all(path, ec);
	}
};

std::string read_text(const std::string &file)
{
	std::ifstream in(file);
	return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Our own Prometheus: the Debian binary with its own config, storage and
// loopback port in a temporary directory (never the packaged service on
// :9090). Stopped, and its directory removed, at the end of scope; it also
// dies with this test process (PR_SET_PDEATHSIG).
class Prometheus {
public:
	// job: more settings of the usdtprof job (scheme, tls_config ...); more_jobs: whole jobs.
	explicit Prometheus(int scrape_port, const std::string &job = "", const std::string &more_jobs = "")
	{
		config_ = dir_.path + "/prometheus.yml";
		tsdb_ = dir_.path + "/tsdb";
		log_ = dir_.path + "/prometheus.log";
		std::ofstream(config_) << "global:\n"
					  "  scrape_interval: 1s\n"
					  "  scrape_timeout: 1s\n"
					  "  evaluation_interval: 1s\n"
					  "scrape_configs:\n"
					  "  - job_name: usdtprof\n"
					  "    scrape_interval: 1s\n"
					  "    scrape_timeout: 1s\n"
					  "    static_configs:\n"
					  "      - targets: ['127.0.0.1:"
				       << scrape_port << "']\n"
				       << job << more_jobs;
		do
			port_ = free_port();
		while (port_ == scrape_port);
		std::vector<std::string> argv = {"/usr/bin/prometheus",
						 "--config.file=" + config_,
						 "--storage.tsdb.path=" + tsdb_,
						 "--web.listen-address=127.0.0.1:" + std::to_string(port_)};
		REQUIRE(access(argv[0].c_str(), X_OK) == 0);
		pid_t parent = getpid();
		pid_ = fork();
		REQUIRE(pid_ >= 0);
		if (pid_ == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() != parent)
				_exit(127);
			int fd = open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
			int null = open("/dev/null", O_RDONLY);
			if (fd < 0 || null < 0)
				_exit(127);
			dup2(null, 0);
			dup2(fd, 1);
			dup2(fd, 2);
			if (chdir(dir_.path.c_str()) != 0) // anything relative lands in the temp dir
				_exit(127);
			std::vector<char *> args;
			for (auto &a : argv)
				args.push_back(a.data());
			args.push_back(nullptr);
			execv(args[0], args.data());
			_exit(127);
		}
	}
	~Prometheus()
	{
		if (pid_ <= 0)
			return;
		kill(pid_, SIGTERM);
		for (auto until = Clock::now() + std::chrono::seconds(5); Clock::now() < until;) {
			if (waitpid(pid_, nullptr, WNOHANG) == pid_)
				return;
			sleep_s(0.05);
		}
		kill(pid_, SIGKILL);
		waitpid(pid_, nullptr, 0);
	}
	Prometheus(const Prometheus &) = delete;
	Prometheus &operator=(const Prometheus &) = delete;

	int port() const { return port_; }
	const std::string &tsdb() const { return tsdb_; }
	std::string log() const { return read_text(log_); }
	bool running()
	{
		if (pid_ > 0 && waitpid(pid_, nullptr, WNOHANG) == pid_)
			pid_ = -1;
		return pid_ > 0;
	}

private:
	TempDir dir_;
	std::string config_, tsdb_, log_;
	int port_ = 0;
	pid_t pid_ = -1;
};

// Waits until /-/ready answers 200 (the TSDB is open); http gets its timeouts.
void wait_ready(Prometheus &prom, httplib::Client &http)
{
	http.set_connection_timeout(std::chrono::seconds(1));
	http.set_read_timeout(std::chrono::seconds(3));
	bool ready = false;
	for (auto until = Clock::now() + std::chrono::seconds(15); !ready && Clock::now() < until;) {
		INFO("prometheus log: " << prom.log());
		REQUIRE(prom.running());
		auto res = http.Get("/-/ready");
		ready = res && res->status == 200;
		if (!ready)
			sleep_s(0.1);
	}
	INFO("prometheus log: " << prom.log());
	REQUIRE(ready);
}

// An instant query's result vector (fails the test on an error answer).
json prom_query(httplib::Client &http, const std::string &query)
{
	auto res = http.Get("/api/v1/query", httplib::Params{{"query", query}}, httplib::Headers{});
	INFO("query " << query);
	REQUIRE(res);
	INFO(res->body);
	REQUIRE(res->status == 200);
	json j = json::parse(res->body);
	REQUIRE(j.at("status") == "success");
	REQUIRE(j.at("data").at("resultType") == "vector");
	return j.at("data").at("result");
}

double sample_value(const json &series)
{
	return std::stod(series.at("value").at(1).get<std::string>());
}

// The value of the series whose labels include all of labels; NaN if none.
double series_value(const json &result, const std::map<std::string, std::string> &labels)
{
	for (const json &s : result) {
		bool match = true;
		for (const auto &[k, v] : labels)
			match = match && s.at("metric").value(k, "") == v;
		if (match)
			return sample_value(s);
	}
	return std::nan("");
}

// Polls query until pred holds for its result, at most timeout_s; the last result.
template <typename Pred>
json poll_query(httplib::Client &http, const std::string &query, double timeout_s, Pred pred)
{
	auto until = Clock::now() + std::chrono::duration<double>(timeout_s);
	json result;
	for (;;) {
		result = prom_query(http, query);
		if (pred(result) || Clock::now() >= until)
			return result;
		sleep_s(0.25);
	}
}

// One request the ingest endpoint received, and what it answered.
struct Received {
	std::string method, path, target, content_type, body;
	std::multimap<std::string, std::string> params;
	int status = 0;
	std::string param(const std::string &k) const
	{
		auto it = params.find(k);
		return it == params.end() ? "" : it->second;
	}
};

// Per leaf function name: calls and self time summed over the samples.
struct LeafTotals {
	int64_t calls = 0, self_ns = 0;
};

std::map<std::string, LeafTotals> leaf_totals(const perftools::profiles::Profile &p)
{
	auto str = [&](int64_t i) {
		REQUIRE(i >= 0);
		REQUIRE(i < p.string_table_size());
		return p.string_table(int(i));
	};
	std::map<uint64_t, std::string> function_names, location_names;
	for (const auto &f : p.function())
		function_names[f.id()] = str(f.name());
	for (const auto &l : p.location()) {
		REQUIRE(l.line_size() >= 1);
		REQUIRE(function_names.count(l.line(0).function_id()));
		location_names[l.id()] = function_names[l.line(0).function_id()];
	}
	std::map<std::string, LeafTotals> out;
	for (const auto &s : p.sample()) {
		REQUIRE(s.location_id_size() >= 1);
		REQUIRE(s.value_size() == p.sample_type_size());
		REQUIRE(location_names.count(s.location_id(0)));
		LeafTotals &t = out[location_names[s.location_id(0)]];
		t.calls += s.value(0);
		t.self_ns += s.value(1);
	}
	return out;
}

// The outer calls in a pushed body (gzip'd pprof); 0 if it does not parse.
uint64_t outer_calls(const std::string &body)
{
	std::string raw;
	perftools::profiles::Profile p;
	if (!gunzip(body, raw) || !p.ParseFromString(raw))
		return 0;
	return leaf_totals(p)["outer"].calls;
}

} // namespace

TEST_CASE("monitor exports: a real Prometheus scrapes /metrics and sees the exact counters", "[monitor-exports]")
{
	auto started = Clock::now();
	// ~20 s of work: it outlives the test, which kills it.
	Background t({target("nested"), "--wait", "2000"});
	t.wait_for_line("ready");
	REQUIRE(kill(t.pid(), SIGUSR1) == 0);
	TempDir out;
	int metrics_port = free_port();
	Background mon({e2e::usdtprof(), "monitor", "-p", std::to_string(t.pid()), "-i", "0.5", "--budget", "1", "-o",
			out.path + "/intervals", "--listen", "127.0.0.1:" + std::to_string(metrics_port)});
	mon.wait_for_line("monitoring", true);

	Prometheus prom(metrics_port);
	httplib::Client http("127.0.0.1", prom.port());
	wait_ready(prom, http);
	// It is ours: our storage, our address (not the packaged service).
	{
		auto res = http.Get("/api/v1/status/flags");
		REQUIRE(res);
		REQUIRE(res->status == 200);
		json flags = json::parse(res->body).at("data");
		REQUIRE(flags.at("storage.tsdb.path") == prom.tsdb());
		REQUIRE(flags.at("web.listen-address") == "127.0.0.1:" + std::to_string(prom.port()));
	}

	// The function counter arrives through a scrape.
	const std::map<std::string, std::string> outer = {{"process", "nested"}, {"function", "outer"}},
						 inner = {{"process", "nested"}, {"function", "inner"}};
	json calls = poll_query(http, "usdtprof_function_calls_total", 20, [&](const json &r) {
		double v = series_value(r, outer);
		return v == v && v > 0;
	});
	INFO("usdtprof_function_calls_total: " << calls.dump());
	REQUIRE(series_value(calls, outer) > 0);
	// Every series came from our job and target.
	for (const json &s : calls) {
		REQUIRE(s.at("metric").at("job") == "usdtprof");
		REQUIRE(s.at("metric").at("instance") == "127.0.0.1:" + std::to_string(metrics_port));
	}
	REQUIRE(prom_query(http, "up{job=\"usdtprof\"}").at(0).at("value").at(1) == "1");

	// Once a good number of outer calls is in, one scrape (one instant query
	// over both series) has 3 inner calls per outer call, up to the calls in
	// flight and those already running when the monitor attached.
	json both = poll_query(http, "usdtprof_function_calls_total{process=\"nested\",function=~\"outer|inner\"}", 8,
			       [&](const json &r) { return series_value(r, outer) >= 50; });
	INFO("outer and inner: " << both.dump());
	double o = series_value(both, outer), i = series_value(both, inner);
	REQUIRE(o >= 50);
	REQUIRE(i >= 3 * o - 3);
	REQUIRE(i <= 3 * o + 6);
	// PromQL sees them as counters that only grow.
	REQUIRE(prom_query(http, "resets(usdtprof_function_calls_total[1m])").size() >= 2);
	for (const json &s : prom_query(http, "resets(usdtprof_function_calls_total[1m])"))
		REQUIRE(sample_value(s) == 0);

	// A cheap target: probes attached all the time.
	json duty = prom_query(http, "usdtprof_duty_cycle");
	INFO("usdtprof_duty_cycle: " << duty.dump());
	REQUIRE(duty.size() == 1);
	REQUIRE(sample_value(duty.at(0)) == 1.0);

	// Each call seen is an entry and an exit hit (but for the one or two
	// frames that were running at attach, whose entry came before it); the
	// hits of the interval that brought those calls may reach /metrics one
	// scrape later.
	json hits = poll_query(http, "usdtprof_probe_hits_total", 5, [&](const json &r) {
		return r.size() == 1 && sample_value(r.at(0)) >= 2 * (o + i) - 4;
	});
	INFO("usdtprof_probe_hits_total: " << hits.dump());
	REQUIRE(hits.size() == 1);
	REQUIRE(sample_value(hits.at(0)) >= 2 * (o + i) - 4);
	// ... and no more than the target can have made by now (10 ms per outer).
	double elapsed = std::chrono::duration<double>(Clock::now() - started).count();
	REQUIRE(sample_value(hits.at(0)) <= 8 * (elapsed / 0.010 + 1) + 2);
	json intervals = prom_query(http, "usdtprof_intervals_total");
	REQUIRE(intervals.size() == 1);
	REQUIRE(sample_value(intervals.at(0)) >= 1);

	// The monitor is still healthy: it stops cleanly on SIGTERM.
	REQUIRE(kill(mon.pid(), SIGTERM) == 0);
	REQUIRE(mon.wait() == 0);
	REQUIRE(kill(t.pid(), 0) == 0); // the target goes on
}

TEST_CASE("monitor exports: pushed pprof profiles add up to the exact calls, a 503 is retried", "[monitor-exports]")
{
	std::mutex mutex;
	std::vector<Received> received;
	LocalServer receiver;
	receiver.server().Post(".*", [&](const httplib::Request &req, httplib::Response &res) {
		std::lock_guard<std::mutex> lock(mutex);
		Received r;
		r.method = req.method;
		r.path = req.path;
		r.target = req.target;
		r.content_type = req.get_header_value("Content-Type");
		r.body = req.body;
		r.params.insert(req.params.begin(), req.params.end());
		// The first request with outer calls in it is refused (retryable):
		// adding it to its accepted retry would overcount. Whether the
		// first interval has calls depends on the load.
		bool refused = std::any_of(received.begin(), received.end(),
					   [](const Received &x) { return x.status != 200; });
		r.status = !refused && outer_calls(r.body) > 0 ? 503 : 200;
		res.status = r.status;
		res.set_content(r.status == 503 ? "busy\n" : "", "text/plain");
		received.push_back(std::move(r));
	});
	receiver.start();
	const int port = receiver.port();

	int64_t unix_before = std::chrono::duration_cast<std::chrono::seconds>(
				      std::chrono::system_clock::now().time_since_epoch())
				      .count();
	TempDir out;
	Background t({target("nested"), "--wait", "150"});
	t.wait_for_line("ready");
	const int target_pid = t.pid(); // t.pid() is -1 once waited for
	std::string pid = std::to_string(target_pid);
	Background mon({e2e::usdtprof(), "monitor", "-p", pid, "-i", "0.3", "--budget", "1", "-o", out.path + "/intervals", "--push",
			"http://127.0.0.1:" + std::to_string(port), "--service", "testsvc"});
	mon.wait_for_line("monitoring", true);
	REQUIRE(kill(target_pid, SIGUSR1) == 0);
	REQUIRE(t.wait() == 7);
	double slack = slack_ns(t.all_stdout());
	// The monitor ends with its target, after delivering what is queued.
	int status = mon.wait();
	INFO("monitor stderr: " << mon.rest_of_stderr());
	REQUIRE(status == 0);
	int64_t unix_after = std::chrono::duration_cast<std::chrono::seconds>(
				     std::chrono::system_clock::now().time_since_epoch())
				     .count();
	receiver.stop();

	std::lock_guard<std::mutex> lock(mutex);
	INFO(received.size() << " requests");
	REQUIRE(received.size() >= 4);
	std::map<std::string, LeafTotals> totals;
	size_t accepted = 0;
	for (size_t n = 0; n < received.size(); n++) {
		const Received &r = received[n];
		INFO("request " << n << ": " << r.method << " " << r.target << " (answered " << r.status << ")");
		REQUIRE(r.method == "POST");
		REQUIRE(r.path == "/ingest");
		REQUIRE(r.content_type == "application/octet-stream");
		std::string name = r.param("name");
		REQUIRE(name.rfind("testsvc{", 0) == 0);
		REQUIRE(name.back() == '}');
		// pid=PID is a whole label: after '{' or ',', up to ',' or '}'.
		size_t at = name.find("pid=" + pid);
		REQUIRE(at != std::string::npos);
		REQUIRE((name[at - 1] == '{' || name[at - 1] == ','));
		char after = name[at + 4 + pid.size()];
		REQUIRE((after == ',' || after == '}'));
		REQUIRE(r.param("format") == "pprof");
		REQUIRE(r.param("spyName") == "usdtprof");
		REQUIRE(r.params.count("from") == 1);
		REQUIRE(r.params.count("until") == 1);
		int64_t from = std::stoll(r.param("from")), until = std::stoll(r.param("until"));
		REQUIRE(from <= until);
		REQUIRE(from >= unix_before - 1);
		REQUIRE(until <= unix_after + 1);

		std::string raw;
		REQUIRE(r.body.size() >= 2);
		REQUIRE(uint8_t(r.body[0]) == 0x1f); // gzip's magic
		REQUIRE(uint8_t(r.body[1]) == 0x8b);
		REQUIRE(gunzip(r.body, raw));
		perftools::profiles::Profile p;
		REQUIRE(p.ParseFromString(raw));
		REQUIRE(p.sample_type_size() >= 2);
		REQUIRE(p.string_table_size() > 0);
		REQUIRE(p.string_table(0).empty());
		auto str = [&](int64_t i) { return i >= 0 && i < p.string_table_size() ? p.string_table(int(i)) : "?"; };
		REQUIRE(str(p.sample_type(0).type()) == "calls");
		REQUIRE(str(p.sample_type(0).unit()) == "count");
		REQUIRE(str(p.sample_type(1).type()) == "self_time");
		REQUIRE(str(p.sample_type(1).unit()) == "nanoseconds");
		// Every sample is the target's.
		for (const auto &s : p.sample())
			for (const auto &l : s.label())
				if (str(l.key()) == "pid")
					REQUIRE(l.num() == target_pid);
		if (r.status != 200)
			continue;
		accepted++;
		for (const auto &[function, v] : leaf_totals(p)) {
			totals[function].calls += v.calls;
			totals[function].self_ns += v.self_ns;
		}
	}
	// The refused interval was sent again, unchanged, and accepted.
	size_t first = 0;
	while (first < received.size() && received[first].status == 200)
		first++;
	REQUIRE(first < received.size());
	bool retried = false;
	for (size_t n = first + 1; n < received.size(); n++)
		retried = retried || (received[n].status == 200 && received[n].target == received[first].target &&
				      received[n].body == received[first].body);
	REQUIRE(retried);
	REQUIRE(accepted >= 3);
	REQUIRE(accepted == received.size() - 1);

	// Exact over the accepted intervals: none lost, none counted twice.
	REQUIRE(totals["outer"].calls == 150);
	REQUIRE(totals["inner"].calls == 450);
	REQUIRE(totals["main"].calls == 1);
	// 4 ms of self time per outer call, 2 ms per inner one.
	require_time(json(totals["outer"].self_ns), 150 * 4e6, slack);
	require_time(json(totals["inner"].self_ns), 450 * 2e6, slack);
}

TEST_CASE("monitor exports: Prometheus scrapes /metrics over TLS with basic auth from a web config; a wrong "
	  "password, an unknown CA and plain http are refused",
	  "[monitor-exports]")
{
	TempDir dir;
	make_test_ca(dir.path, "ca");
	// The password's bcrypt hash, as htpasswd -B or exporter-toolkit's docs make it.
	char salt[64];
	crypt_data cd{};
	REQUIRE(crypt_gensalt_rn("$2b$", 10, nullptr, 0, salt, sizeof salt));
	std::string hash = crypt_r("scrape-pw", salt, &cd);
	REQUIRE(hash.rfind("$2b$10$", 0) == 0);
	// Relative paths: against the file's directory, as exporter-toolkit reads them.
	std::string web = dir.path + "/web.yml";
	std::ofstream(web) << "tls_server_config:\n  cert_file: ca-srv.pem\n  key_file: ca-srv.key\n"
			      "basic_auth_users:\n  prom: " << hash << "\n";
	// Prometheus' own checker accepts the file.
	Output check = run({"promtool", "check", "web-config", web});
	INFO(check.out << check.err);
	REQUIRE(check.status == 0);

	Background t({target("nested"), "--wait", "2000"});
	t.wait_for_line("ready");
	REQUIRE(kill(t.pid(), SIGUSR1) == 0);
	int metrics_port = free_port();
	std::string address = "127.0.0.1:" + std::to_string(metrics_port);
	Background mon({e2e::usdtprof(), "monitor", "-p", std::to_string(t.pid()), "-i", "0.5", "--budget", "1", "-o",
			dir.path + "/intervals", "--listen", address, "--web-config-file", web});
	REQUIRE_THAT(mon.wait_for_line("metrics at", true), Catch::Matchers::Contains("metrics at https://" + address + "/metrics (basic auth)"));
	mon.wait_for_line("monitoring", true);

	std::string tls = "    scheme: https\n    tls_config:\n      ca_file: " + dir.path + "/ca.pem\n";
	auto job = [&](const std::string &name, const std::string &settings) {
		return "  - job_name: " + name + "\n    scrape_interval: 1s\n    scrape_timeout: 1s\n" + settings +
		       "    static_configs:\n      - targets: ['" + address + "']\n";
	};
	Prometheus prom(metrics_port, tls + "    basic_auth:\n      username: prom\n      password: scrape-pw\n",
			job("wrong-password", tls + "    basic_auth:\n      username: prom\n      password: guess\n") +
				job("no-credentials", tls) +
				job("unknown-ca", "    scheme: https\n    basic_auth:\n      username: prom\n      password: scrape-pw\n") +
				job("plain-http", "    basic_auth:\n      username: prom\n      password: scrape-pw\n"));
	httplib::Client http("127.0.0.1", prom.port());
	wait_ready(prom, http);

	const std::map<std::string, std::string> outer = {{"process", "nested"}, {"function", "outer"}};
	json calls = poll_query(http, "usdtprof_function_calls_total{job=\"usdtprof\"}", 20, [&](const json &r) {
		double v = series_value(r, outer);
		return v == v && v > 0;
	});
	INFO("usdtprof_function_calls_total: " << calls.dump() << "\nprometheus log: " << prom.log());
	REQUIRE(series_value(calls, outer) > 0);
	// Every job has been scraped at least once by now: only the right one is up, and the
	// others' samples never arrive.
	json up = poll_query(http, "up", 10, [&](const json &r) { return r.size() == 5; });
	INFO("up: " << up.dump());
	REQUIRE(up.size() == 5);
	for (const json &s : up)
		REQUIRE(sample_value(s) == (s.at("metric").at("job") == "usdtprof" ? 1.0 : 0.0));
	REQUIRE(prom_query(http, "usdtprof_function_calls_total{job!=\"usdtprof\"}").empty());

	// The failed handshakes and refusals cost their connections only: still scraping.
	double before = series_value(calls, outer);
	json later = poll_query(http, "usdtprof_function_calls_total{job=\"usdtprof\"}", 10,
				[&](const json &r) { return series_value(r, outer) > before; });
	REQUIRE(series_value(later, outer) > before);
	REQUIRE(kill(mon.pid(), SIGTERM) == 0);
	REQUIRE(mon.wait() == 0);
}
