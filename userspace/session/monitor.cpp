#include "session/monitor.h"

#include <bpf/bpf.h>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <sys/resource.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

#include "profile/anomalies.h"
#include "engine/calibration.h"
#include "base/text_escape.h"
#include "engine/call_paths.h"
#include "profile/compensation.h"
#include "engine/engine.h"
#include "session/host.h"
#include "session/interval.h"
#include "session/process_windows.h"
#include "serve/metrics.h"
#include "serve/metrics_server.h"
#include "base/output_file.h"
#include "report/formats.h"
#include "target/process.h"
#include "target/presets.h"
#include "serve/pusher.h"
#include "session/session.h"
#include "session/sinks.h"
#include "session/targets.h"
#include "base/unique_fd.h"

namespace usdtprof {

namespace {

uint64_t process_cpu_ns(int pid)
{
	// The scheduler's run time of all its threads, in ns, the basis of the
	// exit hook's exited_cpu_ns: /proc's utime and stime count 10 ms ticks,
	// so a 100 ms interval of a starved target could read 0 against the
	// probes' measured cost and sample for nothing.
	clockid_t clock;
	timespec ts;
	if (clock_getcpuclockid(pid_t(pid), &clock) == 0 && clock_gettime(clock, &ts) == 0)
		return uint64_t(ts.tv_sec) * 1000000000 + uint64_t(ts.tv_nsec);
	std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
	std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
	size_t close = stat.rfind(')');
	if (close == std::string::npos)
		return 0;
	// Fields after "(comm)": state is field 3; utime and stime are 14 and 15.
	std::istringstream rest(stat.substr(close + 2));
	std::string field;
	uint64_t utime = 0, stime = 0;
	for (int i = 3; i <= 15 && rest >> field; i++) {
		if (i == 14)
			utime = std::stoull(field);
		if (i == 15)
			stime = std::stoull(field);
	}
	return (utime + stime) * (1000000000ull / uint64_t(sysconf(_SC_CLK_TCK)));
}

// Whether dir can be made (its parent is a writable directory) or, if it
// exists, written: checked before anything starts, so that a refusal for
// any other reason leaves nothing behind. Creates nothing.
void check_dir(const std::string &dir)
{
	struct stat st;
	if (stat(dir.c_str(), &st) == 0) {
		if (!S_ISDIR(st.st_mode))
			throw UserError("cannot create " + dir + ": " + strerror(EEXIST));
		if (access(dir.c_str(), W_OK) != 0)
			throw UserError("cannot write " + dir + ": " + strerror(errno));
		return;
	}
	if (errno != ENOENT)
		throw UserError("cannot create " + dir + ": " + strerror(errno));
	std::string parent = std::filesystem::path(dir).lexically_normal().parent_path().string();
	if (parent.empty())
		parent = ".";
	if (access(parent.c_str(), W_OK) != 0)
		throw UserError("cannot create " + dir + ": " + strerror(errno));
}

void make_dir(const std::string &dir)
{
	if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
		throw UserError("cannot create " + dir + ": " + strerror(errno));
	if (access(dir.c_str(), W_OK) != 0)
		throw UserError("cannot write " + dir + ": " + strerror(errno));
}

constexpr const char *kPrefix = "usdtprof-";
// The shortest first window that measures the probes' cost: a few ms of
// clock resolution, the hits of even a slow target.
constexpr double kFirstWindowMin = 0.05; // s
// How often --all looks for processes started since (exec and fork events),
// and checks watched processes that have no pidfd.
constexpr std::chrono::milliseconds kDiscoverEvery{200};

// The soft descriptor limit up to the hard one: probe links and /metrics
// connections must never run out before the caps do.
void raise_descriptor_limit()
{
	rlimit r;
	if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
		r.rlim_cur = r.rlim_max;
		setrlimit(RLIMIT_NOFILE, &r);
	}
}

// What the outputs of a monitor are: interval files, /metrics and pushes.
// Each interval goes to its sinks in turn: the files, /metrics, the push.
struct MonitorOutputs {
	MetricsRegistry metrics;
	std::unique_ptr<MetricsServer> server;
	std::unique_ptr<ProfilePusher> pusher;
	ProfileSinks sinks;

	// health: the monitor's, given to /metrics with each interval.
	MonitorOutputs(const MonitorOptions &o, const MonitorHealth &health)
		: metrics(o.top_n, MetricsRegistry::kDefaultOtherProcesses,
			  o.all || unique_pids(o.target.pids).size() > 1 ? MetricsRegistry::kDefaultPidLabels : 0)
	{
		if (!o.listen.empty()) {
			WebConfig web;
			if (!o.web_config_file.empty()) {
				auto w = read_web_config(o.web_config_file);
				if (!w)
					throw UserError(w.error().message);
				web = std::move(*w);
			}
			auto s = MetricsServer::start(o.listen, metrics, {}, web);
			if (!s)
				throw UserError(s.error().message);
			server = std::move(*s);
			bool v6 = server->host().find(':') != std::string::npos;
			fprintf(stderr, "usdtprof: metrics at %s://%s%s%s:%d/metrics%s\n", server->tls() ? "https" : "http",
				v6 ? "[" : "", server->host().c_str(), v6 ? "]" : "", server->port(),
				web.basic_auth_users.empty() ? "" : " (basic auth)");
		} else if (!o.web_config_file.empty()) {
			throw UserError("--web-config-file is for --listen's /metrics", 2);
		}
		if (!o.push_url.empty()) {
			PusherOptions po;
			po.url = o.push_url;
			po.app_name = o.service;
			po.auth.ca_file = o.push_ca_file;
			auto basic = read_credential(o.push_basic_auth_file, "USDTPROF_PUSH_BASIC_AUTH");
			auto bearer = read_credential(o.push_bearer_token_file, "USDTPROF_PUSH_BEARER_TOKEN");
			for (const auto *c : {&basic, &bearer})
				if (!*c)
					throw UserError(c->error().message);
			po.auth.basic = *basic;
			po.auth.bearer_token = *bearer;
			auto p = ProfilePusher::create(po);
			if (!p)
				throw UserError(p.error().message);
			pusher = std::move(*p);
		}
		sinks.push_back(std::make_unique<IntervalFilesSink>(o.dir, kPrefix,
								    IntervalFileLimits{o.keep, o.max_bytes, o.max_age_s},
								    pusher ? std::set<std::string>{PushSink::kFormat}
									   : std::set<std::string>{}));
		sinks.push_back(std::make_unique<MetricsSink>(metrics, server.get(), health));
		if (pusher)
			sinks.push_back(std::make_unique<PushSink>(*pusher));
	}

	// Limits reached since the last interval, said once each.
	void say_limits()
	{
		for (const auto &sink : sinks)
			sink->say_limits();
	}
};

uint64_t mono_ns(Clock::time_point tp)
{
	return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(tp.time_since_epoch()).count());
}

Clock::time_point at_mono_ns(uint64_t ns) { return Clock::time_point(std::chrono::nanoseconds(ns)); }

Clock::duration to_clock(std::chrono::duration<double> d) { return std::chrono::duration_cast<Clock::duration>(d); }

uint64_t own_cpu_ns()
{
	timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return uint64_t(ts.tv_sec) * 1000000000 + uint64_t(ts.tv_nsec);
}

// One interval's moments (monotonic ns). Intervals are contiguous: each
// begins where the last one ended, the first when the first probe was
// attached, so together they cover every moment a probe could count.
struct Interval {
	uint64_t begin = 0;
	uint64_t window_open = 0;  // probes attached from here...
	uint64_t window_close = 0; // ...to here (0: still open)
	uint64_t finished = 0;     // the interval's data ends here
	int64_t begin_unix = 0;
};

// A monitor run: the target's probes found and attached once (and again for
// each sampling window, to the same open files), then one profile per
// interval from the kernel's totals, until a signal, -d or the target's exit.
class MonitorSession {
public:
	explicit MonitorSession(const MonitorOptions &o);
	void run();

private:
	// Probe hits with the probes' run time, and the context-switch hook's,
	// which runs whether or not probes are attached.
	struct Runs {
		uint64_t probe_ns, hits, switch_ns;
	};
	// What the cost of the probes is measured from: the counters at its start.
	struct CostBaseline {
		uint64_t own_cpu = 0;
		Runs runs{};
		std::map<int, uint64_t> cpu; // per process
		uint64_t exited_cpu = 0;     // of the processes that exited
		std::map<uint32_t, uint64_t> hits; // per process (fair_)
	};

	const std::map<int, ProfileProcess> &processes() const { return session_.processes().seen(); }
	const std::map<int, std::vector<Mapping>> &maps() const { return session_.processes().maps(); }
	// -p's processes all gone (--binary's never are: new ones may start).
	bool target_gone() const
	{
		return !pids_.empty() &&
		       std::none_of(pids_.begin(), pids_.end(), [](int p) { return process_exists(p); });
	}
	Runs run_totals() const;
	std::vector<int> target_pids();
	void discover();
	void note_late_execs(const Interval &iv);
	void forget_gone(const std::set<uint32_t> &dead);
	void pause_for_test();
	void open_window(Interval &iv);
	bool wait(Interval &iv, Clock::time_point end, std::chrono::duration<double> length);
	bool cut_if_over_budget(const Interval &iv);
	uint64_t target_cpu_ns(const std::vector<int> &pids, CostBaseline &base,
			       std::map<int, uint64_t> *per_process = nullptr);
	// An estimate with the figures that decided it.
	struct Cost {
		BudgetEstimate budget;
		uint64_t hits = 0, cpu_ns = 0;
		// fair_: each process's load and next duty (none: nothing learnt), a hit's cost.
		std::vector<ProcessLoad> loads;
		std::map<int, double> duties;
		double hit_ns = 0;
	};
	Cost estimate_cost(const Interval &iv, CostBaseline &base);
	BudgetEstimate next_budget(const Interval &iv, uint64_t *hits);
	void set_duty(const Cost &cost, const char *from);
	void end_interval(Interval &iv, bool stopping);
	PathColumns read_records(std::set<uint32_t> &dead);
	// Whether pid was monitored in the interval: those seen gone before it were not.
	bool monitored(int pid, const std::set<uint32_t> &dead) const
	{
		return !dead.count(uint32_t(pid)) || !gone_before_.count(uint32_t(pid));
	}
	// Every process an interval describes, calls or not: each monitored in
	// it, and each that left by an exec in it (exec_left_), as last known.
	std::vector<std::pair<int, const ProfileProcess *>> described_in(const Interval &iv,
									  const std::set<uint32_t> &dead) const;
	Profile interval_profile(const Interval &iv, IntervalDelta &delta, const std::set<uint32_t> &dead,
				 double attached_share, size_t *names_cut);
	std::vector<ProcessShare> process_shares(const Interval &iv, const std::set<uint32_t> &dead) const;
	void publish(const Interval &iv, Profile &profile, size_t names_cut);

	const MonitorOptions &o_;
	const TargetSpec &t_;
	Engine &engine() { return session_.engine(); }
	const Engine &engine() const { return session_.engine(); }
	std::vector<ProbeRole> custom_;
	std::vector<int> pids_; // -p's processes, each once; none for --binary
	Session session_; // stop signals blocked, SIGHUP too, before the outputs start
	MonitorOutputs outputs_;
	UniqueFd stats_; // the kernel's run time of our programs, for the cost of a hit
	double trap_ns_ = 0;
	std::vector<const Preset *> chosen_;
	std::vector<FoundSite> sites_;
	bool skip_gone_ = false;
	bool attached_now_ = true;
	double site_attach_ns_ = 0; // usdtprof's CPU to attach one site, measured at the start
	std::optional<HostProcesses> host_; // --all's processes
	std::optional<ProcessWindows> fair_; // -p A,B and --all: a window per process
	std::set<uint32_t> gone_before_;     // fair_: the processes seen gone at the last interval's end
	// --all: processes that exec'd a program without probes: no longer profiled, but
	// described in the file of the interval they exec'd in (their share: up to the exec),
	// calls or not; not in an interval that began after their exec.
	struct ExecLeft {
		ProfileProcess process;
		uint64_t exec_ns;
	};
	std::map<int, ExecLeft> exec_left_;
	bool exec_left_in(int pid, const Interval &iv) const
	{
		auto it = exec_left_.find(pid);
		return it != exec_left_.end() && it->second.exec_ns >= iv.begin && !processes().count(pid);
	}

	std::mt19937_64 rng_{std::random_device{}()};
	PathDeltas deltas_;
	// The last interval's paths, their nodes the last profile's: the next read empties
	// them and fills the same pages (Engine::read_paths).
	PathColumns read_buffer_;
	std::array<uint64_t, USDTPROF_ANOM_COUNT> last_anomalies_{};
	MonitorHealth health_;
	CostBaseline last_; // at the end of the last interval
	double duty_ = 1;
	bool first_interval_ = true;
	int64_t unix_offset_ = 0;
};

// What must hold before anything starts; the custom probe roles.
std::vector<ProbeRole> prepare(const MonitorOptions &o)
{
	// The options first (usage errors, exit 2), then the target and the
	// output directory (exit 1): a refusal makes nothing.
	host_presets(o.runtimes); // each --runtime is a preset
	std::vector<ProbeRole> custom = custom_roles(o.target);
	check_target_exists(o.target);
	check_dir(o.dir);
	raise_descriptor_limit();
	return custom;
}

// Signals are blocked before the outputs start: the /metrics server's
// threads inherit the mask, so SIGINT and SIGHUP reach the signalfd.
MonitorSession::MonitorSession(const MonitorOptions &o)
	: o_(o), t_(o.target), custom_(prepare(o)), pids_(unique_pids(o.target.pids)), session_(true),
	  outputs_(o, health_)
{
	// Several processes: each one's hits counted, each one's own window.
	session_.load(t_.max_paths, 0, o.offcpu, false, o.all || pids_.size() > 1);
	if (!pids_.empty())
		session_.watch(pids_); // stops when all have gone
	stats_ = UniqueFd(bpf_enable_stats(BPF_STATS_RUN_TIME));
	auto trap_ns = engine().measure_trap_ns();
	if (!trap_ns)
		throw UserError("cannot measure the probe cost: " + trap_ns.error().message);
	trap_ns_ = *trap_ns;

	if (o.all) {
		// Listening before the scan: no process starts unseen between them.
		host_.emplace(t_, host_presets(o.runtimes), custom_, o.max_processes, session_.files(),
			      session_.processes());
		host_->listen();
		sites_ = host_->discover(0);
		chosen_ = host_->chosen();
		engine().share_tables(host_->profiled());
	} else if (pids_.empty()) {
		AttachPlan plan = plan_attach(t_, 0, false, session_.target_files(t_, 0), custom_);
		chosen_ = std::move(plan.presets);
		sites_ = std::move(plan.sites);
	}
	// Each -p process with the presets its own files have, planned after
	// those before it; each is labelled by its pid in every output.
	for (int p : pids_) {
		AttachPlan plan = plan_attach(t_, p, false, session_.target_files(t_, p), custom_, sites_.size());
		sites_.insert(sites_.end(), plan.sites.begin(), plan.sites.end());
		for (const Preset *preset : plan.presets)
			if (std::find(chosen_.begin(), chosen_.end(), preset) == chosen_.end())
				chosen_.push_back(preset);
	}
	// Processes may go before a window's attach: all but the last of -p's.
	skip_gone_ = session_.processes().binary() != nullptr || pids_.size() > 1 || host_;
	if (host_ || pids_.size() > 1)
		fair_.emplace(session_, sites_);
	timespec before, after;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &before);
	session_.attach(sites_, skip_gone_);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &after);
	// A sampling window's cost before one is measured: this attach's per site.
	site_attach_ns_ = (double(after.tv_sec - before.tv_sec) * 1e9 + double(after.tv_nsec - before.tv_nsec)) /
			  double(std::max<size_t>(1, engine().attached_sites()));
	if (fair_)
		fair_->set_site_cost(site_attach_ns_);
	if (host_) {
		host_->say_found(true);
		// No process with probes yet: the intervals start now all the same.
		if (!engine().start_ns())
			engine().set_start_ns(mono_ns(Clock::now()));
	}
	session_.calibrate(o.offcpu, false); // measured once: every interval's profile carries it
	// Once everything held (the options, the outputs' credentials and
	// port, the targets and their probes): a refusal makes nothing.
	make_dir(o.dir);
	std::string what;
	for (int p : pids_) {
		session_.processes().add(p);
		what += (what.empty() ? "" : ", ") + pid_text(p);
	}
	log_line("monitoring %s: %zu probe sites, a hit costs %.0f ns (trap) plus the program; budget %.2g%%, "
		 "every %.3g s into %s; Ctrl-C to stop",
		 host_ ? ("every process of the host with probes of " + preset_list(host_presets(o.runtimes)) + " (" +
			  std::to_string(host_->profiled()) + " now, at most " + std::to_string(o.max_processes) + ")")
				 .c_str()
		 : !pids_.empty() ? what.c_str()
				  : ("every process of " + t_.binary).c_str(),
		 engine().attached_sites(), trap_ns_, o.budget * 100, o.interval_s, o.dir.c_str());
	last_.own_cpu = own_cpu_ns();
	last_.runs = run_totals();
	last_.exited_cpu = engine().exited_cpu_ns();
	for (int p : target_pids())
		last_.cpu[p] = process_cpu_ns(p);
	unix_offset_ = unix_now_ns() - int64_t(mono_ns(Clock::now()));
}

MonitorSession::Runs MonitorSession::run_totals() const
{
	auto [entry_ns, entry_runs] = engine().run_stats("usdt_entry");
	auto [exit_ns, exit_runs] = engine().run_stats("usdt_exit");
	auto [switch_ns, switch_runs] = engine().run_stats("track_offcpu");
	return Runs{entry_ns + exit_ns, entry_runs + exit_runs, switch_ns};
}

// --all: a process that exec'd after this interval's last look for processes
// (in next_budget) and before its end was attached up to its exec only: its
// share says so, though its exec is handled (planned again, or described as
// gone) at the next interval's look.
//
// The exec program reads the clock and then commits its event, with preemption
// off (a tracepoint): an exec timed before the end may still be uncommitted at
// the end. Reading no sooner than kExecCommitGrace after the end takes it too,
// unless that CPU stalled longer in between (a hypervisor's pause).
constexpr std::chrono::milliseconds kExecCommitGrace{2};

void MonitorSession::note_late_execs(const Interval &iv)
{
	if (!host_ || !fair_)
		return;
	std::this_thread::sleep_until(at_mono_ns(iv.finished) + kExecCommitGrace);
	for (const ProcessStart &exec : host_->execs_unread())
		if (exec.ns <= iv.finished)
			fair_->exec(exec.pid, exec.ns);
}

// Processes gone, their last interval written: their names, attach times,
// windows and sites go (their paths went with the interval's deltas).
void MonitorSession::forget_gone(const std::set<uint32_t> &dead)
{
	for (uint32_t tgid : dead) {
		engine().delete_names(tgid);
		engine().forget_attach(int(tgid));
		if (BinaryProcesses *binary = session_.processes().binary())
			binary->forget(int(tgid));
		if (host_)
			host_->forget(int(tgid));
		if (fair_) {
			fair_->forget(int(tgid));
			engine().forget_process(int(tgid));
			last_.hits.erase(tgid);
		}
		std::erase_if(sites_, [&](const FoundSite &f) { return f.pid == int(tgid); });
	}
}

// USDTPROF_TEST_END_PAUSE_MS: e2e tests widen the moment between an
// interval's last look for processes and its end, to put an exec there.
void MonitorSession::pause_for_test()
{
	static const int ms = [] {
		const char *v = getenv("USDTPROF_TEST_END_PAUSE_MS");
		return v ? atoi(v) : 0;
	}();
	if (ms > 0) {
		log_line("test: the interval ends in %d ms", ms);
		usleep(useconds_t(ms) * 1000);
	}
}

// --all: the processes started since the last look (exec and fork events)
// get their sites, attached now if the window is open, else at its next open.
void MonitorSession::discover()
{
	std::vector<FoundSite> more = host_->discover(sites_.size());
	// A process that exec'd runs another program: its old probes (links,
	// window, hits) go, its new program's sites come, if it has any.
	for (const ProcessStart &exec : host_->take_execs()) {
		int pid = exec.pid;
		engine().forget_process(pid);
		if (fair_) // its old program's probes were attached up to the exec
			fair_->exec(pid, exec.ns);
		last_.hits.erase(uint32_t(pid));
		// Found and exec'd in one batch of events: its sites are in more, not yet attached.
		std::erase_if(sites_, [&](const FoundSite &f) { return f.pid == pid; });
		std::erase_if(more, [&](const FoundSite &f) { return f.pid == pid; });
		auto described = processes().find(pid); // replan forgets it
		std::optional<ProfileProcess> before;
		if (described != processes().end())
			before = described->second;
		std::vector<FoundSite> again = host_->replan(pid, sites_.size() + more.size());
		if (again.empty() && before)
			exec_left_[pid] = {*before, exec.ns};
		more.insert(more.end(), again.begin(), again.end());
	}
	if (more.empty())
		return;
	if (attached_now_) {
		std::set<int> pids;
		for (const FoundSite &f : more)
			pids.insert(f.pid);
		// A function of theirs running now (entered before the attach) is charged from now on.
		for (int pid : pids)
			engine().note_attach(pid);
		session_.attach(more, true);
		// Each one's window opens now: its share of the interval is what is left of it.
		uint64_t attached = mono_ns(Clock::now());
		if (fair_)
			for (int pid : pids)
				fair_->found(pid, attached);
	}
	host_->say_found(attached_now_);
	sites_.insert(sites_.end(), more.begin(), more.end());
	chosen_ = host_->chosen();
	engine().share_tables(host_->profiled());
}

std::vector<int> MonitorSession::target_pids()
{
	if (host_) {
		discover();
		std::vector<int> alive;
		for (int p : host_->pids())
			if (process_exists(p))
				alive.push_back(p);
		return alive;
	}
	if (!pids_.empty()) {
		std::vector<int> alive;
		for (int p : pids_)
			if (process_exists(p))
				alive.push_back(p);
		return alive;
	}
	// Processes started since the last scan get their libraries attached,
	// for each of them only (while the window is open).
	session_.attach_new_processes(t_, chosen_, custom_, sites_, attached_now_);
	std::vector<int> pids;
	for (const auto &[p, process] : processes())
		if (process_exists(p))
			pids.push_back(p);
	return pids;
}

// Attached before the window opens: the window is all probing. A target
// that exits meanwhile ends the monitor after this interval.
void MonitorSession::open_window(Interval &iv)
{
	if (attached_now_ || target_gone())
		return;
	try {
		session_.attach(sites_, skip_gone_);
	} catch (const UserError &) {
		if (!target_gone())
			throw;
	}
	iv.window_open = engine().open_window();
	attached_now_ = true;
}

// How long the first interval keeps every probe attached before their cost
// is estimated: what the budget would allow of the interval, at most half of
// it, but long enough for the clocks and counters to mean something.
std::chrono::duration<double> first_window(std::chrono::duration<double> length, double budget)
{
	return std::min(length / 2, std::max(length * budget, std::chrono::duration<double>(kFirstWindowMin)));
}

// Sleeps to the interval's end, closing a sampling window on the way (and,
// in an interval with every probe attached, checking their cost as it goes).
// Returns whether to stop (a signal, or the target exited).
bool MonitorSession::wait(Interval &iv, Clock::time_point end, std::chrono::duration<double> length)
{
	// Checks often enough to catch a load as it comes, without their reads
	// costing more than the probes: 20 an interval; the first one sooner.
	auto step = std::max(first_window(length, o_.budget), length / 20);
	auto first = first_interval_ ? first_window(length, o_.budget) : step;
	bool whole = fair_ ? fair_->any_whole() : duty_ == 1;
	auto measured = whole && attached_now_ ? Clock::now() + to_clock(first) : Clock::time_point::max();
	first_interval_ = false;
	for (;;) {
		auto window_end = duty_ < 1 && attached_now_ ? at_mono_ns(iv.window_open) + to_clock(length * duty_) : end;
		if (fair_)
			window_end = std::min(window_end, fair_->next_close(length));
		auto until = std::min({window_end, end, measured});
		WaitPlan plan{until, kDiscoverEvery, {}};
		if (host_)
			plan.tick = [this] {
				discover();
				return kDiscoverEvery;
			};
		Wake w = session_.wait(plan);
		if (w == Wake::Reopen) {
			make_dir(o_.dir);
			log_line("SIGHUP: outputs reopened");
			continue;
		}
		if (w == Wake::Stop || w == Wake::TargetExited)
			return true;
		if (until == measured && until < std::min(window_end, end)) {
			measured = cut_if_over_budget(iv) ? Clock::time_point::max() : Clock::now() + to_clock(step);
			continue;
		}
		if (until == end || !attached_now_)
			return false;
		if (fair_) {
			fair_->close_due(length);
			continue;
		}
		// The sampling window closes: frames open now are counted up to now.
		auto closed = engine().close_window();
		if (!closed)
			throw UserError(closed.error().message);
		iv.window_close = *closed;
		attached_now_ = false;
	}
}

// An interval with every probe attached (the first, their cost unknown; one
// after a quiet one, the load gone or not yet come) cannot wait for its end
// to learn their cost: a whole interval of pgbench's load cost 1.2-1.3x its
// CPU, at every start. Its cost so far is estimated as an interval's is; if
// over budget, the rest of the interval keeps the probes only for the share
// the budget allows (true). The interval's own estimate, at its end, still
// covers all of it. Within budget (or no hit), it is checked again (false).
bool MonitorSession::cut_if_over_budget(const Interval &iv)
{
	CostBaseline from = last_;
	Cost cost = estimate_cost(iv, from);
	if (fair_) { // each process's window is cut alone; the others' costs are checked on
		if (cost.hits)
			set_duty(cost, "from now");
		return !fair_->any_whole();
	}
	if (cost.hits == 0 || cost.budget.next_duty == 1)
		return false;
	set_duty(cost, "from now");
	return true;
}

// The target's CPU time since the last call: processes alive now from their
// CPU clocks; those that exited from the kernel, less what was read of them
// before.
uint64_t MonitorSession::target_cpu_ns(const std::vector<int> &pids, CostBaseline &base,
				      std::map<int, uint64_t> *per_process)
{
	uint64_t exited_cpu = engine().exited_cpu_ns(), cpu = exited_cpu - base.exited_cpu;
	base.exited_cpu = exited_cpu;
	for (auto it = base.cpu.begin(); it != base.cpu.end();)
		if (!process_exists(it->first)) {
			cpu -= std::min(cpu, it->second);
			it = base.cpu.erase(it);
		} else {
			++it;
		}
	for (int p : pids) {
		uint64_t now_cpu = process_cpu_ns(p), gained = now_cpu - std::min(now_cpu, base.cpu[p]);
		cpu += gained;
		base.cpu[p] = now_cpu;
		if (per_process)
			(*per_process)[p] = gained;
	}
	return cpu;
}

// The cost of the hits since base against the target's CPU time since
// then; base moves to now.
MonitorSession::Cost MonitorSession::estimate_cost(const Interval &iv, CostBaseline &base)
{
	Cost cost;
	std::vector<int> pids = target_pids();
	Runs runs = run_totals();
	std::map<int, uint64_t> cpu_of;
	uint64_t cpu = cost.cpu_ns = target_cpu_ns(pids, base, &cpu_of);
	uint64_t measured = mono_ns(Clock::now());
	uint64_t attached_until = iv.window_close ? iv.window_close : attached_now_ ? measured : iv.window_open;
	double measured_share = std::clamp(double(attached_until - iv.window_open) /
						   double(std::max<uint64_t>(1, measured - iv.begin)), 0.0, 1.0);
	uint64_t own_cpu = own_cpu_ns();
	// The span measured, a share of an interval: a window's cost in it.
	double span_share = double(measured - std::min(measured, iv.begin)) / (o_.interval_s * 1e9);
	cost.hits = runs.hits - base.runs.hits;
	cost.budget = estimate_budget(
		{cost.hits, trap_ns_, cpu, measured_share, double(runs.probe_ns - base.runs.probe_ns),
		 double(runs.switch_ns - base.runs.switch_ns) + double(own_cpu - base.own_cpu),
		 2 * site_attach_ns_ * double(engine().attached_sites()) * span_share},
		o_.budget, o_.min_duty);
	if (fair_) {
		cost.loads = fair_->loads(cpu_of, iv.begin, measured, span_share, base.hits);
		// The programs' run time per hit since the start: an interval's few
		// hits (a sampled one's) would let one slow run (preempted) decide.
		cost.hit_ns = trap_ns_ + (runs.hits ? double(runs.probe_ns) / double(runs.hits) : 0);
		cost.duties = fair_duties(cost.loads, cost.hit_ns, cost.budget.probe_share, o_.min_duty);
	}
	base.own_cpu = own_cpu;
	base.runs = runs;
	return cost;
}

// The cost of this interval's hits against the target's CPU time sets the
// next window.
BudgetEstimate MonitorSession::next_budget(const Interval &iv, uint64_t *hits)
{
	Cost cost = estimate_cost(iv, last_);
	set_duty(cost, "from the next interval");
	*hits = cost.hits;
	return cost.budget;
}

// Sampling starting or ending is said once each time, with the figures that
// decided it.
void MonitorSession::set_duty(const Cost &cost, const char *from)
{
	if (fair_)
		return fair_->set_duties(cost.duties, cost.loads, cost.hit_ns, o_.budget, from);
	const BudgetEstimate &budget = cost.budget;
	unsigned long long hits = cost.hits;
	double cpu_s = double(cost.cpu_ns) / 1e9;
	if (budget.next_duty < 1 && duty_ == 1)
		log_line("sampling %s: estimated probe cost %.2f%% of the target's CPU (%llu hits, %.0f ns trap each, "
			 "%.3f s target CPU) is over the budget %.2g%%: probes attached for %.0f%% of each interval",
			 from, budget.overhead * 100, hits, trap_ns_, cpu_s, o_.budget * 100,
			 budget.next_duty * 100);
	else if (budget.next_duty == 1 && duty_ < 1)
		log_line("sampling ends: estimated probe cost %.2f%% of the target's CPU (%llu hits, %.0f ns trap each, "
			 "%.3f s target CPU) is within the budget %.2g%%: probes attached for %.0f%% of each interval",
			 budget.overhead * 100, hits, trap_ns_, cpu_s, o_.budget * 100,
			 budget.next_duty * 100);
	duty_ = budget.next_duty;
}

// Where the interval's data ends.
void MonitorSession::end_interval(Interval &iv, bool stopping)
{
	if (stopping) {
		// No hit counts after the stop; open frames are charged up to it.
		iv.finished = engine().stop();
		if (auto r = engine().flush_open_frames(); !r)
			throw UserError(r.error().message);
	} else if (attached_now_ && duty_ < 1 && !target_gone()) {
		// The next interval samples: this one ends with its window, whose
		// close adds every thread's cached calls to the map. Left in a
		// cache until the thread's next exit, they would land in the next
		// window's interval, beyond the time it was attached.
		auto closed = engine().close_window();
		if (!closed)
			throw UserError(closed.error().message);
		iv.window_close = iv.finished = *closed;
		attached_now_ = false;
	} else if (attached_now_) {
		// The processes sampled in the next interval: this one ends with their windows.
		if (fair_ && !target_gone())
			fair_->close_sampled();
		// Threads add their path caches to the map at their next exit: a
		// moment for busy ones; idle ones are in a later interval. The
		// calls a busy thread adds then ended before the bump: the
		// interval ends there.
		iv.finished = mono_ns(Clock::now());
		engine().bump_flush_epoch();
		usleep(20000);
	}
}

// What the map holds now. A process seen gone before a read has added
// everything it will (its threads' exits flushed their stacks), so its paths
// and names can be forgotten after that read; one that dies after the read
// is read again, or its last calls would be lost (or, its names deleted,
// reported unnamed).
PathColumns MonitorSession::read_records(std::set<uint32_t> &dead)
{
	if (session_.processes().binary() || pids_.size() > 1 || host_)
		for (const auto &[p, process] : processes())
			if (!process_exists(p))
				dead.insert(uint32_t(p));
	PathColumns records = std::move(read_buffer_);
	engine().read_paths(records);
	bool died = false;
	std::set<uint32_t> alive; // each process looked at once (a read of /proc/PID/stat)
	for (const PathNode &r : records.nodes)
		if (uint32_t tgid = uint32_t(r.pid); !dead.count(tgid) && !alive.count(tgid)) {
			if (process_exists(int(tgid)))
				alive.insert(tgid);
			else
				died = dead.insert(tgid).second;
		}
	if (died)
		engine().read_paths(records);
	return records;
}

Profile MonitorSession::interval_profile(const Interval &iv, IntervalDelta &delta,
					 const std::set<uint32_t> &dead, double attached_share, size_t *names_cut)
{
	Profile profile;
	profile.duration_ns = iv.finished - iv.begin;
	profile.start_unix_ns = iv.begin_unix;
	profile.stop_unix_ns = iv.begin_unix + int64_t(profile.duration_ns);
	profile.sampled_fraction = std::max(attached_share, 1e-6);
	std::set<uint32_t> tgids;
	for (const PathNode &r : delta.paths.nodes)
		tgids.insert(uint32_t(r.pid));
	// Those with calls first, then every other process monitored in the
	// interval: one sampled whose window caught no call, or idle, is there
	// with its share, apart from one not monitored (absent).
	std::vector<uint32_t> described(tgids.begin(), tgids.end());
	for (auto [pid, p] : described_in(iv, dead))
		if (!tgids.count(uint32_t(pid)))
			described.push_back(uint32_t(pid));
	auto comms = engine().read_process_comms();
	for (uint32_t tgid : described) {
		auto known = processes().find(int(tgid));
		auto left = exec_left_.find(int(tgid));
		profile.processes.push_back(known != processes().end() ? known->second
					    : left != exec_left_.end() ? left->second.process
									: describe_process(int(tgid), comms));
		if (fair_) // each its own window; the profile's share is the smallest
			profile.processes.back().sampled_fraction =
				std::max(fair_->attached_share(int(tgid), iv.begin, iv.finished), 1e-6);
	}
	if (fair_) {
		profile.sampled_fraction = 1;
		for (const ProfileProcess &p : profile.processes)
			profile.sampled_fraction = std::min(profile.sampled_fraction, p.sampled_fraction);
	}
	apply_titles(profile.processes, engine().read_process_titles());
	*names_cut = session_.add_paths(profile, delta.paths, session_.namer(maps()));
	// The kernel's counters are cumulative; an interval shows its own.
	auto anomalies = engine().anomalies();
	for (int a = 0; a < USDTPROF_ANOM_COUNT; a++)
		profile.anomalies[anomaly_name(a)] = anomalies[a] - last_anomalies_[a];
	last_anomalies_ = anomalies;
	return profile;
}

// fair_: each process profiled in the interval (those gone before it left
// out) and the share of it its probes were attached, as its interval file
// says; for /metrics.
std::vector<ProcessShare> MonitorSession::process_shares(const Interval &iv, const std::set<uint32_t> &dead) const
{
	std::vector<ProcessShare> out;
	if (!fair_)
		return out;
	for (auto [pid, p] : described_in(iv, dead))
		out.push_back(
			{pid, p->comm, p->container_id, std::max(fair_->attached_share(pid, iv.begin, iv.finished), 1e-6)});
	return out;
}

std::vector<std::pair<int, const ProfileProcess *>> MonitorSession::described_in(const Interval &iv,
										  const std::set<uint32_t> &dead) const
{
	std::vector<std::pair<int, const ProfileProcess *>> out;
	for (const auto &[pid, p] : processes())
		if (monitored(pid, dead))
			out.emplace_back(pid, &p);
	for (const auto &[pid, left] : exec_left_)
		if (exec_left_in(pid, iv))
			out.emplace_back(pid, &left.process);
	return out;
}

// The container_id label of a push: -p's process's container; for --binary,
// the one container all the processes seen share, if they do.
std::string pushed_container(const std::map<int, ProfileProcess> &processes)
{
	std::set<std::string> ids;
	for (const auto &[pid, p] : processes)
		ids.insert(p.container_id.substr(0, 12));
	return ids.size() == 1 ? *ids.begin() : std::string();
}

// The interval's files (the profile keeps the measured times; the exports
// and metrics are compensated), /metrics and the push.
void MonitorSession::publish(const Interval &iv, Profile &profile, size_t names_cut)
{
	std::string stamp = interval_stamp(iv.begin_unix);
	if (names_cut)
		fprintf(stderr, "usdtprof: interval %s: %zu function names or locations longer than %zu bytes were cut\n",
			stamp.c_str(), names_cut, kMaxNameBytes);
	if (auto trim = trim_profile(profile, o_.max_interval_bytes))
		fprintf(stderr,
			"usdtprof: interval %s: profile of %llu bytes over --max-interval-bytes %llu: kept the %zu "
			"heaviest of %zu call paths\n",
			stamp.c_str(), (unsigned long long)trim->bytes_before,
			(unsigned long long)o_.max_interval_bytes, trim->paths_kept, trim->paths_before);
	// The counters as the profile read them: cumulative.
	health_.anomalies = 0;
	for (int a = 0; a < USDTPROF_ANOM_COUNT; a++)
		if (a != USDTPROF_ANOM_DROPPED_NS && a != USDTPROF_ANOM_LOST_EVENTS)
			health_.anomalies += last_anomalies_[a];
	health_.dropped_paths = last_anomalies_[USDTPROF_ANOM_AGG_FULL];
	health_.intervals++;
	ProfileOutput out{profile, iv.begin_unix};
	if (outputs_.pusher) {
		out.pid = pids_.size() == 1 ? int32_t(pids_.front()) : 0; // several: each sample's pid label
		out.container_id = pushed_container(processes());
	}
	write_all(outputs_.sinks, out);
}

void MonitorSession::run()
{
	uint64_t boundary = engine().start_ns();
	// -d counts from the first attach, where the first interval begins, not
	// from after the calibration (0.1-0.4 s under load): the intervals
	// together last -d, split as -i says.
	auto deadline = o_.duration_s > 0 ? at_mono_ns(boundary) + to_clock(std::chrono::duration<double>(o_.duration_s))
					  : Clock::time_point::max();
	std::uniform_real_distribution<double> jitter(-o_.jitter, o_.jitter);
	for (bool stopping = false; !stopping;) {
		auto length = std::chrono::duration<double>(o_.interval_s * (1 + jitter(rng_)));
		Interval iv;
		iv.begin = iv.window_open = boundary;
		open_window(iv);
		if (fair_)
			fair_->begin(iv.begin);
		iv.begin_unix = int64_t(iv.begin) + unix_offset_;
		auto end = at_mono_ns(iv.begin) + to_clock(length);
		if (deadline - end < to_clock(length / 2))
			end = deadline; // no sliver of an interval at the end
		stopping = wait(iv, end, length) || Clock::now() >= deadline;
		uint64_t hits = 0;
		BudgetEstimate budget = next_budget(iv, &hits);
		pause_for_test();
		end_interval(iv, stopping);
		std::set<uint32_t> dead;
		PathColumns records = read_records(dead);
		if (!iv.finished)
			iv.finished = mono_ns(Clock::now()); // probes detached: nothing counted after the window
		note_late_execs(iv);
		boundary = iv.finished;
		uint64_t attached_ns = iv.window_close ? iv.window_close - iv.window_open
				       : attached_now_ ? iv.finished - iv.window_open : 0;
		double attached_share =
			fair_ ? fair_->smallest_share(iv.begin, iv.finished)
			      : std::clamp(double(attached_ns) / double(std::max<uint64_t>(1, iv.finished - iv.begin)), 0.0, 1.0);

		IntervalDelta delta = deltas_.next(std::move(records), [&](uint32_t tgid) { return !dead.count(tgid); });
		size_t names_cut = 0;
		Profile profile = interval_profile(iv, delta, dead, attached_share, &names_cut);
		health_.probe_hits += hits;
		health_.duty_cycle = attached_share;
		health_.process_shares = process_shares(iv, dead);
		gone_before_ = dead;
		exec_left_.clear(); // described in the interval of their exec only
		health_.estimated_overhead_ratio = budget.overhead;
		health_.profiled_cpu_ns += budget.target_cpu_ns;
		health_.probe_cost_ns += budget.probe_ns;
		health_.fixed_cost_ns += budget.fixed_ns;
		publish(iv, profile, names_cut);
		// What is reported of processes that are gone is forgotten: the maps stay bounded.
		engine().delete_paths(delta.forget, delta.forget_slots);
		// The read's memory, and the profile's nodes, for the next one.
		read_buffer_ = std::move(delta.paths);
		read_buffer_.nodes = std::move(profile.nodes);
		read_buffer_.dists = std::move(profile.dists);
		forget_gone(dead);
		// A target gone by now may have counted calls since the read: one
		// more (last) interval reads them.
		if (stopping && target_gone())
			log_line(pids_.size() == 1 ? "%s exited" : "%s: all exited",
				 pids_.size() == 1 ? pid_text(pids_.front()).c_str() : "the processes of -p");
	}
	log_line("stopped after %llu intervals, %llu probe hits", (unsigned long long)health_.intervals,
		 (unsigned long long)health_.probe_hits);
	if (host_ && host_->refused())
		log_line("--all: %zu processes with probes were not profiled: --max-processes %zu was reached",
			 host_->refused(), o_.max_processes);
	if (outputs_.pusher) {
		outputs_.pusher->flush(std::chrono::milliseconds(2000));
		outputs_.say_limits(); // what the last pushes met
	}
}

} // namespace

int monitor(const MonitorOptions &o)
{
	MonitorSession session(o);
	session.run();
	return 0;
}

} // namespace usdtprof
