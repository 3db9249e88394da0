#include "session/session.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <poll.h>
#include <sys/signalfd.h>

#include "base/result.h"
#include "base/text_escape.h"
#include "target/presets.h"
#include "target/process.h"

namespace usdtprof {

uint64_t monotonic_now()
{
	return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count());
}

StopSignals::StopSignals(bool hangup_reopens)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	if (hangup_reopens)
		sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, nullptr);
	fd_ = UniqueFd(signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
}

int StopSignals::take()
{
	signalfd_siginfo info;
	if (read(fd_.get(), &info, sizeof(info)) != sizeof(info))
		return 0;
	return last_ = int(info.ssi_signo);
}

ExitWatch::ExitWatch(const std::vector<int> &pids) : any_(!pids.empty())
{
	for (int pid : pids)
		if (int fd = open_pidfd(pid); fd >= 0)
			pidfds_.emplace_back(fd);
		else
			polled_.push_back(pid);
}

bool ExitWatch::all_gone()
{
	std::erase_if(pidfds_, [](const UniqueFd &fd) {
		pollfd p = {fd.get(), POLLIN, 0};
		return poll(&p, 1, 0) == 1;
	});
	std::erase_if(polled_, [](int pid) { return !process_exists(pid); });
	return any_ && pidfds_.empty() && polled_.empty();
}

Wake wait_until(StopSignals &signals, ExitWatch &exits, const WaitPlan &plan)
{
	std::chrono::milliseconds tick_in = plan.period;
	for (;;) {
		if (exits.all_gone())
			return Wake::TargetExited;
		auto left = std::chrono::ceil<std::chrono::milliseconds>(plan.deadline - Clock::now()).count();
		if (left <= 0)
			return Wake::Deadline;
		std::vector<pollfd> fds{{signals.fd(), POLLIN, 0}};
		for (const UniqueFd &fd : exits.pidfds())
			fds.push_back({fd.get(), POLLIN, 0});
		if (plan.tick)
			left = std::min<int64_t>(left, tick_in.count());
		if (exits.polls())
			left = std::min<int64_t>(left, plan.period.count());
		int n = poll(fds.data(), fds.size(), int(std::min<int64_t>(left, INT_MAX)));
		if (plan.tick)
			tick_in = plan.tick();
		if (n < 0 && errno != EINTR)
			return Wake::Deadline;
		if (int sig = fds[0].revents ? signals.take() : 0)
			return sig == SIGHUP ? Wake::Reopen : Wake::Stop;
	}
}

void Session::load(uint32_t max_paths, uint32_t trace_buffer_bytes, bool offcpu_hook, bool per_thread,
		   bool per_process)
{
	auto engine = Engine::load(max_paths, trace_buffer_bytes, offcpu_hook, per_thread, per_process);
	if (!engine)
		throw UserError(engine.error().message);
	engine_ = std::move(*engine);
}

void Session::attach(const std::vector<FoundSite> &sites, bool skip_gone)
{
	merge_attached(attached_, attach_sites(*engine_, sites, skip_gone));
}

void Session::attach_new_processes(const TargetSpec &t, const std::vector<const Preset *> &chosen,
				   const std::vector<ProbeRole> &custom, std::vector<FoundSite> &sites, bool attach_now)
{
	BinaryProcesses &binary = *processes_.binary();
	if (std::vector<int> fresh = binary.scan(); !fresh.empty()) {
		auto more = more_sites(t, binary.files(fresh), chosen, custom, sites.size());
		if (attach_now)
			attach(more, true);
		sites.insert(sites.end(), more.begin(), more.end());
	}
	engine_->share_tables(binary.running());
}

void Session::calibrate(bool offcpu_hook, bool trace)
{
	Calibrator calibrator(*engine_, offcpu_hook, trace);
	calibrate(calibrator, kCalibrationRounds);
}

void Session::calibrate(Calibrator &calibrator, int min_rounds)
{
	auto r = calibrator.finish(min_rounds);
	if (!r) {
		fprintf(stderr, "usdtprof: %s; times will be shown as measured, probe overhead included\n",
			r.error().message.c_str());
		return;
	}
	calibration_ = std::move(*r);
}

FunctionNamer Session::namer(std::map<int, std::vector<Mapping>> maps) const
{
	FunctionNamer namer(attached_, engine_->read_names(), std::move(maps), files_);
	if (calibration_)
		namer.set_cost_kinds(calibration_->spec_kinds, calibration_->native_kind);
	return namer;
}

size_t Session::add_paths(Profile &profile, PathColumns &records, const FunctionNamer &namer) const
{
	profile.probes = attached_.probes;
	if (calibration_)
		profile.calibration = calibration_->calibration;
	// record --per-thread: its threads named as they are now, or were at their exit.
	profile.per_thread = engine_->per_thread();
	std::map<uint32_t, std::string> exited;
	if (profile.per_thread)
		exited = engine_->read_thread_comms();
	ThreadNamer thread_names = [&](uint32_t tgid, uint32_t tid) { return thread_name(tgid, tid, exited); };
	return add_call_paths(profile, records, [&](uint32_t tgid, uint64_t func) { return namer(tgid, func); },
			      process_root_labels(profile.processes), engine_->read_worker_statements(),
			      profile.per_thread ? thread_names : ThreadNamer{});
}

void Session::set_spans(Profile &profile, const std::vector<ProbeRole> &custom) const
{
	std::map<uint32_t, std::string> names = span_names(custom);
	std::vector<ProfileSpan> out;
	for (const SpanRecord &r : engine_->read_spans()) {
		auto name = names.find(r.span);
		if (name == names.end())
			continue;
		ProfileSpan sp{name->second, int32_t(r.tgid), r.stats.count, r.stats.total_ns, r.stats.min_ns,
			       r.stats.max_ns, r.open, r.stats.restarted, r.stats.unstarted, {}};
		for (uint32_t i = 0; i < USDTPROF_SPAN_BUCKETS; i++)
			if (r.stats.buckets[i])
				sp.buckets.emplace_back(i, r.stats.buckets[i]);
		out.push_back(std::move(sp));
	}
	std::stable_sort(out.begin(), out.end(),
			 [](const ProfileSpan &a, const ProfileSpan &b) { return a.name < b.name; });
	profile.spans = std::move(out);
}

void Session::warn_unnested_pairs(const std::vector<ProbeRole> &custom) const
{
	std::map<uint32_t, uint64_t> mismatches = engine_->pair_mismatches();
	for (const ProbeRole &r : custom)
		if (r.pair && r.role == USDTPROF_ROLE_ENTRY)
			if (auto m = mismatches.find(r.pair); m != mismatches.end() && m->second)
				log_line("warning: --pair %s: %llu of its frames did not nest with the calls around them "
					 "(exit_mismatch): it is not a function, and its frames' times and callees mean nothing",
					 escape_text(r.spec).c_str(), (unsigned long long)m->second);
}

void Session::forward_signals_until_exit(int pid)
{
	ExitWatch command({pid});
	if (command.pidfds().empty())
		return; // unwatchable: not waited for
	for (;;) {
		if (wait_until(signals_, command, WaitPlan{}) == Wake::TargetExited)
			return;
		if (int sig = signals_.last())
			kill(pid, sig);
	}
}

} // namespace usdtprof
