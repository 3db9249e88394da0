#include "engine/calibration.h"
#include "engine/derived_objects.h"

#include <algorithm>
#include <array>
#include <set>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <ctime>
#include <unistd.h>

#include "target/proc_maps.h"

// Probe sites in usdtprof's own code, like USDT sites of our header: a nop
// (which the kernel emulates instead of single-stepping) and a 5-byte nop,
// then a return. A kind whose target sites are plain nops is attached at the
// first, one whose sites have the 5-byte nop at the second (kSiteNop5Offset),
// which the kernel may optimize into a call. Arguments arrive in rdi, rsi, rdx,
// rcx and r8 (USDTPROF_MAX_IDENT_ARGS: PHP's identity has four; our header's
// name and four clock reads are five; a register left
// out held whatever the code before had left in it, so PHP's exits missed
// their frames, one a batch). One entry and one exit site per kind, and a pair for the batches' roots.
#define USDTPROF_CAL_SITE(name)                                                                   \
	".globl " #name "\n.type " #name ", @function\n" #name ":\n\tnop\n\t.nops 5\n\tret\n" \
	".size " #name ", .-" #name "\n"
#define USDTPROF_CAL_PAIR(k) USDTPROF_CAL_SITE(usdtprof_cal_enter_##k) USDTPROF_CAL_SITE(usdtprof_cal_exit_##k)
asm(".pushsection .text\n" USDTPROF_CAL_PAIR(root) USDTPROF_CAL_PAIR(0) USDTPROF_CAL_PAIR(1) USDTPROF_CAL_PAIR(2)
	    USDTPROF_CAL_PAIR(3) USDTPROF_CAL_PAIR(4) USDTPROF_CAL_PAIR(5) USDTPROF_CAL_PAIR(6)
		    USDTPROF_CAL_PAIR(7) ".popsection\n");

extern "C" {
#define USDTPROF_CAL_DECL(k)                                              \
	void usdtprof_cal_enter_##k(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t); \
	void usdtprof_cal_exit_##k(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t);
USDTPROF_CAL_DECL(root)
USDTPROF_CAL_DECL(0)
USDTPROF_CAL_DECL(1)
USDTPROF_CAL_DECL(2)
USDTPROF_CAL_DECL(3)
USDTPROF_CAL_DECL(4)
USDTPROF_CAL_DECL(5)
USDTPROF_CAL_DECL(6)
USDTPROF_CAL_DECL(7)
}

namespace usdtprof {

namespace {

using Site = void (*)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t);
constexpr size_t kMaxKinds = 8;
const std::array<Site, kMaxKinds> kEnterSites = {usdtprof_cal_enter_0, usdtprof_cal_enter_1, usdtprof_cal_enter_2,
						 usdtprof_cal_enter_3, usdtprof_cal_enter_4, usdtprof_cal_enter_5,
						 usdtprof_cal_enter_6, usdtprof_cal_enter_7};
const std::array<Site, kMaxKinds> kExitSites = {usdtprof_cal_exit_0, usdtprof_cal_exit_1, usdtprof_cal_exit_2,
						usdtprof_cal_exit_3, usdtprof_cal_exit_4, usdtprof_cal_exit_5,
						usdtprof_cal_exit_6, usdtprof_cal_exit_7};

// Where a site's 5-byte nop starts (after its 1-byte nop).
constexpr uint64_t kSiteNop5Offset = 1;

// Batches per kind, in rounds spread over time (8 ms apart at the end, a
// recording's 50 ms ticks while its target runs): a hit's cost moves
// between speed states of the machine (on this host ~290 and ~480 ns per
// hit, each held for milliseconds), and one burst of batches sees one
// state only. kRounds rounds' places; parents per batch, leaves per parent.
constexpr int kRounds = kCalibrationRounds;
constexpr int kRoundBatches = 8;
constexpr auto kRoundGap = std::chrono::milliseconds(8);
constexpr int kParents = 16;
constexpr int kLeaves = 8;
constexpr uint64_t kRootId = 0x100000; // + batch * 16 + kind; ids below 16 are synthetic
constexpr uint64_t kFlushId = 0x200000;

// What makes one probe cost more than another: how it identifies the
// function, and where its identity arguments live (a register, or memory
// read with a helper call).
struct Signature {
	uint32_t ident, nargs, content_mask, nop5_site;
	std::array<uint32_t, USDTPROF_MAX_IDENT_ARGS> arg_kinds;
	uint32_t derived; // 0, or 1 + its usdtprof_derived_kind
	bool owner_together; // usdtprof_owner_args_together
	uint32_t inband = 0; // passes clock reads: only what they leave out is calibrated
	bool operator==(const Signature &) const = default;
};

uint32_t identity_args(const usdtprof_probe_spec &s)
{
	return s.ident == USDTPROF_IDENT_NATIVE ? 1
	       : s.ident == USDTPROF_IDENT_SQL	? 1
	       : s.ident == USDTPROF_IDENT_CONST ? 0
						 : std::min<uint32_t>(s.nargs, USDTPROF_MAX_IDENT_ARGS);
}

Signature signature_of(const usdtprof_probe_spec &s)
{
	Signature sig{s.ident,	     s.nargs, s.content_mask, s.nop5_site, {}, s.derived.used ? 1 + s.derived.kind : 0,
		      usdtprof_owner_args_together(&s)};
	for (uint32_t i = 0; i < identity_args(s); i++)
		sig.arg_kinds[i] = s.args[i].kind;
	sig.inband = s.inband;
	return sig;
}

std::string ident_name(const Signature &sig)
{
	switch (sig.ident) {
	case USDTPROF_IDENT_NATIVE: return "native";
	case USDTPROF_IDENT_CONST: return "const";
	case USDTPROF_IDENT_SQL: return "sql";
	default:
		return (sig.content_mask & USDTPROF_CONTENT_CACHED) ? "content cached"
		       : sig.content_mask			  ? "content"
								  : "value";
	}
}

std::string kind_name(const Signature &sig)
{
	return ident_name(sig) + (sig.derived ? " derived" : "") + (sig.nop5_site ? " nop5" : "") +
	       (sig.inband == USDTPROF_INBAND_OLD ? " in-band (older header)" : sig.inband ? " in-band" : "");
}

// Strings a content or SQL identity reads: as long as typical names and
// statements. The name has a header as PHP's zend_string has (flags, a hash,
// set, and the length before the text), so a cached identity caches it as
// it does the target's names. Without opcache PHP interns classes' names,
// not functions' nor files': a pinning identity's hits read those two and
// take the class (its second string) by its address, as the target's do.
struct HeadedString {
	uint32_t refcount, flags;
	uint64_t hash, length;
	char text[24];
};
constexpr uint32_t kZendString = 0x16;               // IS_STRING | GC_NOT_COLLECTABLE
constexpr uint32_t kZendStringInterned = 0x16 | 0x40; // and IS_STR_INTERNED
const HeadedString kContentString = {1, kZendString, 0x8000000012345678, 23, "Calibration::probeCost_"};
const HeadedString kClassString = {1, kZendStringInterned, 0x8000000087654321, 23, "CalibrationProbeCostCls"};
const char *const kContentName = kContentString.text;
const char *const kClassName = kClassString.text;
const char kSqlText[] = "SELECT abalance FROM pgbench_accounts WHERE aid = 12345";
constexpr uint64_t kIdentValue = 0x7fff12345678;
const std::array<uint32_t, USDTPROF_MAX_IDENT_ARGS> kArgRegs = {USDTPROF_REG_DI, USDTPROF_REG_SI, USDTPROF_REG_DX,
								    USDTPROF_REG_CX};
// Our header's clock reads, after the name's register (as hit passes them).
const std::array<uint32_t, USDTPROF_INBAND> kClockRegs = {USDTPROF_REG_SI, USDTPROF_REG_DX, USDTPROF_REG_CX,
							  USDTPROF_REG_R8};

// One kind being calibrated: the target's spec rewritten to read the same
// kinds of argument from the calibration site's registers, and those values.
struct KindPlan {
	Signature sig;
	usdtprof_probe_spec entry{}, exit{};
	std::array<uint64_t, USDTPROF_MAX_IDENT_ARGS> values{};
	std::array<uint64_t, USDTPROF_MAX_IDENT_ARGS> cells{}; // what REG_DEREF arguments point to
	DerivedObjects derived; // what a derived identity reads
};

// A derived owner (Ruby 3.1's) reads the class the probe names (a memory
// argument beside the identity's) and an execution context or method entry
// from registers the calibration site does not set: the class through the
// register of its own index, the base through the next one free, so that
// the reads reach a method entry owned by that class, as a call of one of
// its own methods does (derived_objects.h). Left to chance, they faulted or
// stopped early, and Ruby's calibrated cost was not the target's.
void plan_owner(usdtprof_probe_spec &s, KindPlan &plan, bool together)
{
	usdtprof_derived &d = s.derived;
	uint32_t free = identity_args(s);
	uint32_t base = d.proof_arg == free ? free + 1 : free;
	if (d.proof_arg < free || d.proof_arg >= USDTPROF_MAX_IDENT_ARGS || base >= USDTPROF_MAX_IDENT_ARGS ||
	    s.args[d.proof_arg].kind != USDTPROF_ARG_REG_DEREF)
		return;
	OwnerPlace at = place_owner_objects(d, plan.derived.owner);
	usdtprof_arg_spec &klass = s.args[d.proof_arg];
	klass.reg = kArgRegs[d.proof_arg];
	klass.offset = 0;
	plan.cells[d.proof_arg] = at.klass;
	plan.values[d.proof_arg] = reinterpret_cast<uintptr_t>(&plan.cells[d.proof_arg]);
	d.reg = d.reg2 = kArgRegs[base]; // the target's second register is tried only when the first fails
	plan.values[base] = at.base;
	// As the target passes them: in one piece (its class's name hash kept
	// by the calibrating thread after the first hit, as a target's thread
	// keeps its classes').
	if (together && d.klass >= 16 && d.klass <= 32 && d.klass % 8 == 0) {
		std::array<uint64_t, 5> &piece = plan.derived.owner.args;
		piece[0] = plan.cells[0];
		piece[1] = plan.cells[1];
		piece[size_t(d.klass) / 8] = at.klass;
		for (uint32_t i : {0u, 1u, d.proof_arg})
			s.args[i].reg = kArgRegs[0];
		s.args[0].offset = 0;
		s.args[1].offset = 8;
		klass.offset = d.klass;
		plan.values[0] = reinterpret_cast<uintptr_t>(piece.data());
	}
}

// A derived string identity (CPython's) reads objects through a register the
// calibration site does not set: it reads them through the first argument
// register the identity leaves free (derived_objects.h).
void plan_derived(usdtprof_probe_spec &s, KindPlan &plan, bool owner_together)
{
	const usdtprof_derived &d = s.derived;
	uint32_t free = identity_args(s);
	if (d.used && d.kind == USDTPROF_DERIVED_OWNER)
		return plan_owner(s, plan, owner_together);
	if (!d.used || d.kind != USDTPROF_DERIVED_STRING || free >= USDTPROF_MAX_IDENT_ARGS ||
	    d.proof_arg >= free || s.args[d.proof_arg].kind == USDTPROF_ARG_CONST)
		return;
	uint64_t proved = s.args[d.proof_arg].kind == USDTPROF_ARG_REG ? plan.values[d.proof_arg] : plan.cells[d.proof_arg];
	s.derived.reg = kArgRegs[free];
	plan.values[free] = place_derived_objects(d, proved, plan.derived);
}

usdtprof_probe_spec rewrite(usdtprof_probe_spec s, usdtprof_role role, KindPlan &plan)
{
	s.role = role;
	bool owner_together = usdtprof_owner_args_together(&s);
	for (uint32_t i = 0; i < identity_args(s); i++) {
		usdtprof_arg_spec &a = s.args[i];
		bool text = s.ident == USDTPROF_IDENT_SQL || (s.content_mask & (1u << i));
		uint64_t value = s.ident == USDTPROF_IDENT_SQL ? reinterpret_cast<uintptr_t>(kSqlText)
				 : text && i == 1 && (s.content_mask & USDTPROF_CONTENT_PINNED)
					? reinterpret_cast<uintptr_t>(kClassName)
				 : text ? reinterpret_cast<uintptr_t>(kContentName)
					: kIdentValue + i;
		if (a.kind == USDTPROF_ARG_CONST)
			continue;
		a.reg = kArgRegs[i];
		a.size = 8;
		a.is_signed = 0;
		if (a.kind == USDTPROF_ARG_REG) {
			plan.values[i] = value;
		} else {
			a.offset = 0;
			plan.cells[i] = value;
			plan.values[i] = reinterpret_cast<uintptr_t>(&plan.cells[i]);
		}
	}
	plan_derived(s, plan, owner_together);
	for (uint32_t i = 0; i < s.inband && i < USDTPROF_INBAND; i++)
		s.clock_args[i] = {0, USDTPROF_ARG_REG, kClockRegs[i], 8, 0};
	// Names are captured once per function: their parts need not be real.
	for (usdtprof_name_part &p : s.parts) {
		p.arg = {0, USDTPROF_ARG_CONST, 0, 8, 0};
		p.len = {0, USDTPROF_ARG_CONST, 0, 8, 0};
	}
	return s;
}

// The kinds of the engine's specs (but the calibration's own, skip), and
// each spec's kind: kinds already in plans keep their place, new ones are
// appended. plans holds kMaxKinds places reserved (a plan's argument
// values point into it).
void plan_kinds(const std::vector<usdtprof_probe_spec> &specs, const std::set<uint32_t> &skip,
		std::vector<KindPlan> &plans, CalibrationResult &out)
{
	out.spec_kinds.clear();
	out.native_kind = -1;
	for (uint32_t i = 0; i < specs.size(); i++) {
		if (specs[i].role != USDTPROF_ROLE_ENTRY || skip.count(i))
			continue;
		Signature sig = signature_of(specs[i]);
		auto it = std::find_if(plans.begin(), plans.end(), [&](const KindPlan &p) { return p.sig == sig; });
		if (it == plans.end()) {
			if (plans.size() == kMaxKinds)
				continue;
			plans.emplace_back();
			KindPlan &p = plans.back();
			p.sig = sig;
			p.entry = rewrite(specs[i], USDTPROF_ROLE_ENTRY, p);
			// An exit probe of the same identity, if any (the usual pair);
			// its arguments must live where the entry's do.
			usdtprof_probe_spec exit = specs[i];
			for (const usdtprof_probe_spec &s : specs)
				if (s.role == USDTPROF_ROLE_EXIT && signature_of(s) == sig) {
					exit = s;
					break;
				}
			p.exit = rewrite(exit, USDTPROF_ROLE_EXIT, p);
			it = plans.end() - 1;
		}
		out.spec_kinds[i] = int32_t(it - plans.begin());
	}
	// Exit specs (which may capture a name too) take the kind of their identity,
	// site and clock reads (one recording can hold binaries of both headers).
	for (uint32_t i = 0; i < specs.size(); i++)
		if (specs[i].role == USDTPROF_ROLE_EXIT && !out.spec_kinds.count(i) && !skip.count(i))
			for (size_t k = 0; k < plans.size(); k++)
				if (plans[k].sig.ident == specs[i].ident && plans[k].sig.nop5_site == specs[i].nop5_site &&
				    plans[k].sig.inband == specs[i].inband) {
					out.spec_kinds[i] = int32_t(k);
					break;
				}
	for (size_t k = 0; k < plans.size(); k++)
		if (plans[k].sig.ident == USDTPROF_IDENT_NATIVE) {
			out.native_kind = int32_t(k);
			break;
		}
}

uint64_t file_offset(const std::vector<Mapping> &maps, Site site, std::string &binary)
{
	uint64_t addr = reinterpret_cast<uintptr_t>(site);
	auto m = mapping_for(maps, addr);
	if (!m || m->path.empty())
		return 0;
	binary = m->path;
	return addr - m->start + m->offset;
}

// Attaches the sites of the kinds from `from` on, entry and exit programs
// (and, with the first kinds, the roots'); the specs added go into own.
Result<void> attach_plans(Engine &engine, const std::vector<KindPlan> &plans, size_t from, std::set<uint32_t> &own)
{
	auto maps = read_proc_maps(getpid());
	if (!maps)
		return maps.error();
	usdtprof_probe_spec root{};
	root.ident = USDTPROF_IDENT_NATIVE;
	root.args[0] = {0, USDTPROF_ARG_REG, USDTPROF_REG_DI, 8, 0};
	for (usdtprof_role role : {USDTPROF_ROLE_EXIT, USDTPROF_ROLE_ENTRY}) {
		bool exit = role == USDTPROF_ROLE_EXIT;
		std::vector<UprobeSite> sites;
		std::string binary;
		root.role = role;
		if (from == 0) {
			auto root_index = engine.add_spec(root);
			if (!root_index)
				return root_index.error();
			own.insert(*root_index);
			sites.push_back({file_offset(*maps, exit ? usdtprof_cal_exit_root : usdtprof_cal_enter_root,
						     binary),
					 0, *root_index});
		}
		for (size_t k = from; k < plans.size(); k++) {
			auto index = engine.add_spec(exit ? plans[k].exit : plans[k].entry);
			if (!index)
				return index.error();
			own.insert(*index);
			uint64_t offset = file_offset(*maps, exit ? kExitSites[k] : kEnterSites[k], binary);
			sites.push_back({offset ? offset + (plans[k].sig.nop5_site ? kSiteNop5Offset : 0) : 0, 0, *index});
		}
		for (const UprobeSite &s : sites)
			if (!s.offset)
				return Error{"cannot find usdtprof's own code to calibrate the probe cost"};
		if (auto r = engine.attach_own(role, binary, sites); !r)
			return r;
	}
	return {};
}

// Work of n loop iterations (0 but in the diagnostic below).
__attribute__((noinline)) void work(long n)
{
	for (long i = 0; i < n; i++)
		asm volatile("" ::: "memory");
}

uint64_t monotonic_ns()
{
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

// A kind's probe hit: with its clock reads as usdtprof.h's probes pass them
// (the read before the hit, the previous hit's two, and with the current
// header what the last of those took, read twice) when it takes them
// (clock), its arguments as they are otherwise.
struct ClockReads {
	uint32_t reads; // USDTPROF_INBAND or USDTPROF_INBAND_OLD
	uint64_t before = 0, after = 0, read_ns = 0;
};
inline __attribute__((always_inline)) void hit(Site site, uint64_t a, uint64_t b, uint64_t c, uint64_t d,
						 ClockReads *clock)
{
	if (!clock)
		return site(a, b, c, d, 0);
	uint64_t before = monotonic_ns();
	site(a, before, clock->before, clock->after, clock->read_ns);
	clock->before = before;
	if (clock->reads < USDTPROF_INBAND) {
		clock->after = monotonic_ns();
		return;
	}
	uint64_t first = monotonic_ns();
	clock->after = monotonic_ns();
	clock->read_ns = clock->after - first;
}

// A parent's leaves, in a frame below the parent's as in real code: an entry
// at the parent's site from the parent's own frame would prove the parent
// gone (the dead-frame repair of native probes).
__attribute__((noinline)) void run_leaves(Site enter, Site exit, uint64_t a, uint64_t b, uint64_t c, uint64_t d, long n,
					  ClockReads *clock)
{
	for (int j = 0; j < kLeaves; j++) {
		hit(enter, a, b, c, d, clock);
		// A kind measured in band calibrates what a gap between two hits
		// holds beside the program's own code: the reads' halves and their
		// stores, nothing else (a call of work(0) was ~8 ns more than a
		// target's gap held; docs/benchmarks.md).
		if (n || !clock)
			work(n);
		hit(exit, a, b, c, d, clock);
	}
	asm volatile("" ::: "memory"); // not a tail call: the frame stays below the parent's
}

// One batch of one kind, under a root of its own: parents calling leaves;
// with work, each leaf does n iterations and each parent n of its own
// around its leaves (the caller cost solves out as without).
void run_batch(const KindPlan &p, size_t k, uint64_t root_id, long n = 0)
{
	Site enter = kEnterSites[k], exit = kExitSites[k];
	uint64_t a = p.values[0], b = p.values[1], c = p.values[2], d = p.values[3];
	ClockReads reads{p.sig.inband}, *clock = p.sig.inband ? &reads : nullptr;
	usdtprof_cal_enter_root(root_id, 0, 0, 0, 0);
	for (int i = 0; i < kParents; i++) {
		hit(enter, a, b, c, d, clock);
		work(n / 2);
		run_leaves(enter, exit, a, b, c, d, n, clock);
		work(n - n / 2);
		hit(exit, a, b, c, d, clock);
	}
	usdtprof_cal_exit_root(root_id, 0, 0, 0, 0);
}

// A diagnostic (docs/benchmarks.md, "Why parents miss"): with USDTPROF_DEBUG
// set, USDTPROF_CAL_WORK=N gives every odd batch N iterations of work in
// each leaf and parent, to compare the caller cost of code shaped like a
// target's with that of empty calls run beside them.
long debug_work()
{
	const char *w = getenv("USDTPROF_CAL_WORK");
	return getenv("USDTPROF_DEBUG") && w ? std::max(0L, atol(w)) : 0;
}

// The measured self time of a record: on-CPU when the switch hook splits it,
// so that a preempted batch does not count its wait; less its probe time
// measured in band (what is left to calibrate of a probe that passes clock
// reads is what they leave out).
double self_of(const PathStats &s, bool offcpu_hook)
{
	uint64_t self = offcpu_hook ? s.self_ns - s.self_offcpu_ns : s.self_ns;
	return double(self - std::min(self, s.probe_ns));
}

// USDTPROF_DEBUG: a kind's estimators and every batch's costs, by place.
void print_batches(const ProbeCost &cost, const std::vector<double> &own, const std::vector<double> &caller, int rounds)
{
	auto mean = [](const std::vector<double> &v) {
		double sum = 0;
		for (double x : v)
			sum += x;
		return v.empty() ? 0 : sum / double(v.size());
	};
	fprintf(stderr,
		"calibration %s (%d rounds): own p10 %.1f p25 %.1f p50 %.1f mean %.1f min %.1f; caller p10 %.1f "
		"p25 %.1f p50 %.1f mean %.1f min %.1f\n",
		cost.kind.c_str(), rounds, percentile(own, 0.1), percentile(own, 0.25), cost.own_ns, mean(own),
		percentile(own, 0), percentile(caller, 0.1), percentile(caller, 0.25), cost.caller_ns, mean(caller),
		percentile(caller, 0));
	for (size_t i = 0; i < own.size(); i++) // by place: the first rounds in the order they ran
		fprintf(stderr, "calibration batch %s %zu: own %.1f caller %.1f\n", cost.kind.c_str(), i, own[i],
			caller[i]);
}

} // namespace

double percentile(std::vector<double> v, double q)
{
	if (v.empty())
		return 0;
	std::sort(v.begin(), v.end());
	double pos = q * double(v.size() - 1);
	size_t lo = size_t(pos);
	size_t hi = std::min(lo + 1, v.size() - 1);
	return v[lo] + (v[hi] - v[lo]) * (pos - double(lo));
}

CostEstimate estimate_cost(const std::vector<double> &per_batch)
{
	CostEstimate e;
	if (per_batch.empty())
		return e;
	e.cost_ns = percentile(per_batch, 0.5);
	e.spread_ns = (percentile(per_batch, 0.9) - percentile(per_batch, 0.1)) / 2;
	return e;
}

PlannedKinds plan_calibration_kinds(const std::vector<usdtprof_probe_spec> &specs)
{
	std::vector<KindPlan> plans;
	plans.reserve(kMaxKinds); // argument values point into them
	CalibrationResult out;
	plan_kinds(specs, {}, plans, out);
	PlannedKinds planned{{}, out.spec_kinds};
	for (const KindPlan &p : plans)
		planned.names.push_back(kind_name(p.sig));
	return planned;
}

struct Calibrator::Plans {
	std::vector<KindPlan> kinds;	// kMaxKinds reserved: argument values point into them
	std::vector<int> rounds;	// per kind, the rounds it ran
	std::set<uint32_t> own_specs;	// the engine's specs the calibration added
	size_t specs_planned = 0;	// the engine's specs seen by add_kinds
};

Calibrator::Calibrator(Engine &engine, bool offcpu_hook, bool trace) : engine_(engine), plans_(std::make_unique<Plans>())
{
	plans_->kinds.reserve(kMaxKinds);
	out_.calibration.offcpu_hook = offcpu_hook;
	out_.calibration.trace = trace;
}

Calibrator::~Calibrator() = default;

namespace {

uint64_t since_ns(std::chrono::steady_clock::time_point t)
{
	return uint64_t(
		std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t).count());
}

} // namespace

Result<void> Calibrator::add_kinds()
{
	Plans &p = *plans_;
	if (engine_.specs().size() == p.specs_planned)
		return {};
	auto started = std::chrono::steady_clock::now();
	size_t from = p.kinds.size();
	plan_kinds(engine_.specs(), p.own_specs, p.kinds, out_);
	p.rounds.resize(p.kinds.size(), 0);
	if (p.kinds.size() > from)
		if (auto r = attach_plans(engine_, p.kinds, from, p.own_specs); !r)
			return r;
	p.specs_planned = engine_.specs().size();
	busy_ns_ += since_ns(started);
	return {};
}

void Calibrator::run_round()
{
	Plans &p = *plans_;
	if (p.kinds.empty())
		return;
	auto started = std::chrono::steady_clock::now();
	long work_iterations = debug_work();
	for (size_t k = 0; k < p.kinds.size(); k++)
		run_batch(p.kinds[k], k, kRootId - 1); // warm-up: caches (cold after a pause), names captured
	for (int i = 0; i < kRoundBatches; i++)
		for (size_t k = 0; k < p.kinds.size(); k++) {
			int slot = (p.rounds[k] % kRounds) * kRoundBatches + i;
			run_batch(p.kinds[k], k, kRootId + uint64_t(slot) * 16 + k, slot % 2 ? work_iterations : 0);
		}
	for (int &r : p.rounds)
		r++;
	rounds_++;
	busy_ns_ += since_ns(started);
}

Result<CalibrationResult> Calibrator::finish(int min_rounds)
{
	if (auto r = add_kinds(); !r)
		return r.error();
	Plans &p = *plans_;
	if (p.kinds.empty())
		return out_;
	auto started = std::chrono::steady_clock::now();
	while (*std::min_element(p.rounds.begin(), p.rounds.end()) < min_rounds) {
		if (rounds_)
			std::this_thread::sleep_for(kRoundGap);
		run_round();
	}
	// The next exit adds the thread's path cache to the map.
	engine_.bump_flush_epoch();
	usdtprof_cal_enter_root(kFlushId, 0, 0, 0, 0);
	usdtprof_cal_exit_root(kFlushId, 0, 0, 0, 0);

	uint32_t self_tgid = uint32_t(getpid());
	std::vector<PathRecord> records = engine_.read_paths();
	std::vector<uint64_t> own_paths;
	std::map<uint64_t, const PathRecord *> child_of; // parent path -> its (only) child
	std::map<uint64_t, const PathRecord *> root_of;  // root id -> record
	for (const PathRecord &r : records) {
		if (r.stats.tgid != self_tgid)
			continue;
		own_paths.push_back(r.path);
		if (r.stats.parent && !(engine_.per_thread() && is_thread_root(r.stats.parent, self_tgid)))
			child_of[r.stats.parent] = &r;
		else
			root_of[r.stats.func] = &r;
	}
	for (size_t k = 0; k < p.kinds.size(); k++) {
		int slots = std::min(p.rounds[k], kRounds) * kRoundBatches;
		std::vector<double> own, caller;
		for (int b = 0; b < slots; b++) {
			auto root = root_of.find(kRootId + uint64_t(b) * 16 + k);
			if (root == root_of.end())
				continue;
			auto parent = child_of.find(root->second->path);
			if (parent == child_of.end())
				continue;
			auto leaf = child_of.find(parent->second->path);
			if (leaf == child_of.end() || !leaf->second->stats.calls || !parent->second->stats.calls)
				continue;
			double leaf_self = self_of(leaf->second->stats, out_.calibration.offcpu_hook) /
					   double(leaf->second->stats.calls);
			double parent_self = self_of(parent->second->stats, out_.calibration.offcpu_hook) /
					     double(parent->second->stats.calls);
			own.push_back(leaf_self);
			caller.push_back((parent_self - leaf_self) / kLeaves);
		}
		ProbeCost cost;
		cost.kind = kind_name(p.kinds[k].sig);
		cost.batches = uint32_t(own.size());
		cost.rounds = uint32_t(p.rounds[k]);
		CostEstimate o = estimate_cost(own), c = estimate_cost(caller);
		cost.own_ns = std::max(0.0, o.cost_ns);
		cost.caller_ns = std::max(0.0, c.cost_ns);
		cost.own_spread_ns = o.spread_ns;
		cost.caller_spread_ns = c.spread_ns;
		// Measured in band, a call adds one gap to its own frame and one to
		// its caller's, each holding the same reads: the leaves' gap, which
		// holds nothing else, is both (a parent's gaps hold its loop and
		// calls too, the program's own code in a target).
		if (p.kinds[k].sig.inband) {
			cost.caller_ns = cost.own_ns;
			cost.caller_spread_ns = cost.own_spread_ns;
		}
		cost.uncompensated_ns = p.kinds[k].sig.ident == USDTPROF_IDENT_NATIVE ? 0 : -1;
		if (getenv("USDTPROF_DEBUG"))
			print_batches(cost, own, caller, p.rounds[k]);
		if (int(cost.batches) < slots / 2) {
			engine_.forget_own_records(own_paths);
			return Error{"probe cost calibration: only " + std::to_string(cost.batches) + " of " +
				     std::to_string(slots) + " batches were recorded"};
		}
		out_.calibration.kinds.push_back(cost);
	}
	engine_.forget_own_records(own_paths);
	out_.calibration.cost_ns = busy_ns_ + since_ns(started);
	return out_;
}

Result<CalibrationResult> calibrate(Engine &engine, bool offcpu_hook, bool trace)
{
	Calibrator c(engine, offcpu_hook, trace);
	return c.finish(kCalibrationRounds);
}

} // namespace usdtprof
