#include <catch2/catch.hpp>

#include <cstring>
#include <string>

#include "engine/calibration.h"
#include "engine/derived_objects.h"
#include "target/presets.h"

using namespace usdtprof;

TEST_CASE("calibration: a cost is the median of its batches, which an interrupted batch does not move", "[calibration]")
{
	// 95 batches of 480 ns a hit and one that an interrupt hit (+9.6 us over
	// its 16 parents: +600 ns a call): the mean would read ~6 ns high, the
	// median reads the hits.
	std::vector<double> batches(95, 480.0);
	batches.push_back(1080);
	CostEstimate e = estimate_cost(batches);
	CHECK(e.cost_ns == 480);
	CHECK(e.spread_ns == 0);
	// Two speed states (this host's ~290 and ~480 ns a hit), 40 and 56
	// batches: the median is the state most batches saw, the spread says
	// the states are ~190 ns apart.
	std::vector<double> states(40, 290.0);
	states.insert(states.end(), 56, 480.0);
	CostEstimate s = estimate_cost(states);
	CHECK(s.cost_ns == 480);
	CHECK(s.spread_ns == Approx((480 - 290) / 2.0));
}

TEST_CASE("calibration: one batch, none, and percentiles between ranks", "[calibration]")
{
	CHECK(estimate_cost({}).cost_ns == 0);
	CHECK(estimate_cost({}).spread_ns == 0);
	CostEstimate one = estimate_cost({412.5});
	CHECK(one.cost_ns == 412.5);
	CHECK(one.spread_ns == 0);
	CHECK(estimate_cost({300, 310, 320, 330}).cost_ns == Approx(315));
	CHECK(percentile({10, 20, 30, 40, 50}, 0.1) == Approx(14));
	CHECK(percentile({50, 10, 40, 20, 30}, 0.9) == Approx(46));
	CHECK(percentile({7}, 0.9) == 7);
}

namespace {

template <typename T> T load(uint64_t address)
{
	T v;
	memcpy(&v, reinterpret_cast<const void *>(address), sizeof(v));
	return v;
}

} // namespace

// bpf/identity.bpf.h's derived_value, followed by hand through the objects
// the calibration makes: every read lands in them, the code proves the
// argument, it is a function's (not keyed by its caller) and its function
// keeps the code's qualified name (not renamed): the path a target's usual
// hit takes, at its cost.
TEST_CASE("calibration: CPython's derived identity reads objects that prove, as a target's hit does", "[calibration]")
{
	const usdtprof_derived &d = kPython311Qualname;
	DerivedObjects o;
	const uint64_t proved = 0x7fff12345679; // the value the calibration passes as the name argument
	uint64_t frame = place_derived_objects(d, proved, o);
	uint64_t code = load<uint64_t>(frame + d.object), function = load<uint64_t>(frame + d.func);
	REQUIRE(code == reinterpret_cast<uintptr_t>(o.code.data()));
	REQUIRE(function == reinterpret_cast<uintptr_t>(o.function.data()));
	REQUIRE(d.window >= 0);
	REQUIRE(size_t(d.window) + USDTPROF_DERIVED_WINDOW <= sizeof(o.code));
	CHECK(load<uint64_t>(code + d.proof) + d.text == proved);
	CHECK((load<uint32_t>(code + d.code_flags) & d.function_flags) != 0);
	CHECK(load<int32_t>(code + d.first_line) == 1);
	uint64_t qualname = load<uint64_t>(code + d.value);
	CHECK((load<uint8_t>(qualname + d.flags) & d.flag_mask) == d.flag_mask);
	CHECK(std::string(reinterpret_cast<const char *>(qualname + d.text)) == "calibration");
	CHECK(load<uint64_t>(function + d.func_qualname) == qualname);
	CHECK(load<uint64_t>(function + d.func_qualname + 8) == code);
}

// bpf/identity.bpf.h's owner_verdict, followed by hand through the objects
// the calibration makes for Ruby 3.1's probes, from each place a site finds
// its base: every read lands in them and reaches a method entry whose owner
// is the class the probe names (Foo#m, the usual hit), without the second
// register's try.
TEST_CASE("calibration: Ruby's derived owner reads reach a method entry of the class the probe names",
	  "[calibration]")
{
	for (uint32_t from : {USDTPROF_FROM_EC, USDTPROF_FROM_ENTRY, USDTPROF_FROM_SLOT_ENTRY, USDTPROF_FROM_SLOT_EC}) {
		CAPTURE(from);
		usdtprof_derived d = kRuby31MethodOwner;
		d.from = from;
		d.slot = from == USDTPROF_FROM_SLOT_ENTRY || from == USDTPROF_FROM_SLOT_EC ? 0x58 : 0;
		OwnerObjects o;
		OwnerPlace at = place_owner_objects(d, o);
		REQUIRE(at.klass == reinterpret_cast<uintptr_t>(o.klass.data()));
		uint64_t base = at.base;
		if (from == USDTPROF_FROM_SLOT_ENTRY || from == USDTPROF_FROM_SLOT_EC)
			base = load<uint64_t>(base + d.slot);
		uint64_t me = base;
		if (from == USDTPROF_FROM_EC || from == USDTPROF_FROM_SLOT_EC) {
			uint64_t frame = load<uint64_t>(base + d.object);
			REQUIRE(frame == reinterpret_cast<uintptr_t>(o.control_frame.data()));
			uint64_t ep = load<uint64_t>(frame + d.ep);
			me = load<uint64_t>(ep + d.me);
		}
		REQUIRE(me == reinterpret_cast<uintptr_t>(o.method_entry.data()));
		CHECK((load<uint64_t>(me) & d.imemo_mask) == d.imemo_ment);
		CHECK((load<uint64_t>(me) & d.imemo_mask) != d.imemo_svar);
		CHECK(load<uint64_t>(me + d.owner) == at.klass);
		uint64_t singleton = load<uint64_t>(at.klass + d.value);
		CHECK(singleton != 0);
		CHECK(singleton != at.klass);
	}
}

namespace {

// A native probe of our header at a 5-byte nop: its name in a register, or
// on the stack (where a compiler may put it at one site and not another).
usdtprof_probe_spec native_site(usdtprof_role role, uint32_t inband, usdtprof_arg_kind name_kind)
{
	usdtprof_probe_spec s{};
	s.role = role;
	s.ident = USDTPROF_IDENT_NATIVE;
	s.nargs = 1;
	s.nop5_site = 1;
	s.inband = inband;
	s.args[0] = {name_kind == USDTPROF_ARG_REG ? 0 : 16, uint32_t(name_kind), USDTPROF_REG_DI, 8, 0};
	return s;
}

} // namespace

// Binaries of both headers in one recording: an exit whose signature no
// entry has (its name read from memory) takes the kind of its own clock
// reads, not the first kind of its identity and site (stop 44's fix).
TEST_CASE("calibration: an exit no entry matched takes the kind of its own clock reads", "[calibration]")
{
	const std::vector<usdtprof_probe_spec> specs = {
		native_site(USDTPROF_ROLE_ENTRY, USDTPROF_INBAND, USDTPROF_ARG_REG),
		native_site(USDTPROF_ROLE_ENTRY, USDTPROF_INBAND_OLD, USDTPROF_ARG_REG),
		native_site(USDTPROF_ROLE_EXIT, USDTPROF_INBAND_OLD, USDTPROF_ARG_REG_DEREF),
		native_site(USDTPROF_ROLE_EXIT, USDTPROF_INBAND, USDTPROF_ARG_REG_DEREF),
	};
	PlannedKinds planned = plan_calibration_kinds(specs);
	REQUIRE(planned.names == std::vector<std::string>{"native nop5 in-band", "native nop5 in-band (older header)"});
	REQUIRE(planned.spec_kinds.size() == 4);
	CHECK(planned.spec_kinds.at(0) == 0);
	CHECK(planned.spec_kinds.at(1) == 1);
	CHECK(planned.spec_kinds.at(2) == 1);
	CHECK(planned.spec_kinds.at(3) == 0);
}
