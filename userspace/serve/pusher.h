// Pushes each interval's pprof profile to a Pyroscope-compatible ingest
// endpoint (POST /ingest?format=pprof) from a background thread, with a
// bounded queue and retries. See docs/monitoring.md.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "base/result.h"

namespace usdtprof {

struct PushItem {
	std::string bytes; // the profile: pprof, gzip'd (sent as is)
	int64_t from = 0;  // unix seconds, start of the interval
	int64_t until = 0; // unix seconds, end of the interval
	int32_t pid = 0;   // the "pid" label; 0: none
	std::string container_id; // the "container_id" label (12 hex digits); "": none
};

struct PushResponse; // the bounded part of an endpoint's answer that is kept

// How the pusher proves who it is and checks whom it talks to. Credentials never come
// from the command line (every user reads it in /proc): read_credential() takes them from
// a file or the environment.
struct PushAuth {
	std::string ca_file;      // PEM CA certificates an https endpoint must chain to; "": the system's
	std::string basic;        // "USER:PASSWORD" for HTTP basic auth; "": none
	std::string bearer_token; // "Authorization: Bearer TOKEN"; "": none
};

struct PusherOptions {
	std::string url;                 // http[s]://HOST[:PORT][/BASE/PATH]
	PushAuth auth;
	std::string app_name = "usdtprof"; // Pyroscope application (service) name: [A-Za-z0-9_.-]+
	std::string hostname;            // the "hostname" label; empty: gethostname()
	size_t queue_capacity = 16;      // items waiting; when full the oldest is dropped
	unsigned max_attempts = 5;       // per item, the first one included
	std::chrono::milliseconds initial_backoff{500};
	std::chrono::milliseconds max_backoff{30000};
	std::chrono::milliseconds connect_timeout{3000};
	std::chrono::milliseconds timeout{10000}; // a whole attempt: connect, send, the response
};

struct PushUrl {
	bool tls = false; // https://
	std::string host; // without brackets for IPv6
	int port = 80;    // 443 for https
	std::string base_path; // "" or "/a/b" (no trailing slash)
};

// http:// or https://; one clear line for anything else.
Result<PushUrl> parse_push_url(const std::string &url);

// A credential: the first line of file (when not empty: at most 4 KiB, not readable or
// writable by other users), else the environment variable env_name, else "". One clear
// line for an unreadable, too open, empty or multi-line credential, or one with control
// characters (they would end the header it is sent in).
Result<std::string> read_credential(const std::string &file, const char *env_name);

class ProfilePusher {
public:
	// Validates the options (URL, app name, capacity, attempts) and starts the sender thread.
	static Result<std::unique_ptr<ProfilePusher>> create(PusherOptions options);
	// Stops at once: abandons the queue and a pending backoff, aborts a
	// request in progress (waiting at most connect_timeout for a connection
	// being made) and joins the thread.
	~ProfilePusher();
	ProfilePusher(const ProfilePusher &) = delete;
	ProfilePusher &operator=(const ProfilePusher &) = delete;

	// Never blocks: queues the item, dropping (and counting) the oldest
	// waiting one when the queue is full.
	void push(PushItem item);
	// Waits until nothing is queued or being sent, at most timeout; true when drained.
	bool flush(std::chrono::milliseconds timeout);

	uint64_t sent() const { return sent_; }       // accepted by the endpoint (2xx)
	uint64_t dropped() const { return dropped_; } // pushed out of a full queue
	uint64_t failed() const { return failed_; }   // given up: attempts exhausted, or a 4xx
	uint64_t retries() const { return retries_; } // attempts after a failed one
	size_t queued() const;                        // items waiting (never above the capacity)
	std::string last_error() const;               // the last failed attempt, "" if none

	// The request target for an item: BASE/ingest?name=APP{hostname=..,pid=..}&from=..&until=..&format=pprof&spyName=usdtprof
	std::string request_target(const PushItem &item) const;

private:
	enum class Outcome { sent, retry, give_up };

	ProfilePusher(PusherOptions options, PushUrl url);
	void run();
	bool deliver(const PushItem &item);
	bool post(const PushItem &item, PushResponse &response, std::string &why);
	Outcome attempt(const PushItem &item, std::chrono::milliseconds &retry_after);
	std::chrono::milliseconds backoff(unsigned failures);

	PusherOptions options_;
	PushUrl url_;
	std::string hostname_label_;

	mutable std::mutex mutex_;
	std::condition_variable wake_;    // the sender: an item or stop
	std::condition_variable drained_; // flush(): queue empty and nothing in flight; exited_
	std::deque<PushItem> queue_;
	bool in_flight_ = false;
	bool stop_ = false;
	bool exited_ = false; // the sender thread is done
	std::string last_error_;

	std::atomic<uint64_t> sent_{0}, dropped_{0}, failed_{0}, retries_{0};

	struct Client;
	std::unique_ptr<Client> client_;
	std::thread thread_;
};

} // namespace usdtprof
