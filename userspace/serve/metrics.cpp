#include "serve/metrics.h"

#include <algorithm>
#include <charconv>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <vector>

namespace usdtprof {

namespace {

// Length of the valid UTF-8 sequence starting at s[i], 0 when invalid.
size_t utf8_sequence(const std::string &s, size_t i)
{
	auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
	unsigned char c = byte(i);
	if (c < 0x80)
		return 1;
	size_t len;
	uint32_t cp;
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	if (i + len > s.size())
		return 0;
	for (size_t k = 1; k < len; k++) {
		if ((byte(i + k) & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (byte(i + k) & 0x3f);
	}
	// Overlong forms, surrogates, beyond U+10FFFF.
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

// Seconds from nanoseconds, exact: "12.5", "0.000001", "3".
std::string format_seconds(uint64_t ns)
{
	char buf[48];
	snprintf(buf, sizeof buf, "%" PRIu64 ".%09" PRIu64, ns / 1000000000, ns % 1000000000);
	std::string s = buf;
	while (s.back() == '0')
		s.pop_back();
	if (s.back() == '.')
		s.pop_back();
	return s;
}

std::string format_double(double v)
{
	if (std::isnan(v))
		return "NaN";
	if (std::isinf(v))
		return v > 0 ? "+Inf" : "-Inf";
	char buf[64];
	auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
	if (ec != std::errc())
		return "NaN";
	return std::string(buf, end);
}

void family(std::string &out, const char *name, const char *type, const char *help)
{
	out += "# HELP ";
	out += name;
	out += ' ';
	out += help;
	out += "\n# TYPE ";
	out += name;
	out += ' ';
	out += type;
	out += '\n';
}

void sample(std::string &out, const char *name, const std::string &value)
{
	out += name;
	out += ' ';
	out += value;
	out += '\n';
}

} // namespace

std::string prometheus_label_escape(const std::string &value)
{
	std::string out;
	out.reserve(value.size());
	for (size_t i = 0; i < value.size();) {
		size_t len = utf8_sequence(value, i);
		if (len == 0) {
			out += "\xef\xbf\xbd"; // U+FFFD
			i++;
			continue;
		}
		if (len == 1) {
			char c = value[i];
			if (c == '\\')
				out += "\\\\";
			else if (c == '"')
				out += "\\\"";
			else if (c == '\n')
				out += "\\n";
			else
				out += c;
		} else {
			out.append(value, i, len);
		}
		i += len;
	}
	return out;
}

MetricsRegistry::MetricsRegistry(size_t top_n, size_t other_processes, size_t pid_labels)
	: top_n_(top_n), other_processes_(other_processes), pid_labels_(pid_labels)
{
}

std::string MetricsRegistry::pid_label(int32_t pid) const
{
	if (!pid_labels_)
		return "";
	return labelled_.count(pid) ? std::to_string(pid) : kOtherPid;
}

MetricsRegistry::Key MetricsRegistry::catch_all() const
{
	return {kOtherProcess, "", pid_labels_ ? kOtherPid : "", kOtherFunction};
}

void MetricsRegistry::label_new_pids(const std::map<int32_t, uint64_t> &self_ns,
				     const std::map<int32_t, const ProfileProcess *> &process_of,
				     const std::vector<ProcessShare> &monitored)
{
	std::vector<std::pair<int32_t, uint64_t>> fresh;
	for (const auto &[pid, ns] : self_ns)
		if (!labelled_.count(pid))
			fresh.emplace_back(pid, ns);
	std::stable_sort(fresh.begin(), fresh.end(), [](const auto &a, const auto &b) { return a.second > b.second; });
	for (const auto &[pid, ns] : fresh) {
		if (labelled_.size() >= pid_labels_) {
			// A label that never counted a call (a process monitored, idle) goes to one with calls.
			auto idle = std::find_if(labelled_.rbegin(), labelled_.rend(),
						 [](const auto &l) { return !l.second.counted; });
			if (idle == labelled_.rend())
				break;
			labelled_.erase(std::next(idle).base());
		}
		auto p = process_of.find(pid);
		const ProfileProcess *proc = p == process_of.end() ? nullptr : p->second;
		Label &l = labelled_[pid];
		l.process = proc && !proc->comm.empty() ? proc->comm : "[unknown]";
		l.container = proc ? proc->container_id.substr(0, 12) : std::string();
		l.counted = true; // its calls are added below
	}
	// The monitored processes without calls take the labels left.
	for (const ProcessShare &m : monitored)
		if (labelled_.size() < pid_labels_ && !labelled_.count(m.pid))
			labelled_[m.pid] = Label{false, m.process, m.container_id.substr(0, 12), 0, false};
}

void MetricsRegistry::drop_gone_pids(const std::map<int32_t, uint64_t> &active)
{
	for (auto p = labelled_.begin(); p != labelled_.end();) {
		// Still gone but with calls read late: its series go once it has none.
		if (!p->second.gone || active.count(p->first)) {
			++p;
			continue;
		}
		std::string label = std::to_string(p->first);
		for (auto it = series_.begin(); it != series_.end();) {
			if (it->first.pid != label) {
				++it;
				continue;
			}
			// As counted when inserted (a process may call itself "[other]").
			if (it->first.function != kOtherFunction)
				named_series_--;
			else if (it->first.process != kOtherProcess)
				other_series_--;
			it = series_.erase(it);
		}
		p = labelled_.erase(p);
	}
}

void MetricsRegistry::add_interval(const Profile &delta, bool (*alive)(int pid),
				   const std::vector<ProcessShare> &monitored)
{
	// Aggregate the interval outside the lock, by pid (labelled below).
	std::map<int32_t, const ProfileProcess *> process_of;
	for (const ProfileProcess &p : delta.processes)
		process_of.emplace(p.pid, &p);
	static const std::string unknown = "[unknown]";
	std::map<std::pair<int32_t, Key>, Series> by_pid;
	std::map<int32_t, uint64_t> process_self_ns;
	for (const PathNode &n : delta.nodes) {
		if (n.function >= delta.functions.size())
			continue;
		if (n.calls == 0 && n.self_ns == 0)
			continue;
		auto it = process_of.find(n.pid);
		const ProfileProcess *p = it == process_of.end() ? nullptr : it->second;
		Key key{p && !p->comm.empty() ? p->comm : unknown, p ? p->container_id.substr(0, 12) : std::string(),
			"", delta.functions[n.function]};
		Series &s = by_pid[{pid_labels_ ? n.pid : 0, std::move(key)}];
		s.self_ns += n.self_ns;
		s.self_offcpu_ns += std::min(n.self_offcpu_ns, n.self_ns);
		s.calls += n.calls;
		process_self_ns[n.pid] += n.self_ns;
	}

	std::lock_guard<std::mutex> lock(mutex_);
	drop_gone_pids(process_self_ns);
	if (pid_labels_)
		label_new_pids(process_self_ns, process_of, monitored);
	std::map<Key, Series> interval;
	for (auto &[pid_key, s] : by_pid) {
		Key key = pid_key.second;
		key.pid = pid_label(pid_key.first);
		if (pid_labels_) { // usdtprof_process_calls_total
			auto l = labelled_.find(pid_key.first);
			(l == labelled_.end() ? other_calls_ : l->second.calls) += s.calls;
			(l == labelled_.end() ? other_counted_ : l->second.counted) = true;
		}
		Series &sum = interval[std::move(key)];
		sum.self_ns += s.self_ns;
		sum.self_offcpu_ns += s.self_offcpu_ns;
		sum.calls += s.calls;
	}
	std::vector<std::pair<const Key *, const Series *>> fresh;
	for (const auto &[key, s] : interval) {
		auto it = series_.find(key);
		if (it == series_.end()) {
			fresh.emplace_back(&key, &s);
			continue;
		}
		it->second.self_ns += s.self_ns;
		it->second.self_offcpu_ns += s.self_offcpu_ns;
		it->second.calls += s.calls;
	}
	// The heaviest new pairs take the free series.
	std::stable_sort(fresh.begin(), fresh.end(), [](const auto &a, const auto &b) {
		return a.second->self_ns > b.second->self_ns;
	});
	for (const auto &[key, s] : fresh) {
		Key target = *key;
		if (named_series_ >= top_n_) {
			target.function = kOtherFunction;
			if (other_series_ >= other_processes_ && !series_.count(target))
				target = catch_all();
		}
		auto [it, inserted] = series_.try_emplace(std::move(target));
		if (inserted && it->first.function != kOtherFunction)
			named_series_++;
		else if (inserted && it->first.process != kOtherProcess)
			other_series_++;
		it->second.self_ns += s->self_ns;
		it->second.self_offcpu_ns += s->self_offcpu_ns;
		it->second.calls += s->calls;
	}
	// A process gone now keeps its series for this interval's scrapes.
	if (alive)
		for (auto &[pid, l] : labelled_)
			l.gone = !alive(int(pid));
}

void MetricsRegistry::set_health(const MonitorHealth &health)
{
	std::lock_guard<std::mutex> lock(mutex_);
	health_.probe_hits = std::max(health_.probe_hits, health.probe_hits);
	health_.anomalies = std::max(health_.anomalies, health.anomalies);
	health_.dropped_paths = std::max(health_.dropped_paths, health.dropped_paths);
	health_.intervals = std::max(health_.intervals, health.intervals);
	health_.profiled_cpu_ns = std::max(health_.profiled_cpu_ns, health.profiled_cpu_ns);
	health_.probe_cost_ns = std::max(health_.probe_cost_ns, health.probe_cost_ns);
	health_.fixed_cost_ns = std::max(health_.fixed_cost_ns, health.fixed_cost_ns);
	health_.duty_cycle = health.duty_cycle;
	health_.estimated_overhead_ratio = health.estimated_overhead_ratio;
	health_.process_shares = health.process_shares;
}

bool MetricsRegistry::other_processes_full() const
{
	std::lock_guard<std::mutex> lock(mutex_);
	return series_.count(catch_all()) != 0;
}

size_t MetricsRegistry::pid_labelled() const
{
	std::lock_guard<std::mutex> lock(mutex_);
	return labelled_.size();
}

size_t MetricsRegistry::series_count() const
{
	std::lock_guard<std::mutex> lock(mutex_);
	return series_.size();
}

// Each process with a pid label its own sample; those without one (no calls
// yet, or past the labels) a single pid="other" sample, the smallest of their
// shares: a gauge of several processes cannot be summed.
void MetricsRegistry::render_process_shares(std::string &out) const
{
	family(out, "usdtprof_process_sampled_fraction", "gauge",
	       "Share of the last interval during which the process's probes were attached (0..1); "
	       "pid=\"other\": the smallest share of the processes without a pid label of their own.");
	double others = 2;
	for (const ProcessShare &p : health_.process_shares) {
		if (!labelled_.count(p.pid)) {
			others = std::min(others, p.sampled_fraction);
			continue;
		}
		out += "usdtprof_process_sampled_fraction{process=\"";
		out += prometheus_label_escape(p.process);
		if (!p.container_id.empty()) {
			out += "\",container_id=\"";
			out += prometheus_label_escape(p.container_id.substr(0, 12));
		}
		out += "\",pid=\"";
		out += std::to_string(p.pid);
		out += "\"} ";
		out += format_double(p.sampled_fraction);
		out += '\n';
	}
	if (others <= 1) {
		out += "usdtprof_process_sampled_fraction{process=\"";
		out += kOtherProcess;
		out += "\",pid=\"";
		out += kOtherPid;
		out += "\"} ";
		out += format_double(others);
		out += '\n';
	}
}

// Each process with a pid label its own sample (0 for one monitored without
// calls), those without one a single pid="other" sample, once it has calls.
void MetricsRegistry::render_process_calls(std::string &out) const
{
	family(out, "usdtprof_process_calls_total", "counter",
	       "Activations of the process's functions since it got its pid label (0: monitored, no calls); "
	       "pid=\"other\": those of the processes without a pid label of their own.");
	auto line = [&](const std::string &process, const std::string &container, const std::string &pid,
			uint64_t calls) {
		out += "usdtprof_process_calls_total{process=\"";
		out += prometheus_label_escape(process);
		if (!container.empty()) {
			out += "\",container_id=\"";
			out += prometheus_label_escape(container);
		}
		out += "\",pid=\"";
		out += pid;
		out += "\"} ";
		out += std::to_string(calls);
		out += '\n';
	};
	for (const auto &[pid, l] : labelled_)
		line(l.process, l.container, std::to_string(pid), l.calls);
	if (other_counted_)
		line(kOtherProcess, "", kOtherPid, other_calls_);
}

std::string MetricsRegistry::render() const
{
	std::string out;
	std::lock_guard<std::mutex> lock(mutex_);
	out.reserve(512 + series_.size() * 3 * 96);

	auto per_function = [&](const char *name, auto value) {
		for (const auto &[key, s] : series_) {
			out += name;
			out += "{process=\"";
			out += prometheus_label_escape(key.process);
			if (!key.container.empty()) {
				out += "\",container_id=\"";
				out += prometheus_label_escape(key.container);
			}
			if (!key.pid.empty()) {
				out += "\",pid=\"";
				out += key.pid;
			}
			out += "\",function=\"";
			out += prometheus_label_escape(key.function);
			out += "\"} ";
			out += value(s);
			out += '\n';
		}
	};
	family(out, "usdtprof_function_self_seconds_total", "counter",
	       "Exclusive (self) time of the function's activations, summed over its call paths.");
	per_function("usdtprof_function_self_seconds_total",
		     [](const Series &s) { return format_seconds(s.self_ns); });
	family(out, "usdtprof_function_self_offcpu_seconds_total", "counter",
	       "The part of the function's self time spent switched out (blocked, sleeping, waiting for a CPU); "
	       "the on-CPU part is the rest.");
	per_function("usdtprof_function_self_offcpu_seconds_total",
		     [](const Series &s) { return format_seconds(s.self_offcpu_ns); });
	family(out, "usdtprof_function_calls_total", "counter",
	       "Activations of the function, summed over its call paths.");
	per_function("usdtprof_function_calls_total",
		     [](const Series &s) { return std::to_string(s.calls); });

	// The monitor's own health: one family of one sample each.
	const struct {
		const char *name, *type, *help;
		std::string value;
	} health[] = {
		{"usdtprof_probe_hits_total", "counter", "Probe firings handled by the eBPF programs.",
		 std::to_string(health_.probe_hits)},
		{"usdtprof_anomalies_total", "counter",
		 "Anomalies counted by the profiler (unmatched exits, overflows, ...).", std::to_string(health_.anomalies)},
		{"usdtprof_dropped_paths_total", "counter",
		 "Call paths dropped because the kernel's call-path table was full.", std::to_string(health_.dropped_paths)},
		{"usdtprof_intervals_total", "counter", "Monitoring intervals completed.", std::to_string(health_.intervals)},
		{"usdtprof_profiled_cpu_seconds_total", "counter",
		 "CPU time of the profiled processes while monitored, the probes' cost included.",
		 format_seconds(health_.profiled_cpu_ns)},
		{"usdtprof_probe_cost_seconds_total", "counter",
		 "Estimated cost of the probe hits (traps and eBPF programs), part of the profiled CPU time.",
		 format_seconds(health_.probe_cost_ns)},
		{"usdtprof_fixed_cost_seconds_total", "counter",
		 "usdtprof's own CPU time and its context-switch hook's run time: costs sampling cannot cut.",
		 format_seconds(health_.fixed_cost_ns)},
		{"usdtprof_duty_cycle", "gauge",
		 "Share of the time during which probes were attached (0..1), as last reported by the monitor.",
		 format_double(health_.duty_cycle)},
		{"usdtprof_estimated_overhead_ratio", "gauge",
		 "Estimated cost (probes and fixed costs) over the profiled processes' own CPU time in the last "
		 "interval, as the budget counts it; large when they barely ran (the cost counters give it over a window).",
		 format_double(health_.estimated_overhead_ratio)},
	};
	for (const auto &h : health) {
		family(out, h.name, h.type, h.help);
		sample(out, h.name, h.value);
	}
	if (pid_labels_) {
		render_process_shares(out);
		render_process_calls(out);
	}
	return out;
}

} // namespace usdtprof
