#include "session/process_windows.h"

#include <algorithm>

#include "base/result.h"
#include "base/text_escape.h"
#include "session/targets.h"
#include "target/process.h"

namespace usdtprof {

namespace {

Clock::time_point at_ns(uint64_t ns) { return Clock::time_point(std::chrono::nanoseconds(ns)); }

uint64_t now_ns()
{
	return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count());
}

// This thread's CPU time: what attaching and detaching cost usdtprof.
uint64_t thread_cpu_ns()
{
	timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return uint64_t(ts.tv_sec) * 1000000000 + uint64_t(ts.tv_nsec);
}

} // namespace

void ProcessWindows::begin(uint64_t interval_begin)
{
	begin_ = interval_begin;
	exec_attached_.clear();
	for (auto &[pid, w] : windows_) {
		w.close = 0;
		w.earlier = 0;
		if (w.attached) {
			// From the interval's start; from its attach for one found after it (while the monitor started).
			if (w.open <= interval_begin)
				w.open = w.found = 0;
			continue;
		}
		w.found = 0;
		std::vector<FoundSite> own;
		std::copy_if(sites_.begin(), sites_.end(), std::back_inserter(own),
			     [pid = pid](const FoundSite &f) { return f.pid == pid; });
		uint64_t cpu = thread_cpu_ns();
		session_.attach(own, true); // a process gone meanwhile is skipped
		w.open = session_.engine().open_process_window(pid);
		w.attach_cpu = thread_cpu_ns() - cpu;
		w.attached = true;
	}
}

Clock::time_point ProcessWindows::next_close(std::chrono::duration<double> length) const
{
	auto next = Clock::time_point::max();
	for (const auto &[pid, w] : windows_)
		if (w.attached && w.duty < 1)
			next = std::min(next, at_ns(std::max(w.open, begin_)) +
						      std::chrono::duration_cast<Clock::duration>(length * w.duty));
	return next;
}

void ProcessWindows::close(int pid, Window &w)
{
	w.attached = false;
	if (!process_exists(pid)) { // gone: its exit flushed its stacks
		w.close = now_ns();
		return;
	}
	uint64_t cpu = thread_cpu_ns();
	auto closed = session_.engine().close_process_window(pid);
	if (!closed)
		throw UserError(closed.error().message);
	w.close = *closed;
	w.close_cpu = thread_cpu_ns() - cpu;
}

void ProcessWindows::close_due(std::chrono::duration<double> length)
{
	auto now = Clock::now();
	for (auto &[pid, w] : windows_)
		if (w.attached && w.duty < 1 &&
		    at_ns(std::max(w.open, begin_)) + std::chrono::duration_cast<Clock::duration>(length * w.duty) <= now)
			close(pid, w);
}

void ProcessWindows::close_sampled()
{
	for (auto &[pid, w] : windows_)
		if (w.attached && w.duty < 1)
			close(pid, w);
}

bool ProcessWindows::any_whole() const
{
	return windows_.empty() ||
	       std::any_of(windows_.begin(), windows_.end(), [](const auto &w) { return w.second.duty == 1; });
}

double ProcessWindows::window_ns(int pid, const Window *w) const
{
	if (w && w->attach_cpu && w->close_cpu)
		return double(w->attach_cpu + w->close_cpu);
	double sites = double(std::count_if(sites_.begin(), sites_.end(), [&](const FoundSite &f) { return f.pid == pid; }));
	double estimate = sites * site_ns_; // each of attach and detach
	return (w && w->attach_cpu ? double(w->attach_cpu) : estimate) + (w && w->close_cpu ? double(w->close_cpu) : estimate);
}

std::vector<ProcessLoad> ProcessWindows::loads(const std::map<int, uint64_t> &cpu, uint64_t interval_begin,
					       uint64_t now, double span_share, std::map<uint32_t, uint64_t> &base) const
{
	std::map<uint32_t, uint64_t> hits = session_.engine().process_hits();
	std::vector<ProcessLoad> out;
	for (const auto &[pid, cpu_ns] : cpu) {
		uint64_t total = hits[uint32_t(pid)], &last = base[uint32_t(pid)];
		auto w = windows_.find(pid);
		// One found in the interval (new, or its new program after an
		// exec) is not sampled: its load counts it attached from the
		// interval's start, as its CPU time read does, up to a sampling
		// window's close.
		double attached = attached_share(pid, interval_begin, now);
		if (w != windows_.end() && w->second.found && now > interval_begin) {
			uint64_t to = w->second.close ? w->second.close : w->second.attached ? now : interval_begin;
			attached = std::clamp(double(to - std::min(to, interval_begin)) / double(now - interval_begin), 0.0,
					      1.0);
		}
		const Window *own = w == windows_.end() ? nullptr : &w->second;
		out.push_back({pid, total - std::min(total, last), attached, cpu_ns, own ? own->duty : 1.0,
			       window_ns(pid, own) * span_share});
		last = total;
	}
	return out;
}

uint64_t ProcessWindows::attached_ns(int pid, uint64_t interval_begin, uint64_t end) const
{
	auto it = windows_.find(pid);
	if (it == windows_.end()) { // attached all the interval, unless it exec'd a program not profiled
		auto e = exec_attached_.find(pid);
		return e == exec_attached_.end() ? end - interval_begin : e->second;
	}
	const Window &w = it->second;
	uint64_t from = std::max(w.open, interval_begin);
	uint64_t to = w.close ? w.close : w.attached ? end : from;
	return w.earlier + (to - std::min(to, from));
}

double ProcessWindows::attached_share(int pid, uint64_t interval_begin, uint64_t end) const
{
	if (end <= interval_begin)
		return 1;
	return std::clamp(double(attached_ns(pid, interval_begin, end)) / double(end - interval_begin), 0.0, 1.0);
}

void ProcessWindows::found(int pid, uint64_t attached_ns)
{
	Window w;
	w.open = std::max(attached_ns, begin_);
	w.found = w.open;
	if (auto e = exec_attached_.find(pid); e != exec_attached_.end()) {
		w.earlier = e->second; // its old program's part
		exec_attached_.erase(e);
	}
	windows_[pid] = w;
}

void ProcessWindows::exec(int pid, uint64_t exec_ns)
{
	uint64_t attached = 0;
	auto it = windows_.find(pid);
	if (it == windows_.end()) {
		attached = exec_ns - std::min(exec_ns, begin_); // attached from the interval's start
	} else {
		const Window &w = it->second;
		uint64_t from = std::max(w.open, begin_);
		uint64_t to = w.close ? std::min(w.close, exec_ns) : w.attached ? exec_ns : from;
		attached = w.earlier + (to - std::min(to, from));
		windows_.erase(it);
	}
	exec_attached_[pid] = attached;
}

void ProcessWindows::set_duties(const std::map<int, double> &duties, const std::vector<ProcessLoad> &loads,
				double hit_ns, double budget, const char *from)
{
	for (const ProcessLoad &l : loads) {
		auto d = duties.find(l.pid);
		if (d == duties.end())
			continue;
		Window &w = windows_[l.pid];
		if (d->second < 1 && w.duty == 1)
			log_line("sampling %s %s: its probes' estimated cost (%llu hits, %.0f ns each, attached %.0f%% of "
				 "the time, %.3f s of its CPU) is over its fair share of the budget %.2g%% of %zu "
				 "processes: attached for %.0f%% of each interval",
				 pid_text(l.pid).c_str(), from, (unsigned long long)l.hits, hit_ns, l.attached * 100,
				 double(l.cpu_ns) / 1e9, budget * 100, loads.size(), d->second * 100);
		else if (d->second == 1 && w.duty < 1)
			log_line("sampling of %s ends: its probes' estimated cost (%llu hits, %.0f ns each) is within its "
				 "fair share of the budget: attached all the time",
				 pid_text(l.pid).c_str(), (unsigned long long)l.hits, hit_ns);
		w.duty = d->second;
	}
}

double ProcessWindows::smallest_share(uint64_t interval_begin, uint64_t end) const
{
	double smallest = 1;
	for (const auto &[pid, w] : windows_)
		smallest = std::min(smallest, attached_share(pid, interval_begin, end));
	return smallest;
}

void ProcessWindows::forget(int pid)
{
	windows_.erase(pid);
	exec_attached_.erase(pid);
}

} // namespace usdtprof
