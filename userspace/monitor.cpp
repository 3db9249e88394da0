#include "monitor.h"

#include <bpf/bpf.h>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <poll.h>
#include <random>
#include <set>
#include <sstream>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "anomalies.h"
#include "calibration.h"
#include "text_escape.h"
#include "call_paths.h"
#include "compensation.h"
#include "engine.h"
#include "interval.h"
#include "metrics.h"
#include "metrics_server.h"
#include "output_file.h"
#include "formats.h"
#include "process.h"
#include "pusher.h"
#include "targets.h"
#include "unique_fd.h"

namespace usdtprof {

namespace {

using Clock = std::chrono::steady_clock;

enum class Wake { Deadline, Stop, Reopen };

// Waits for the deadline or a signal: SIGINT/SIGTERM stop, SIGHUP reopens.
class Signals {
public:
	Signals()
	{
		sigset_t set;
		sigemptyset(&set);
		for (int s : {SIGINT, SIGTERM, SIGHUP})
			sigaddset(&set, s);
		sigprocmask(SIG_BLOCK, &set, nullptr);
		fd_ = UniqueFd(signalfd(-1, &set, SFD_CLOEXEC));
	}
	Wake wait_until(Clock::time_point deadline, int pid)
	{
		for (;;) {
			if (pid && !process_exists(pid))
				return Wake::Stop;
			// Rounded up: waking before the deadline would start a sliver of an interval.
			auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
			if (left <= 0)
				return Wake::Deadline;
			pollfd p = {fd_.get(), POLLIN, 0};
			if (poll(&p, 1, int(std::min<int64_t>(left, 200))) == 1) {
				signalfd_siginfo info;
				if (read(fd_.get(), &info, sizeof(info)) == sizeof(info))
					return info.ssi_signo == SIGHUP ? Wake::Reopen : Wake::Stop;
			}
			if (pid && !process_exists(pid))
				return Wake::Stop;
		}
	}

private:
	UniqueFd fd_;
};

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

std::string stamp(int64_t unix_ns)
{
	time_t secs = unix_ns / 1000000000;
	tm t;
	gmtime_r(&secs, &t);
	char buf[48];
	size_t n = strftime(buf, sizeof buf, "%Y%m%dT%H%M%S", &t);
	// No dot: retention groups an interval's files by what precedes the first one.
	snprintf(buf + n, sizeof buf - n, "%03dZ", int(unix_ns / 1000000 % 1000));
	return buf;
}

void make_dir(const std::string &dir)
{
	if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
		throw UserError("cannot create " + dir + ": " + strerror(errno));
	if (access(dir.c_str(), W_OK) != 0)
		throw UserError("cannot write " + dir + ": " + strerror(errno));
}

constexpr const char *kPrefix = "usdtprof-";

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

// The extensions of the files monitor writes per interval (formats.h).
std::vector<std::string> monitor_extensions()
{
	std::vector<std::string> out;
	for (const Format &f : formats())
		if (f.uses & kUseMonitor)
			out.push_back(f.extension);
	return out;
}

// Writes BASE.<extension> for every format monitor writes; returns the pprof
// one, for the pusher.
std::string write_interval_files(const std::string &base, const Profile &measured)
{
	std::string pprof;
	for (const Format &f : formats()) {
		if (!(f.uses & kUseMonitor))
			continue;
		std::string out = f.profile(measured, ReportOptions{});
		// Names usdtprof chose: replaced, never followed or written through.
		if (auto r = write_file_atomically(base + f.extension, out); !r)
			log_line("%s", r.error().message.c_str());
		if (f.name == std::string("pprof"))
			pprof = std::move(out);
	}
	return pprof;
}

} // namespace

int monitor(const MonitorOptions &o)
{
	const RecordOptions &t = o.target;
	std::vector<ProbeRole> custom = custom_roles(t);
	if (t.pid && !process_exists(t.pid))
		throw UserError("no process with pid " + std::to_string(t.pid));
	if (!t.binary.empty() && access(t.binary.c_str(), R_OK) != 0)
		throw UserError("cannot read " + t.binary + ": " + strerror(errno));
	make_dir(o.dir);
	raise_descriptor_limit();
	Signals signals;
	MetricsRegistry metrics(o.top_n);
	std::unique_ptr<MetricsServer> server;
	if (!o.listen.empty()) {
		auto s = MetricsServer::start(o.listen, metrics);
		if (!s)
			throw UserError(s.error().message);
		server = std::move(*s);
		bool v6 = server->host().find(':') != std::string::npos;
		fprintf(stderr, "usdtprof: metrics at http://%s%s%s:%d/metrics\n", v6 ? "[" : "", server->host().c_str(),
			v6 ? "]" : "", server->port());
	}
	std::unique_ptr<ProfilePusher> pusher;
	if (!o.push_url.empty()) {
		PusherOptions po;
		po.url = o.push_url;
		po.app_name = o.service;
		auto p = ProfilePusher::create(po);
		if (!p)
			throw UserError(p.error().message);
		pusher = std::move(*p);
	}

	auto engine = Engine::load(t.max_paths, 0, o.offcpu);
	if (!engine)
		throw UserError(engine.error().message);
	// The kernel's run time of our programs, for the cost of a hit.
	UniqueFd stats(bpf_enable_stats(BPF_STATS_RUN_TIME));
	auto trap_ns = (*engine)->measure_trap_ns();
	if (!trap_ns)
		throw UserError("cannot measure the probe cost: " + trap_ns.error().message);

	// Every window attaches to these open files again, never to their paths.
	TargetFiles opened;
	std::optional<BinaryProcesses> binary_processes;
	FilesByPid files = target_files(t, t.pid, binary_processes, opened);
	std::vector<const Preset *> chosen = choose_presets(t, files);
	std::vector<FoundSite> sites = plan_sites(t, t.pid, false, files, chosen, custom);
	const bool skip_gone = binary_processes.has_value();
	bool attached_now = true;
	AttachedProbes attached = attach_sites(**engine, sites, skip_gone);
	// Once, at the start: every interval's profile carries it.
	std::optional<CalibrationResult> calibration = calibrate_or_warn(**engine, o.offcpu, false);
	// binary_processes describes --binary's processes, and reads their maps,
	// as they start; -p's one process is described here.
	std::map<int, ProfileProcess> pid_process;
	std::map<int, std::vector<Mapping>> pid_maps;
	if (t.pid) {
		pid_process[t.pid] = describe_process(t.pid);
		if (auto m = read_proc_maps(t.pid))
			pid_maps[t.pid] = std::move(*m);
	}
	const std::map<int, ProfileProcess> &processes = binary_processes ? binary_processes->seen() : pid_process;
	const std::map<int, std::vector<Mapping>> &maps = binary_processes ? binary_processes->maps() : pid_maps;
	// --binary: processes started since the last scan get their libraries
	// attached, for each of them only.
	auto scan = [&] {
		std::vector<int> fresh = binary_processes->scan();
		if (fresh.empty())
			return;
		auto more = more_sites(t, binary_processes->files(fresh), chosen, custom, sites.size());
		if (attached_now)
			merge_attached(attached, attach_sites(**engine, more, skip_gone));
		sites.insert(sites.end(), more.begin(), more.end());
	};
	auto target_pids = [&] {
		if (t.pid)
			return std::vector<int>{t.pid};
		scan();
		std::vector<int> pids;
		for (const auto &[p, process] : processes)
			if (process_exists(p))
				pids.push_back(p);
		(*engine)->share_tables(pids.size());
		return pids;
	};
	log_line("monitoring %s: %zu probe sites, a hit costs %.0f ns (trap) plus the program; budget %.2g%%, "
		"every %.3g s into %s; Ctrl-C to stop",
		t.pid ? pid_text(t.pid).c_str() : ("every process of " + t.binary).c_str(), (*engine)->attached_sites(),
		*trap_ns, o.budget * 100, o.interval_s, o.dir.c_str());

	std::mt19937_64 rng(std::random_device{}());
	std::uniform_real_distribution<double> jitter(-o.jitter, o.jitter);
	PathDeltas deltas;
	std::array<uint64_t, USDTPROF_ANOM_COUNT> last_anomalies{};
	MonitorHealth health;
	// Probe hits with the probes' run time, and the context-switch hook's,
	// which runs whether or not probes are attached.
	struct Runs {
		uint64_t probe_ns, hits, switch_ns;
	};
	auto run_totals = [&] {
		auto [entry_ns, entry_runs] = (*engine)->run_stats("usdt_entry");
		auto [exit_ns, exit_runs] = (*engine)->run_stats("usdt_exit");
		auto [switch_ns, switch_runs] = (*engine)->run_stats("track_offcpu");
		return Runs{entry_ns + exit_ns, entry_runs + exit_runs, switch_ns};
	};
	auto own_cpu_ns = [] {
		timespec ts;
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
		return uint64_t(ts.tv_sec) * 1000000000 + uint64_t(ts.tv_nsec);
	};
	uint64_t last_own_cpu = own_cpu_ns();
	Runs last_runs = run_totals();
	std::map<int, uint64_t> last_cpu;
	uint64_t last_exited_cpu = (*engine)->exited_cpu_ns();
	for (int p : target_pids())
		last_cpu[p] = process_cpu_ns(p);
	double duty = 1;
	bool stopping = false;
	auto mono_ns = [](Clock::time_point tp) {
		return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(tp.time_since_epoch()).count());
	};
	auto at = [](uint64_t ns) { return Clock::time_point(std::chrono::nanoseconds(ns)); };
	auto target_gone = [&] { return t.pid && !process_exists(t.pid); };
	// Intervals are contiguous: each begins where the last one ended, the
	// first when the first probe was attached, so together they cover every
	// moment a probe could count.
	uint64_t boundary = (*engine)->start_ns();
	// -d counts from the first attach, where the first interval begins, not
	// from after the calibration (0.1-0.4 s under load): the intervals
	// together last -d, split as -i says.
	auto deadline = o.duration_s > 0 ? at(boundary) + std::chrono::duration_cast<Clock::duration>(
								  std::chrono::duration<double>(o.duration_s))
					 : Clock::time_point::max();
	const int64_t unix_offset = unix_now_ns() - int64_t(mono_ns(Clock::now()));
	int exit_status = 0;
	bool metrics_processes_full = false;
	uint64_t metrics_cut = 0;
	while (!stopping) {
		auto interval = std::chrono::duration<double>(o.interval_s * (1 + jitter(rng)));
		uint64_t begin = boundary, window_open = begin;
		// Attached before the window opens: the window is all probing. A
		// target that exits meanwhile ends the monitor after this interval.
		if (!attached_now && !target_gone()) {
			try {
				merge_attached(attached, attach_sites(**engine, sites, skip_gone));
			} catch (const UserError &) {
				if (!target_gone())
					throw;
			}
			window_open = (*engine)->open_window();
			attached_now = true;
		}
		int64_t begin_unix = int64_t(begin) + unix_offset;
		auto end = at(begin) + std::chrono::duration_cast<Clock::duration>(interval);
		if (deadline - end < std::chrono::duration_cast<Clock::duration>(interval / 2))
			end = deadline; // no sliver of an interval at the end
		auto window_end = duty < 1 && attached_now
					  ? at(window_open) + std::chrono::duration_cast<Clock::duration>(interval * duty)
					  : end;
		uint64_t window_close = 0; // 0: still open
		for (Clock::time_point until = std::min(window_end, end);;) {
			Wake w = signals.wait_until(until, t.pid);
			if (w == Wake::Reopen) {
				make_dir(o.dir);
				log_line("SIGHUP: outputs reopened");
				continue;
			}
			if (w == Wake::Stop) {
				stopping = true;
				break;
			}
			if (until == end || !attached_now)
				break;
			// The sampling window closes: frames open now are counted up to now.
			auto closed = (*engine)->close_window();
			if (!closed)
				throw UserError(closed.error().message);
			window_close = *closed;
			attached_now = false;
			until = end;
		}
		if (Clock::now() >= deadline)
			stopping = true;

		// The cost of this interval's hits against the target's CPU time
		// sets the next window.
		std::vector<int> pids = target_pids();
		Runs runs = run_totals();
		// Processes alive now from their CPU clocks; those that exited from
		// the kernel, less what was read of them before.
		uint64_t exited_cpu = (*engine)->exited_cpu_ns(), cpu = exited_cpu - last_exited_cpu;
		last_exited_cpu = exited_cpu;
		for (auto it = last_cpu.begin(); it != last_cpu.end();)
			if (!process_exists(it->first)) {
				cpu -= std::min(cpu, it->second);
				it = last_cpu.erase(it);
			} else {
				++it;
			}
		for (int p : pids) {
			uint64_t now_cpu = process_cpu_ns(p);
			cpu += now_cpu - std::min(now_cpu, last_cpu[p]);
			last_cpu[p] = now_cpu;
		}
		uint64_t measured = mono_ns(Clock::now());
		uint64_t attached_until = window_close ? window_close : attached_now ? measured : window_open;
		double measured_share = std::clamp(double(attached_until - window_open) /
							   double(std::max<uint64_t>(1, measured - begin)), 0.0, 1.0);
		uint64_t interval_hits = runs.hits - last_runs.hits, own_cpu = own_cpu_ns();
		BudgetEstimate budget = estimate_budget(
			{interval_hits, *trap_ns, cpu, measured_share, double(runs.probe_ns - last_runs.probe_ns),
			 double(runs.switch_ns - last_runs.switch_ns) + double(own_cpu - last_own_cpu)},
			o.budget, o.min_duty);
		last_own_cpu = own_cpu;
		last_runs = runs;
		// Sampling starts or ends: said once each time, with the figures that decided it.
		if ((budget.next_duty < 1) != (duty < 1))
			log_line(budget.next_duty < 1
					 ? "sampling from the next interval: estimated probe cost %.2f%% of the target's CPU "
					   "(%llu hits, %.0f ns trap each, %.3f s target CPU) is over the budget %.2g%%: probes "
					   "attached for %.0f%% of each interval"
					 : "sampling ends: estimated probe cost %.2f%% of the target's CPU (%llu hits, %.0f ns "
					   "trap each, %.3f s target CPU) is within the budget %.2g%%: probes attached for %.0f%% "
					   "of each interval",
				 budget.overhead * 100, (unsigned long long)interval_hits, *trap_ns, cpu / 1e9, o.budget * 100,
				 budget.next_duty * 100);
		duty = budget.next_duty;

		uint64_t finished = 0;
		if (stopping) {
			// No hit counts after the stop; open frames are charged up to it.
			finished = (*engine)->stop();
			if (auto r = (*engine)->flush_open_frames(); !r)
				throw UserError(r.error().message);
		} else if (attached_now && duty < 1 && !target_gone()) {
			// The next interval samples: this one ends with its window, whose
			// close adds every thread's cached calls to the map. Left in a
			// cache until the thread's next exit, they would land in the next
			// window's interval, beyond the time it was attached.
			auto closed = (*engine)->close_window();
			if (!closed)
				throw UserError(closed.error().message);
			window_close = finished = *closed;
			attached_now = false;
		} else if (attached_now) {
			// Threads add their path caches to the map at their next exit: a
			// moment for busy ones; idle ones are in a later interval. The
			// calls a busy thread adds then ended before the bump: the
			// interval ends there.
			finished = mono_ns(Clock::now());
			(*engine)->bump_flush_epoch();
			usleep(20000);
		}

		// What the map holds now. A process seen gone before a read has
		// added everything it will (its threads' exits flushed their
		// stacks), so its paths and names can be forgotten after that read;
		// one that dies after the read is read again, or its last calls
		// would be lost (or, its names deleted, reported unnamed).
		std::set<uint32_t> dead;
		if (binary_processes)
			for (const auto &[p, process] : binary_processes->seen())
				if (!process_exists(p))
					dead.insert(uint32_t(p));
		std::vector<PathRecord> records = (*engine)->read_paths();
		bool died = false;
		for (const PathRecord &r : records)
			if (!dead.count(r.stats.tgid) && !process_exists(int(r.stats.tgid)))
				died = dead.insert(r.stats.tgid).second;
		if (died)
			records = (*engine)->read_paths();
		if (!finished)
			finished = mono_ns(Clock::now()); // probes detached: nothing counted after the window
		boundary = finished;
		uint64_t attached_ns = window_close ? window_close - window_open
				       : attached_now ? finished - window_open : 0;
		double attached_share = std::clamp(double(attached_ns) / double(std::max<uint64_t>(1, finished - begin)), 0.0, 1.0);

		// Deltas of this interval.
		IntervalDelta delta = deltas.next(records, [&](uint32_t tgid) { return !dead.count(tgid); });
		Profile profile;
		profile.duration_ns = finished - begin;
		profile.start_unix_ns = begin_unix;
		profile.stop_unix_ns = begin_unix + int64_t(profile.duration_ns);
		profile.probes = attached.probes;
		profile.sampled_fraction = std::max(attached_share, 1e-6);
		std::set<uint32_t> tgids;
		for (const PathRecord &r : delta.records)
			tgids.insert(r.stats.tgid);
		auto comms = (*engine)->read_process_comms();
		for (uint32_t tgid : tgids) {
			auto known = processes.find(int(tgid));
			profile.processes.push_back(known != processes.end() ? known->second
									     : describe_process(int(tgid), comms));
		}
		FunctionNamer namer(attached, (*engine)->read_names(), maps, opened);
		if (calibration) {
			profile.calibration = calibration->calibration;
			namer.set_cost_kinds(calibration->spec_kinds, calibration->native_kind);
		}
		size_t names_cut =
			add_call_paths(profile, delta.records, [&](uint32_t tgid, uint64_t func) { return namer(tgid, func); });
		// The kernel's counters are cumulative; an interval shows its own.
		auto anomalies = (*engine)->anomalies();
		for (int a = 0; a < USDTPROF_ANOM_COUNT; a++)
			profile.anomalies[anomaly_name(a)] = anomalies[a] - last_anomalies[a];
		last_anomalies = anomalies;

		std::string base = o.dir + "/" + kPrefix + stamp(begin_unix);
		if (names_cut)
			fprintf(stderr, "usdtprof: interval %s: %zu function names or locations longer than %zu bytes were cut\n",
				stamp(begin_unix).c_str(), names_cut, kMaxNameBytes);
		if (auto trim = trim_profile(profile, o.max_interval_bytes))
			fprintf(stderr,
				"usdtprof: interval %s: profile of %llu bytes over --max-interval-bytes %llu: kept the %zu "
				"heaviest of %zu call paths\n",
				stamp(begin_unix).c_str(), (unsigned long long)trim->bytes_before,
				(unsigned long long)o.max_interval_bytes, trim->paths_kept, trim->paths_before);
		// The profile file keeps the measured times; the exports and metrics are compensated.
		std::string pprof = write_interval_files(base, profile);
		apply_retention(o.dir, kPrefix, monitor_extensions(), o.keep, o.max_bytes, o.max_age_s);
		Profile compensated = compensate(profile);
		metrics.add_interval(compensated);
		if (!metrics_processes_full && metrics.other_processes_full()) {
			metrics_processes_full = true;
			fprintf(stderr, "usdtprof: /metrics: more than %zu process names need an [other] series; later ones share "
					"process=\"[other]\"\n", MetricsRegistry::kDefaultOtherProcesses);
		}
		if (server && server->connections_cut() > metrics_cut) {
			MetricsServerLimits limits;
			fprintf(stderr, "usdtprof: /metrics: %llu connections cut since the last interval (past the %.3g s "
					"deadline, or the oldest of more than %zu)\n",
				(unsigned long long)(server->connections_cut() - metrics_cut),
				double(limits.deadline.count()) / 1000, limits.max_connections);
			metrics_cut = server->connections_cut();
		}
		health.probe_hits += interval_hits;
		health.anomalies = 0;
		for (int a = 0; a < USDTPROF_ANOM_COUNT; a++)
			if (a != USDTPROF_ANOM_DROPPED_NS && a != USDTPROF_ANOM_LOST_EVENTS)
				health.anomalies += anomalies[a];
		health.dropped_paths = anomalies[USDTPROF_ANOM_AGG_FULL];
		health.intervals++;
		health.duty_cycle = attached_share;
		health.estimated_overhead_ratio = budget.overhead;
		metrics.set_health(health);
		if (pusher)
			pusher->push({pprof, begin_unix / 1000000000, profile.stop_unix_ns / 1000000000,
				      t.pid ? int32_t(t.pid) : 0});
		// What is reported of processes that are gone is forgotten: the maps stay bounded.
		(*engine)->delete_paths(delta.forget);
		for (uint32_t tgid : dead) {
			(*engine)->delete_names(tgid);
			if (binary_processes) {
				binary_processes->forget(int(tgid));
				std::erase_if(sites, [&](const FoundSite &f) { return f.pid == int(tgid); });
			}
		}
		// A target gone by now may have counted calls since the read: one
		// more (last) interval reads them.
		if (stopping && target_gone())
			log_line("%s exited", pid_text(t.pid).c_str());
	}
	log_line("stopped after %llu intervals, %llu probe hits",
		(unsigned long long)health.intervals, (unsigned long long)health.probe_hits);
	if (pusher)
		pusher->flush(std::chrono::milliseconds(2000));
	return exit_status;
}

} // namespace usdtprof
