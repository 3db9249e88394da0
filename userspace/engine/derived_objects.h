// The objects a derived identity (CPython's frame, code and function,
// usdtprof_derived) reads in a target, made in usdtprof's own memory for its
// calibration sites: the same reads must succeed and prove there, as they do
// in the target. Left to chance (a register nobody set), they faulted, each
// fault a page-fault entry, and Python's calibrated cost per call read
// ~0.6 us above what its hits cost: small functions' times clamped to 0.
#pragma once

#include <array>
#include <cstdint>

#include <usdtprof/bpf_shared.h>

namespace usdtprof {

// Ruby 3.1's (USDTPROF_DERIVED_OWNER): an execution context whose control
// frame's environment holds a method entry owned by the class the probe's
// arguments name, as a call of one of the class's own methods has.
struct OwnerObjects {
	std::array<uint64_t, 8> context{}, control_frame{}, environment{}, method_entry{}, klass{};
	uint64_t slot = 0; // what a site whose base is in a stack slot finds there
	// The probe's arguments in one piece, as Ruby's args struct holds them
	// (class name, method name, ..., the class): calibration.cpp, plan_owner.
	std::array<uint64_t, 5> args{};
};

struct DerivedObjects {
	OwnerObjects owner;
	std::array<uint64_t, 8> frame{};
	std::array<uint64_t, 32> code{};
	std::array<uint64_t, 8> function{};
	std::array<uint64_t, 16> qualname{}; // a string object of the kind whose text is inline
};

// Lays out o as d reads it (USDTPROF_DERIVED_STRING): a frame whose code
// object proves `proved` (the value of args[d.proof_arg]: the code's name's
// text), a function's code (d.function_flags set, first line 1), run by a
// function object that keeps the code's qualified name. Returns the base
// (the frame's address) to pass in d.reg.
uint64_t place_derived_objects(const usdtprof_derived &d, uint64_t proved, DerivedObjects &o);

// Lays out o as d reads it (USDTPROF_DERIVED_OWNER, from where d.from
// says, d.slot bytes past the base for a slot): the base to pass in d.reg,
// and the class to pass as args[d.proof_arg] (the method entry's owner).
struct OwnerPlace {
	uint64_t base, klass;
};
OwnerPlace place_owner_objects(const usdtprof_derived &d, OwnerObjects &o);

} // namespace usdtprof
