#include "serve/pusher.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <curl/curl.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <random>
#include <strings.h>
#include <unistd.h>

#include "base/unique_fd.h"

namespace usdtprof {

namespace {

constexpr const char *kContentType = "application/octet-stream";
constexpr const char *kSpyName = "usdtprof";
// What is kept of an endpoint's answer: its status line and headers, and the
// start of its body for the error message. The rest is never read: the
// attempt ends there (an endless body would otherwise grow without bound).
constexpr size_t kMaxResponseHead = 16 * 1024;
constexpr size_t kMaxResponseBody = 1024;

// RFC 3986: everything but the unreserved characters is percent-encoded.
std::string percent_encode(const std::string &s)
{
	static const char hex[] = "0123456789ABCDEF";
	std::string out;
	for (unsigned char c : s) {
		if (isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
			out += static_cast<char>(c);
		} else {
			out += '%';
			out += hex[c >> 4];
			out += hex[c & 15];
		}
	}
	return out;
}

// Pyroscope's name{k=v,...} syntax has no escaping: a value ends at ',' or '}'.
std::string label_value(const std::string &s)
{
	std::string out;
	for (unsigned char c : s)
		out += c <= ' ' || c == 0x7f || c == ',' || c == '{' || c == '}' || c == '=' || c == '"'
			       ? '_'
			       : static_cast<char>(c);
	return out;
}

bool valid_app_name(const std::string &name)
{
	return !name.empty() && std::all_of(name.begin(), name.end(), [](unsigned char c) {
		return isalnum(c) || c == '_' || c == '.' || c == '-';
	});
}

bool retryable_status(int status)
{
	return status == 408 || status == 429 || status >= 500;
}

} // namespace

Result<PushUrl> parse_push_url(const std::string &url)
{
	auto bad = [&](const std::string &why) {
		return Error{"invalid push URL '" + url + "': " + why};
	};
	PushUrl u;
	u.tls = url.compare(0, 8, "https://") == 0;
	u.port = u.tls ? 443 : 80;
	const std::string scheme = u.tls ? "https://" : "http://";
	if (url.compare(0, scheme.size(), scheme) != 0)
		return bad("expected http[s]://HOST[:PORT][/PATH]");
	std::string rest = url.substr(scheme.size());
	if (rest.find_first_of("?#") != std::string::npos)
		return bad("query strings and fragments are not supported");
	size_t slash = rest.find('/');
	std::string authority = rest.substr(0, slash);
	if (slash != std::string::npos) {
		u.base_path = rest.substr(slash);
		while (!u.base_path.empty() && u.base_path.back() == '/')
			u.base_path.pop_back();
	}
	if (authority.find('@') != std::string::npos)
		return bad("credentials in the URL are not accepted (every user reads the command line): "
			   "use --push-basic-auth-file or --push-bearer-token-file");
	std::string port;
	if (!authority.empty() && authority[0] == '[') {
		size_t close = authority.find(']');
		if (close == std::string::npos)
			return bad("unterminated IPv6 address");
		u.host = authority.substr(1, close - 1);
		std::string after = authority.substr(close + 1);
		if (!after.empty()) {
			if (after[0] != ':')
				return bad("unexpected text after the IPv6 address");
			port = after.substr(1);
			if (port.empty())
				return bad("empty port");
		}
	} else {
		size_t colon = authority.find(':');
		u.host = authority.substr(0, colon);
		if (colon != std::string::npos) {
			port = authority.substr(colon + 1);
			if (port.empty())
				return bad("empty port");
		}
	}
	if (u.host.empty())
		return bad("missing host");
	if (!port.empty()) {
		if (port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos)
			return bad("port must be a number from 1 to 65535");
		u.port = std::stoi(port);
		if (u.port < 1 || u.port > 65535)
			return bad("port must be a number from 1 to 65535");
	}
	return u;
}

Result<std::string> read_credential(const std::string &file, const char *env_name)
{
	std::string value, from;
	if (!file.empty()) {
		from = file;
		UniqueFd fd(open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
		struct stat st;
		if (fd.get() < 0 || fstat(fd.get(), &st) != 0)
			return Error{"cannot read the credential file " + file + ": " + strerror(errno)};
		if (!S_ISREG(st.st_mode))
			return Error{"the credential file " + file + " is not a regular file"};
		if (st.st_mode & (S_IROTH | S_IWOTH | S_IWGRP))
			return Error{"the credential file " + file + " is readable or writable by other users: chmod 600 it"};
		char buf[4097];
		ssize_t n = read(fd.get(), buf, sizeof buf);
		if (n < 0)
			return Error{"cannot read the credential file " + file + ": " + strerror(errno)};
		if (n == sizeof buf)
			return Error{"the credential file " + file + " is over 4096 bytes"};
		value.assign(buf, size_t(n));
		if (!value.empty() && value.back() == '\n')
			value.pop_back();
	} else if (const char *env = getenv(env_name)) {
		from = std::string("$") + env_name;
		value = env;
	} else {
		return std::string();
	}
	if (value.empty())
		return Error{"the credential in " + from + " is empty"};
	if (std::any_of(value.begin(), value.end(), [](unsigned char c) { return c < ' ' || c == 0x7f; }))
		return Error{"the credential in " + from + " holds a line break or a control character"};
	return value;
}

// libcurl's multi interface, so that the destructor can wake an attempt in
// progress (curl_multi_wakeup) from another thread.
struct ProfilePusher::Client {
	Client() : multi(curl_multi_init()) {}
	~Client() { curl_multi_cleanup(multi); }
	void stop()
	{
		stopping = true;
		curl_multi_wakeup(multi);
	}
	CURLM *multi;
	std::atomic<bool> stopping{false};
	std::mt19937_64 rng{std::random_device{}()};
};

// The bounded part of a response that an attempt keeps.
struct PushResponse {
	long status = 0;
	std::string body;        // at most kMaxResponseBody bytes
	std::string retry_after; // the Retry-After header's value
	size_t head_bytes = 0;
	bool head_too_large = false;
	bool body_cut = false;
};

namespace {

size_t on_header(char *data, size_t size, size_t count, void *user)
{
	auto *r = static_cast<PushResponse *>(user);
	size_t len = size * count;
	r->head_bytes += len;
	if (r->head_bytes > kMaxResponseHead) {
		r->head_too_large = true;
		return 0; // ends the attempt
	}
	std::string line(data, len);
	static const std::string name = "retry-after:";
	if (line.size() > name.size() && strncasecmp(line.c_str(), name.c_str(), name.size()) == 0) {
		r->retry_after = line.substr(name.size());
		auto space = [](unsigned char c) { return isspace(c) != 0; };
		r->retry_after.erase(r->retry_after.begin(),
				     std::find_if_not(r->retry_after.begin(), r->retry_after.end(), space));
		while (!r->retry_after.empty() && space(r->retry_after.back()))
			r->retry_after.pop_back();
	}
	return len;
}

size_t on_body(char *data, size_t size, size_t count, void *user)
{
	auto *r = static_cast<PushResponse *>(user);
	size_t len = size * count, room = kMaxResponseBody - r->body.size();
	r->body.append(data, std::min(len, room));
	if (len > room) {
		r->body_cut = true;
		return 0; // ends the attempt: the rest of the body is not read
	}
	return len;
}

} // namespace

Result<std::unique_ptr<ProfilePusher>> ProfilePusher::create(PusherOptions options)
{
	auto url = parse_push_url(options.url);
	if (!url)
		return url.error();
	if (!valid_app_name(options.app_name))
		return Error{"invalid application name '" + options.app_name +
			     "': use letters, digits, '_', '.' and '-'"};
	if (options.queue_capacity == 0)
		return Error{"the push queue capacity must be at least 1"};
	if (options.max_attempts == 0)
		return Error{"the push attempts must be at least 1"};
	if (!options.auth.basic.empty() && !options.auth.bearer_token.empty())
		return Error{"give basic auth or a bearer token for --push, not both"};
	if (!options.auth.basic.empty() && options.auth.basic.find(':') == std::string::npos)
		return Error{"the basic auth credential must be USER:PASSWORD"};
	if (!url->tls && !options.auth.ca_file.empty())
		return Error{"a CA file is for https:// push URLs"};
	// Credentials travel in clear over http: only to this host.
	if (!url->tls && !(options.auth.basic.empty() && options.auth.bearer_token.empty()) &&
	    url->host != "127.0.0.1" && url->host != "::1" && url->host != "localhost")
		return Error{"credentials are sent only over https:// (or http:// to this host)"};
	if (!options.auth.ca_file.empty() && access(options.auth.ca_file.c_str(), R_OK) != 0)
		return Error{"cannot read the CA file " + options.auth.ca_file + ": " + strerror(errno)};
	if (options.initial_backoff.count() < 0 || options.max_backoff < options.initial_backoff)
		return Error{"the push backoff must satisfy 0 <= initial <= maximum"};
	// Once, before the sender thread exists (curl_global_init is not thread-safe).
	static const CURLcode global = curl_global_init(CURL_GLOBAL_DEFAULT);
	if (global != CURLE_OK)
		return Error{std::string("cannot initialise libcurl: ") + curl_easy_strerror(global)};
	return std::unique_ptr<ProfilePusher>(new ProfilePusher(std::move(options), std::move(url.value())));
}

ProfilePusher::ProfilePusher(PusherOptions options, PushUrl url)
	: options_(std::move(options)), url_(std::move(url))
{
	std::string host = options_.hostname;
	if (host.empty()) {
		char buf[256] = {};
		if (gethostname(buf, sizeof buf - 1) == 0)
			host = buf;
	}
	hostname_label_ = label_value(host);

	client_ = std::make_unique<Client>();
	thread_ = std::thread([this] { run(); });
}

ProfilePusher::~ProfilePusher()
{
	{
		std::lock_guard<std::mutex> lock(mutex_);
		stop_ = true;
	}
	wake_.notify_all();
	client_->stop(); // an attempt in progress ends at its next wake-up: now
	thread_.join();
}

std::string ProfilePusher::request_target(const PushItem &item) const
{
	std::string labels;
	if (!hostname_label_.empty())
		labels += "hostname=" + hostname_label_;
	if (item.pid != 0)
		labels += std::string(labels.empty() ? "" : ",") + "pid=" + std::to_string(item.pid);
	if (!item.container_id.empty())
		labels += std::string(labels.empty() ? "" : ",") + "container_id=" + label_value(item.container_id);
	std::string name = options_.app_name + "{" + labels + "}";
	return url_.base_path + "/ingest?name=" + percent_encode(name) + "&from=" + std::to_string(item.from) +
	       "&until=" + std::to_string(item.until) + "&format=pprof&spyName=" + kSpyName;
}

void ProfilePusher::push(PushItem item)
{
	PushItem evicted; // freed outside the lock
	{
		std::lock_guard<std::mutex> lock(mutex_);
		if (stop_) {
			dropped_++;
			return;
		}
		if (queue_.size() >= options_.queue_capacity) {
			evicted = std::move(queue_.front());
			queue_.pop_front();
			dropped_++;
		}
		queue_.push_back(std::move(item));
	}
	wake_.notify_all();
}

bool ProfilePusher::flush(std::chrono::milliseconds timeout)
{
	std::unique_lock<std::mutex> lock(mutex_);
	return drained_.wait_for(lock, timeout, [&] { return queue_.empty() && !in_flight_; });
}

size_t ProfilePusher::queued() const
{
	std::lock_guard<std::mutex> lock(mutex_);
	return queue_.size();
}

std::string ProfilePusher::last_error() const
{
	std::lock_guard<std::mutex> lock(mutex_);
	return last_error_;
}

// Equal jitter: uniform in [d/2, d], d = initial * 2^(failures-1) capped at the maximum.
std::chrono::milliseconds ProfilePusher::backoff(unsigned failures)
{
	int64_t d = options_.initial_backoff.count();
	for (unsigned i = 1; i < failures && d < options_.max_backoff.count(); i++)
		d *= 2;
	d = std::min<int64_t>(d, options_.max_backoff.count());
	if (d <= 1)
		return std::chrono::milliseconds(d);
	std::uniform_int_distribution<int64_t> jitter(d / 2, d);
	return std::chrono::milliseconds(jitter(client_->rng));
}

// One POST, its response read up to the bounds above; true when answered, or why not.
// No proxy from the environment, no redirects, no decompression: what is sent and
// where is what the options say. https verifies the peer and its name (libcurl's
// defaults, never turned off) against the CA file or the system's CAs.
bool ProfilePusher::post(const PushItem &item, PushResponse &r, std::string &why)
{
	CURL *easy = curl_easy_init();
	if (!easy) {
		why = "cannot create a libcurl handle";
		return false;
	}
	bool v6 = url_.host.find(':') != std::string::npos;
	std::string url = std::string(url_.tls ? "https://" : "http://") + (v6 ? "[" + url_.host + "]" : url_.host) +
			  ":" + std::to_string(url_.port) + request_target(item);
	char error[CURL_ERROR_SIZE] = "";
	curl_slist *headers = curl_slist_append(nullptr, (std::string("Content-Type: ") + kContentType).c_str());
	headers = curl_slist_append(headers, "Expect:"); // no 100-continue round trip
	curl_easy_setopt(easy, CURLOPT_URL, url.c_str());
	curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, url_.tls ? "https" : "http");
	if (!options_.auth.ca_file.empty())
		curl_easy_setopt(easy, CURLOPT_CAINFO, options_.auth.ca_file.c_str());
	if (!options_.auth.basic.empty()) {
		curl_easy_setopt(easy, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
		curl_easy_setopt(easy, CURLOPT_USERPWD, options_.auth.basic.c_str());
	}
	if (!options_.auth.bearer_token.empty()) {
		curl_easy_setopt(easy, CURLOPT_HTTPAUTH, CURLAUTH_BEARER);
		curl_easy_setopt(easy, CURLOPT_XOAUTH2_BEARER, options_.auth.bearer_token.c_str());
	}
	curl_easy_setopt(easy, CURLOPT_PATH_AS_IS, 1L); // request_target() encodes
	curl_easy_setopt(easy, CURLOPT_PROXY, "");
	curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(easy, CURLOPT_POST, 1L);
	curl_easy_setopt(easy, CURLOPT_POSTFIELDS, item.bytes.data());
	curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(item.bytes.size()));
	curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, long(options_.connect_timeout.count()));
	curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, long(options_.timeout.count()));
	curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(easy, CURLOPT_HEADERDATA, &r);
	curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(easy, CURLOPT_WRITEDATA, &r);
	curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, error);

	CURLcode rc = CURLE_ABORTED_BY_CALLBACK;
	curl_multi_add_handle(client_->multi, easy);
	for (int running = 1; running && !client_->stopping;) {
		if (curl_multi_perform(client_->multi, &running) != CURLM_OK)
			break;
		int queued;
		while (CURLMsg *m = curl_multi_info_read(client_->multi, &queued))
			if (m->msg == CURLMSG_DONE)
				rc = m->data.result;
		if (running)
			curl_multi_poll(client_->multi, nullptr, 0, 1000, nullptr);
	}
	curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &r.status);
	curl_multi_remove_handle(client_->multi, easy);
	curl_easy_cleanup(easy);
	curl_slist_free_all(headers);
	why = client_->stopping ? "stopped" : error[0] ? error : curl_easy_strerror(rc);
	// A body longer than what is kept ends the transfer, not the answer.
	if (rc == CURLE_OK || (rc == CURLE_WRITE_ERROR && r.body_cut && r.status))
		return true;
	if (r.head_too_large)
		why = "response headers over " + std::to_string(kMaxResponseHead) + " bytes";
	return false;
}

ProfilePusher::Outcome ProfilePusher::attempt(const PushItem &item, std::chrono::milliseconds &retry_after)
{
	PushResponse res;
	std::string why;
	bool answered = post(item, res, why);
	auto fail = [&](Outcome outcome, std::string why) {
		std::lock_guard<std::mutex> lock(mutex_);
		last_error_ = "push to " + options_.url + ": " + std::move(why);
		return outcome;
	};
	if (!answered)
		return fail(Outcome::retry, why);
	int status = int(res.status);
	if (status >= 200 && status < 300)
		return Outcome::sent;
	why = "HTTP " + std::to_string(status);
	std::string body = res.body.substr(0, 200);
	body.erase(std::find(body.begin(), body.end(), '\n'), body.end());
	if (!body.empty())
		why += ": " + body;
	if (!retryable_status(status))
		return fail(Outcome::give_up, why);
	// Retry-After in seconds (the HTTP-date form is ignored).
	const std::string &after = res.retry_after;
	if (!after.empty() && after.size() <= 6 && after.find_first_not_of("0123456789") == std::string::npos)
		retry_after = std::chrono::seconds(std::stoi(after));
	return fail(Outcome::retry, why);
}

// Sends one item with retries; false when stopped meanwhile.
bool ProfilePusher::deliver(const PushItem &item)
{
	for (unsigned failures = 0;;) {
		std::chrono::milliseconds retry_after{0};
		Outcome outcome = attempt(item, retry_after);
		if (outcome == Outcome::sent) {
			sent_++;
			return true;
		}
		if (outcome == Outcome::give_up || ++failures >= options_.max_attempts) {
			failed_++;
			return true;
		}
		auto delay = std::max(backoff(failures), std::min(retry_after, options_.max_backoff));
		retries_++;
		std::unique_lock<std::mutex> lock(mutex_);
		if (wake_.wait_for(lock, delay, [&] { return stop_; }))
			return false;
	}
}

void ProfilePusher::run()
{
	for (;;) {
		PushItem item;
		{
			std::unique_lock<std::mutex> lock(mutex_);
			in_flight_ = false;
			drained_.notify_all();
			wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
			if (stop_)
				break;
			item = std::move(queue_.front());
			queue_.pop_front();
			in_flight_ = true;
		}
		if (!deliver(item))
			break;
	}
	std::lock_guard<std::mutex> lock(mutex_);
	exited_ = true;
	drained_.notify_all();
}

} // namespace usdtprof
