#include "harness.h"

#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <regex>
#include <sstream>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace e2e {

namespace {

int spawn(const std::vector<std::string> &argv, int &out_fd, int &err_fd)
{
	int out[2], err[2];
	REQUIRE(pipe2(out, O_CLOEXEC) == 0);
	REQUIRE(pipe2(err, O_CLOEXEC) == 0);
	// Built before the fork: the child of a process that may have threads
	// must not allocate (another thread may hold malloc's lock).
	std::vector<char *> args;
	for (const auto &a : argv)
		args.push_back(const_cast<char *>(a.c_str()));
	args.push_back(nullptr);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		dup2(out[1], 1);
		dup2(err[1], 2);
		execvp(args[0], args.data());
		_exit(127);
	}
	close(out[1]);
	close(err[1]);
	out_fd = out[0];
	err_fd = err[0];
	return pid;
}

int decode(int status)
{
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Reads whatever is available from both fds into the buffers, waiting up to ms.
void pump(int out_fd, int err_fd, std::string &out, std::string &err, int ms)
{
	pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
	if (poll(fds, 2, ms) <= 0)
		return;
	char buf[4096];
	for (int i = 0; i < 2; i++) {
		if (!(fds[i].revents & (POLLIN | POLLHUP)))
			continue;
		ssize_t n = read(fds[i].fd, buf, sizeof(buf));
		if (n > 0)
			(i == 0 ? out : err).append(buf, size_t(n));
	}
}

// Everything already in the pipes, without waiting for more. After a child's
// exit, all it wrote: pump reads at most 4 KiB a pipe, and one pump after the
// exit cut a report's JSON at 4 KiB when the child wrote it and exited between
// a pump that found nothing and the wait (beside two CPU-bound processes).
void pump_all(int out_fd, int err_fd, std::string &out, std::string &err)
{
	for (size_t before = SIZE_MAX; before != out.size() + err.size();) {
		before = out.size() + err.size();
		pump(out_fd, err_fd, out, err, 0);
	}
}

} // namespace

Output run(const std::vector<std::string> &argv)
{
	Output o;
	int out_fd, err_fd;
	pid_t pid = spawn(argv, out_fd, err_fd);
	for (;;) {
		size_t before = o.out.size() + o.err.size();
		pump(out_fd, err_fd, o.out, o.err, 100);
		int status;
		if (before == o.out.size() + o.err.size() && waitpid(pid, &status, WNOHANG) == pid) {
			pump_all(out_fd, err_fd, o.out, o.err);
			o.status = decode(status);
			break;
		}
	}
	close(out_fd);
	close(err_fd);
	return o;
}

Background::Background(const std::vector<std::string> &argv)
{
	pid_ = spawn(argv, out_fd_, err_fd_);
}

Background::~Background()
{
	if (pid_ > 0) {
		kill(pid_, SIGKILL);
		waitpid(pid_, nullptr, 0);
	}
	close(out_fd_);
	close(err_fd_);
}

std::string Background::wait_for_line(const std::string &text, bool from_stderr, double timeout_s)
{
	auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
	std::string &buf = from_stderr ? err_buf_ : out_buf_;
	while (std::chrono::steady_clock::now() < deadline) {
		size_t at = buf.find(text);
		if (at != std::string::npos) {
			size_t end = buf.find('\n', at);
			if (end != std::string::npos) {
				size_t start = buf.rfind('\n', at);
				start = start == std::string::npos ? 0 : start + 1;
				return buf.substr(start, end - start);
			}
		}
		pump(out_fd_, err_fd_, out_buf_, err_buf_, 50);
	}
	FAIL("timed out waiting for '" << text << "'; stdout: " << out_buf_ << " stderr: " << err_buf_);
	return {};
}

std::string Background::wait_for_line_from(size_t from, const std::string &text, double timeout_s, bool from_stderr)
{
	auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
	const std::string &buf = from_stderr ? err_buf_ : out_buf_;
	while (std::chrono::steady_clock::now() < deadline) {
		size_t at = buf.find(text, from);
		size_t end = at == std::string::npos ? at : buf.find('\n', at);
		if (end != std::string::npos) {
			size_t start = buf.rfind('\n', at);
			start = start == std::string::npos ? 0 : start + 1;
			return buf.substr(start, end - start);
		}
		pump(out_fd_, err_fd_, out_buf_, err_buf_, 50);
	}
	FAIL("timed out waiting for '" << text << "' after byte " << from << " of std" << (from_stderr ? "err" : "out")
				       << "; stdout: " << out_buf_.substr(from_stderr ? 0 : from) << " stderr: " << err_buf_);
	return {};
}

void Background::drain()
{
	pump_all(out_fd_, err_fd_, out_buf_, err_buf_);
}

int Background::wait()
{
	int status;
	for (;;) {
		pump(out_fd_, err_fd_, out_buf_, err_buf_, 50);
		pid_t r = waitpid(pid_, &status, WNOHANG);
		if (r == pid_)
			break;
		REQUIRE((r == 0 || errno == EINTR));
	}
	pump_all(out_fd_, err_fd_, out_buf_, err_buf_);
	pid_ = -1;
	return decode(status);
}

std::string Background::rest_of_stderr()
{
	return err_buf_;
}

std::string usdtprof()
{
	const char *p = getenv("USDTPROF");
	return p ? p : ".output/usdtprof";
}

std::string target(const std::string &name)
{
	const char *dir = getenv("TARGETS");
	return std::string(dir ? dir : ".output/targets") + "/" + name;
}

std::string source_file(const std::string &relative)
{
	namespace fs = std::filesystem;
	return fs::absolute(fs::path(__FILE__).parent_path().parent_path().parent_path() / relative).string();
}

void require_exit(Background &p, int status)
{
	const int got = p.wait();
	INFO("its stderr:\n" << p.rest_of_stderr());
	REQUIRE(got == status);
}

void require_promtool_clean(const std::string &text)
{
	std::string file = temp_dir() + "/metrics.txt";
	std::ofstream(file) << text;
	Output lint = run({"sh", "-c", "promtool check metrics < \"$0\"", file});
	INFO(text);
	INFO(lint.out << lint.err);
	REQUIRE(lint.status == 0);
	REQUIRE(lint.out.empty());
	REQUIRE(lint.err.empty());
}

std::string temp_dir()
{
	char tmpl[] = "/tmp/usdtprof-e2e-XXXXXX";
	REQUIRE(mkdtemp(tmpl) != nullptr);
	return tmpl;
}

std::string write_file(const std::string &dir, const std::string &name, const std::string &text)
{
	std::string path = dir + "/" + name;
	std::ofstream out(path);
	out << text;
	out.close();
	INFO(path);
	REQUIRE(out.good());
	return path;
}

double slack_ns(const std::string &target_stdout)
{
	size_t at = target_stdout.find("measured slack ");
	return at == std::string::npos ? 0 : std::stod(target_stdout.substr(at + 15));
}

void require_time(const nlohmann::json &value, double known_ns, double slack_ns)
{
	INFO("known " << known_ns << " ns, slack of the run " << slack_ns << " ns, usdtprof has " << value);
	REQUIRE(value.is_number_integer());
	REQUIRE(value.get<double>() >= known_ns * 0.98);
	REQUIRE(value.get<double>() <= known_ns * 1.02 + slack_ns);
}

nlohmann::json parse_report(const std::string &text)
{
	nlohmann::json report = nlohmann::json::parse(text);
	REQUIRE(report.at("version") == 2);
	nlohmann::json &paths = report.at("paths");
	for (size_t i = 0; i < paths.size(); i++) {
		nlohmann::json &p = paths[i];
		REQUIRE(p.at("id") == i);
		REQUIRE_FALSE(p.contains("stack"));
		const nlohmann::json &parent = p.at("parent");
		REQUIRE((parent.is_null() || (parent.is_number_unsigned() && parent.get<size_t>() < i)));
		nlohmann::json stack = parent.is_null() ? nlohmann::json::array() : paths[parent.get<size_t>()].at("stack");
		stack.push_back(p.at("name"));
		p["stack"] = std::move(stack);
	}
	return report;
}

nlohmann::json report_json(const std::string &profile, bool raw)
{
	std::vector<std::string> argv = {usdtprof(), "report", "--format", "json", profile};
	if (raw)
		argv.push_back("--raw");
	Output o = run(argv);
	INFO(o.err);
	REQUIRE(o.status == 0);
	return parse_report(o.out);
}

bool host_counter(const std::string &anomaly)
{
	return anomaly == "host_steal_ns";
}

void require_no_anomalies(const nlohmann::json &report, const std::map<std::string, uint64_t> &at_most)
{
	const nlohmann::json &anomalies = report.at("anomalies");
	for (const auto &[name, bound] : at_most) {
		INFO(name);
		REQUIRE(anomalies.contains(name));
	}
	for (const auto &[name, count] : anomalies.items()) {
		INFO(name);
		if (auto bound = at_most.find(name); bound != at_most.end())
			REQUIRE(count.get<uint64_t>() <= bound->second);
		else
			REQUIRE((count == 0 || host_counter(name)));
	}
}

Recorded record_profile(const std::vector<std::string> &command, const RecordArgs &args)
{
	Recorded r;
	r.data = temp_dir() + "/profile.data";
	std::vector<std::string> argv = args.env;
	argv.insert(argv.end(), {usdtprof(), "record", "-o", r.data});
	argv.insert(argv.end(), args.options.begin(), args.options.end());
	argv.push_back("--");
	argv.insert(argv.end(), command.begin(), command.end());
	r.output = run(argv);
	INFO(r.output.err);
	REQUIRE(r.output.status == args.status);
	r.slack = slack_ns(r.output.out);
	return r;
}

Recorded record_report(const std::vector<std::string> &command, const RecordArgs &args)
{
	Recorded r = record_profile(command, args);
	r.report = report_json(r.data, args.raw);
	return r;
}

nlohmann::json function(const nlohmann::json &report, const std::string &name)
{
	for (const auto &f : report.at("functions"))
		if (f.at("name") == name)
			return f;
	FAIL("no function " << name << " in report");
	return {};
}

nlohmann::json path(const nlohmann::json &report, const std::string &stack)
{
	for (const auto &p : report.at("paths")) {
		std::string joined;
		for (const auto &n : p.at("stack"))
			joined += (joined.empty() ? "" : ";") + n.get<std::string>();
		if (joined == stack)
			return p;
	}
	return nullptr;
}

std::map<std::string, double> measured(const std::string &out)
{
	std::map<std::string, double> m;
	std::istringstream in(out);
	for (std::string line; std::getline(in, line);) {
		std::istringstream words(line);
		std::string tag, name;
		double ns;
		if (words >> tag >> name >> ns && tag == "measured")
			m[name] = ns;
	}
	return m;
}

int free_port()
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	REQUIRE(fd >= 0);
	sockaddr_in a{};
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = 0;
	REQUIRE(bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0);
	socklen_t len = sizeof a;
	REQUIRE(getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len) == 0);
	close(fd);
	return ntohs(a.sin_port);
}

int metrics_port(Background &monitor)
{
	std::string listening = monitor.wait_for_line("metrics at", true);
	std::smatch port;
	INFO(listening);
	REQUIRE(std::regex_search(listening, port, std::regex(":([0-9]+)/metrics")));
	return std::stoi(port[1]);
}

} // namespace e2e
