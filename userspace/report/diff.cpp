// usdtprof diff: two profiles compared per function and per path, each
// change tested against the spread the profiles show (docs/diff.md).
#include "report/diff.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "profile/compensation.h"
#include "base/text_escape.h"

namespace usdtprof {

namespace {

using json = nlohmann::ordered_json;

constexpr double kSignificantZ = 3;
// The least run-to-run spread a row is compared with. The others' MAD rests
// on a few rows and can come out near 0, while the same code's per-call
// time moves about 2% between two runs of it on a loaded machine (SD 0.018
// over 25 rows of 5 pairs of identical runs, docs/diff.md): without this
// floor those runs showed a function "significant" in 2 of 5 pairs.
constexpr double kMinRunSpread = 0.02;

// Fewer calls than this in a single process get no verdict: between
// identical runs of python3.11 -m json.tool, 5% of its 401 functions called
// once moved over 5x, and paths called 2 to 9 times were the most of those
// marked significant (a cold call that one run's few calls did not have).
constexpr uint64_t kMinCalls = 10;

struct Stats {
	uint64_t calls = 0, self_ns = 0, total_ns = 0, uncertain_ns = 0;
	// The standard error of the mean of its calls' durations, from their
	// histogram (mean_se_ns); -1 when it has fewer than 2 timed calls.
	double mean_se_ns = -1;
};

// The standard error of the mean of the durations a distribution holds:
// their standard deviation / sqrt(count), each bucket's calls taken as
// uniform over its part within min..max (the model quantiles assume); -1
// under 2 calls (one call shows no spread).
double mean_se_ns(const Distribution &d)
{
	double n = 0, sum = 0, sum2 = 0;
	for (const auto &[b, count] : d.buckets) {
		double lo = double(std::max(dist_bucket_low(b), d.min_ns));
		double hi = std::max(lo, double(std::min(dist_bucket_high(b), d.max_ns)));
		double mean = (lo + hi) / 2, c = double(count);
		n += c;
		sum += c * mean;
		sum2 += c * (mean * mean + (hi - lo) * (hi - lo) / 12);
	}
	if (n < 2)
		return -1;
	double var = std::max(sum2 / n - (sum / n) * (sum / n), 0.0);
	return std::sqrt(var / n);
}

// Per function and per path (frames joined by ';') of one tree.
struct Side {
	std::map<std::string, Stats> functions, paths;
	std::map<std::string, std::vector<std::string>> stacks;
	uint64_t total_ns = 0;
	bool durations = true; // the profile carries them (an older usdtprof's does not)
};

std::string joined(const std::vector<std::string> &stack)
{
	std::string out;
	for (const std::string &f : stack)
		out += (out.empty() ? "" : ";") + f;
	return out;
}

Side side_of(const Profile &profile, const DiffOptions &options)
{
	CallTree tree = with_self_time(build_call_tree(profile), options.time);
	// Durations are wall-clock: they tell the spread of wall-clock self
	// times only (on a busy machine a third of on-CPU-alike calls wait
	// 16-64 ms for a CPU: nothing the on-CPU time shows).
	bool wall = options.time == TimeMode::Wall;
	auto se = [&](const Distribution &d) { return wall ? mean_se_ns(d) : -1; };
	Side s;
	s.total_ns = tree.total_self_ns;
	s.durations = profile.distributions || profile.nodes.empty();
	for (const FunctionSummary &f : summarize_functions(tree))
		s.functions[f.name] = {f.calls, f.self_ns, f.total_ns, f.uncertain_ns, se(f.dist)};
	for (uint32_t i = 0; i < tree.nodes.size(); i++) {
		const TreeNode &n = tree.nodes[i];
		std::vector<std::string> stack = stack_of(tree, i);
		std::string key = joined(stack);
		s.paths[key] = {n.calls, n.self_ns, n.total_ns, n.uncertain_ns,
				i < tree.dists.size() ? se(tree.dists[i]) : -1};
		s.stacks[key] = std::move(stack);
	}
	return s;
}

std::vector<int32_t> pids_of(const Profile &profile)
{
	std::set<int32_t> pids;
	for (const PathNode &n : profile.nodes)
		pids.insert(n.pid);
	return {pids.begin(), pids.end()};
}

// Each process's per-call self time of every function and path it called.
void add_units(const Profile &profile, const DiffOptions &options, double scale, std::vector<Side> &units)
{
	for (int32_t pid : pids_of(profile))
		units.push_back(side_of(only_process(profile, pid), options));
	for (Side &u : units)
		for (auto *table : {&u.functions, &u.paths})
			for (auto &[name, st] : *table)
				st.self_ns = uint64_t(std::llround(double(st.self_ns) * scale));
}

std::vector<double> per_call(const std::vector<Side> &units, bool paths, const std::string &key)
{
	std::vector<double> out;
	for (const Side &u : units) {
		const auto &table = paths ? u.paths : u.functions;
		auto it = table.find(key);
		if (it != table.end() && it->second.calls)
			out.push_back(double(it->second.self_ns) / double(it->second.calls));
	}
	return out;
}

double median(std::vector<double> v)
{
	std::sort(v.begin(), v.end());
	size_t n = v.size();
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The per-call value the test compares: the median over the processes when
// there are at least 2 (one process's burst of stolen or shared CPU must not
// move it), else the whole profile's.
double central(const Stats &s, const std::vector<double> &units)
{
	if (units.size() >= 2)
		return median(units);
	return s.calls ? double(s.self_ns) / double(s.calls) : 0; // per call
}

// Robust relative standard error of that median: 1.4826 MAD over the
// processes / median / sqrt(n); nullopt under 2 processes.
std::optional<double> relative_se(const std::vector<double> &v)
{
	if (v.size() < 2)
		return std::nullopt;
	double m = median(v);
	std::vector<double> dev;
	for (double x : v)
		dev.push_back(std::fabs(x - m));
	return m > 0 ? 1.4826 * median(dev) / m / std::sqrt(double(v.size())) : 0;
}


void scale_stats(Stats &s, double scale)
{
	s.self_ns = uint64_t(std::llround(double(s.self_ns) * scale));
	s.total_ns = uint64_t(std::llround(double(s.total_ns) * scale));
	s.uncertain_ns = uint64_t(std::llround(double(s.uncertain_ns) * scale));
	if (s.mean_se_ns > 0)
		s.mean_se_ns *= scale;
}

// How far the mean per call of a row's self time may be off by the spread
// of its calls (their durations' histogram), relative to it: inclusive
// durations stand for self times, whose spread they hold and more (a
// parent's callees'); 0 without durations or with one call.
double calls_se(const Stats &s)
{
	if (s.mean_se_ns <= 0 || !s.calls || !s.self_ns)
		return 0;
	return s.mean_se_ns / (double(s.self_ns) / double(s.calls));
}

// A side whose profile has no durations (an older usdtprof's) has no
// spread of its calls to show, not none: its calls are taken to spread as
// the other side's do, relative to their mean, rather than not at all
// (which would make any change of theirs look significant).
void spread_for_the_one_without(Stats *base_without, Stats *new_without, const Stats &a, const Stats &b)
{
	auto take = [](Stats &into, const Stats &from) {
		double relative = calls_se(from);
		if (relative > 0 && into.calls && into.self_ns)
			into.mean_se_ns = relative * (double(into.self_ns) / double(into.calls));
	};
	if (base_without && !new_without)
		take(*base_without, b);
	else if (new_without && !base_without)
		take(*new_without, a);
}

// z of a row's per-call change over the run's, from the units' spread, the
// run's spread and the calibration's uncertainty.
std::optional<double> z_of(const Stats &a, const Stats &b, const std::vector<double> &ua, const std::vector<double> &ub,
			   const Diff::Run &d)
{
	if (!a.calls || !b.calls || !a.self_ns || !b.self_ns)
		return std::nullopt;
	// A few calls (in one process) show too little of their spread, and the
	// others' is no measure of it (docs/diff.md).
	if ((a.calls < kMinCalls && ua.size() < 2) || (b.calls < kMinCalls && ub.size() < 2))
		return std::nullopt;
	auto se_a = relative_se(ua), se_b = relative_se(ub);
	if (!(se_a && se_b) && d.spread == 0)
		return std::nullopt; // no spread to compare with
	double spread = std::max(d.spread, kMinRunSpread);
	double var = spread * spread;
	if (se_a && se_b)
		var += *se_a * *se_a + *se_b * *se_b;
	double cal_a = double(a.uncertain_ns) / double(a.self_ns), cal_b = double(b.uncertain_ns) / double(b.self_ns);
	var += cal_a * cal_a + cal_b * cal_b;
	double calls_a = calls_se(a), calls_b = calls_se(b);
	var += calls_a * calls_a + calls_b * calls_b;
	if (var <= 0)
		return std::nullopt;
	return (std::log(central(b, ub) / central(a, ua)) - std::log(d.ratio)) / std::sqrt(var);
}


// Up to this many rows, a row's own change is left out of the run's level it
// is compared with (a heavy changed row would otherwise set it).
constexpr size_t kLeaveOneOutRows = 4000;

// The run's overall per-call ratio and its robust spread, from the log
// ratios of the rows in both, except one (unweighted: a heavy row must not
// set the level alone).
Diff::Run run_level(const std::map<std::string, double> &logs, const std::string *except = nullptr)
{
	Diff::Run d;
	std::vector<double> v;
	for (const auto &[name, l] : logs)
		if (!except || name != *except)
			v.push_back(l);
	if (v.empty())
		return d;
	double m = median(v);
	d.ratio = std::exp(m);
	if (v.size() < 3)
		return d;
	for (double &l : v)
		l = std::fabs(l - m);
	d.spread = 1.4826 * median(v);
	return d;
}

std::vector<DiffRow> rows(const Side &a, const Side &b, bool paths, const std::vector<Side> &units_a,
			  const std::vector<Side> &units_b, Diff::Run &run)
{
	const auto &ta = paths ? a.paths : a.functions, &tb = paths ? b.paths : b.functions;
	std::set<std::string> keys;
	for (const auto &[k, s] : ta)
		keys.insert(k);
	for (const auto &[k, s] : tb)
		keys.insert(k);
	std::vector<DiffRow> out;
	std::map<std::string, double> logs; // per row in both: ln of its per-call ratio
	for (const std::string &key : keys) {
		Stats sa = ta.contains(key) ? ta.at(key) : Stats{}, sb = tb.contains(key) ? tb.at(key) : Stats{};
		DiffRow r;
		r.name = key;
		if (paths)
			r.stack = (a.stacks.contains(key) ? a.stacks : b.stacks).at(key);
		r.base = {sa.calls, sa.self_ns, sa.total_ns, per_call(units_a, paths, key)};
		r.now = {sb.calls, sb.self_ns, sb.total_ns, per_call(units_b, paths, key)};
		r.status = !ta.contains(key) ? DiffStatus::Appeared : !tb.contains(key) ? DiffStatus::Vanished : DiffStatus::Changed;
		r.delta_self_ns = int64_t(sb.self_ns) - int64_t(sa.self_ns);
		r.delta_total_ns = int64_t(sb.total_ns) - int64_t(sa.total_ns);
		auto share = [](uint64_t part, uint64_t whole) { return whole ? 100.0 * double(part) / double(whole) : 0.0; };
		r.delta_share = share(sb.self_ns, b.total_ns) - share(sa.self_ns, a.total_ns);
		r.typical_delta_self_ns = int64_t(std::llround(central(sb, r.now.per_call_ns) * double(sb.calls) -
							      central(sa, r.base.per_call_ns) * double(sa.calls)));
		if (r.status == DiffStatus::Changed && sa.calls && sb.calls && sa.self_ns && sb.self_ns)
			logs[key] = std::log(central(sb, r.now.per_call_ns) / central(sa, r.base.per_call_ns));
		out.push_back(std::move(r));
	}
	run = run_level(logs);
	for (DiffRow &r : out) {
		if (r.status != DiffStatus::Changed)
			continue;
		Diff::Run others = logs.size() <= kLeaveOneOutRows ? run_level(logs, &r.name) : run;
		Stats sa = ta.at(r.name), sb = tb.at(r.name);
		spread_for_the_one_without(a.durations ? nullptr : &sa, b.durations ? nullptr : &sb, sa, sb);
		r.z = z_of(sa, sb, r.base.per_call_ns, r.now.per_call_ns, others);
		r.significant = r.z && std::fabs(*r.z) >= kSignificantZ;
	}
	// Significant changes first, then by the change the processes' medians
	// support: a larger summed change within the noise (one process's
	// burst) must not bury the one the data supports.
	std::stable_sort(out.begin(), out.end(), [](const DiffRow &x, const DiffRow &y) {
		if (x.significant != y.significant)
			return x.significant;
		return std::llabs(x.typical_delta_self_ns) > std::llabs(y.typical_delta_self_ns);
	});
	return out;
}

const char *status_name(DiffStatus s)
{
	return s == DiffStatus::Appeared ? "appeared" : s == DiffStatus::Vanished ? "vanished" : "changed";
}

std::string signed_ns(int64_t ns)
{
	return (ns < 0 ? "-" : "+") + human_ns(uint64_t(ns < 0 ? -ns : ns));
}

std::string marker(const DiffRow &r)
{
	if (r.status != DiffStatus::Changed)
		return r.status == DiffStatus::Appeared ? "new" : "gone";
	return r.significant ? "*" : "";
}

std::string table_text(const std::vector<DiffRow> &rs, const DiffOptions &options)
{
	char buf[256];
	snprintf(buf, sizeof buf, "%10s %10s %10s %10s %10s %10s %11s %8s %6s %4s  %s\n", "calls", "new calls", "self",
		 "new self", "total", "new total", "change", "share", "z", "", "name");
	std::string out = buf;
	size_t shown = 0;
	for (const DiffRow &r : rs) {
		if (options.limit && shown++ == options.limit) {
			out += "... " + std::to_string(rs.size() - options.limit) + " more not shown\n";
			break;
		}
		std::string z = r.z ? std::to_string(int(std::lround(*r.z))) : "-";
		snprintf(buf, sizeof buf, "%10llu %10llu %10s %10s %10s %10s %11s %+7.1f%% %6s %4s  ",
			 (unsigned long long)r.base.calls, (unsigned long long)r.now.calls, human_ns(r.base.self_ns).c_str(),
			 human_ns(r.now.self_ns).c_str(), human_ns(r.base.total_ns).c_str(), human_ns(r.now.total_ns).c_str(),
			 signed_ns(r.delta_self_ns).c_str(), r.delta_share, z.c_str(), marker(r).c_str());
		out += buf + escape_text(r.name) + "\n";
	}
	return out;
}

json side_json(const DiffSide &s)
{
	return {{"calls", s.calls}, {"self_ns", s.self_ns}, {"total_ns", s.total_ns}, {"per_call_self_ns", s.per_call_ns}};
}

json rows_json(const std::vector<DiffRow> &rs, bool paths, size_t limit)
{
	json out = json::array();
	for (const DiffRow &r : rs) {
		if (limit && out.size() == limit)
			break;
		json j = paths ? json{{"stack", r.stack}} : json{{"name", r.name}};
		j["status"] = status_name(r.status);
		j["base"] = side_json(r.base);
		j["new"] = side_json(r.now);
		j["delta_self_ns"] = r.delta_self_ns;
		j["delta_total_ns"] = r.delta_total_ns;
		j["typical_delta_self_ns"] = r.typical_delta_self_ns;
		j["delta_share"] = r.delta_share;
		j["z"] = r.z ? json(*r.z) : json(nullptr);
		j["significant"] = r.significant;
		out.push_back(std::move(j));
	}
	return out;
}

} // namespace

Diff diff_profiles(const Profile &base_raw, const Profile &new_raw, const DiffOptions &options)
{
	Profile base = options.raw ? base_raw : compensate(base_raw), now = options.raw ? new_raw : compensate(new_raw);
	Side a = side_of(base, options), b = side_of(now, options);
	Diff d;
	d.base_total_ns = a.total_ns;
	d.new_total_ns = b.total_ns;
	double scale = options.normalize && b.total_ns ? double(a.total_ns) / double(b.total_ns) : 1.0;
	if (scale != 1.0) {
		for (auto *table : {&b.functions, &b.paths})
			for (auto &[name, st] : *table)
				scale_stats(st, scale);
		b.total_ns = a.total_ns;
	}
	std::vector<Side> units_a, units_b;
	add_units(base, options, 1.0, units_a);
	add_units(now, options, scale, units_b);
	d.base_units = units_a.size();
	d.new_units = units_b.size();
	d.base_durations = a.durations;
	d.new_durations = b.durations;
	d.functions = rows(a, b, false, units_a, units_b, d.functions_run);
	d.paths = rows(a, b, true, units_a, units_b, d.paths_run);
	return d;
}

// What a profile without durations (an older usdtprof's) does to the z column.
std::string durations_note(const Diff &d)
{
	if (d.base_durations && d.new_durations)
		return "";
	if (!d.base_durations && !d.new_durations)
		return "\nneither profile has durations (recorded by a usdtprof older than them): z from the processes' and "
		       "the run's spread only\n";
	return std::string("\n") + (d.base_durations ? "new" : "base") +
	       " has no durations (recorded by a usdtprof older than them): its calls are taken to spread as " +
	       (d.base_durations ? "base's" : "new's") + " do\n";
}

std::string render_diff_text(const Diff &d, const DiffOptions &options)
{
	char buf[512];
	snprintf(buf, sizeof buf,
		 "usdtprof diff (%s time): base %s recorded in %zu process(es), new %s in %zu process(es)%s\n"
		 "the run as a whole: per-call self times x%.3f (median over the functions in both), spread %.1f%%; "
		 "over the paths x%.3f, spread %.1f%%\n\n",
		 time_mode_name(options.time), human_ns(d.base_total_ns).c_str(), d.base_units,
		 human_ns(d.new_total_ns).c_str(), d.new_units, options.normalize ? " (new scaled to base's total)" : "",
		 d.functions_run.ratio, 100 * d.functions_run.spread, d.paths_run.ratio, 100 * d.paths_run.spread);
	std::string out = buf;
	out += "functions, significant changes first, then by the size of the change of self time:\n" + table_text(d.functions, options);
	out += "\npaths, in the same order:\n" + table_text(d.paths, options);
	out += durations_note(d);
	out += "\n*: significant, the per-call self time changed beyond 3 times the spread the profiles show (z); "
	       "-: no spread to judge by (or fewer than 10 calls in one process); new/gone: only in NEW/BASE (docs/diff.md)\n";
	return out;
}

std::string render_diff_json(const Diff &d, const DiffOptions &options)
{
	json j = {{"time", time_mode_name(options.time)},
		  {"normalize", options.normalize},
		  {"base", {{"total_self_ns", d.base_total_ns}, {"processes", d.base_units}, {"durations", d.base_durations}}},
		  {"new", {{"total_self_ns", d.new_total_ns}, {"processes", d.new_units}, {"durations", d.new_durations}}},
		  {"run", {{"functions", {{"ratio", d.functions_run.ratio}, {"spread", d.functions_run.spread}}},
			   {"paths", {{"ratio", d.paths_run.ratio}, {"spread", d.paths_run.spread}}}}},
		  {"functions", rows_json(d.functions, false, options.limit)},
		  {"paths", rows_json(d.paths, true, options.limit)}};
	return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

} // namespace usdtprof
