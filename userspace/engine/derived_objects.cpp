#include "engine/derived_objects.h"

#include <algorithm>
#include <cstring>

namespace usdtprof {

namespace {

// A field `offset` bytes into an object, if within it.
template <size_t N> void put(std::array<uint64_t, N> &object, int64_t offset, uint64_t value, size_t size = 8)
{
	if (offset < 0 || size_t(offset) + size > N * 8)
		return;
	memcpy(reinterpret_cast<char *>(object.data()) + offset, &value, size);
}

template <size_t N> uint64_t address(const std::array<uint64_t, N> &object)
{
	return reinterpret_cast<uintptr_t>(object.data());
}

} // namespace

uint64_t place_derived_objects(const usdtprof_derived &d, uint64_t proved, DerivedObjects &o)
{
	put(o.frame, d.object, address(o.code));
	put(o.code, d.proof, proved - uint64_t(int64_t(d.text)));
	put(o.code, d.value, address(o.qualname));
	if (d.first_line)
		put(o.code, d.first_line, 1, 4);
	if (d.code_flags)
		put(o.code, d.code_flags, d.function_flags, 4);
	put(o.qualname, d.flags, d.flag_mask, 1);
	size_t text = std::min<size_t>(size_t(std::max(d.text, 0)), sizeof(o.qualname) - 12);
	memcpy(reinterpret_cast<char *>(o.qualname.data()) + text, "calibration", 12);
	if (d.func_qualname) {
		put(o.frame, d.func, address(o.function));
		put(o.function, d.func_qualname, address(o.qualname));
		put(o.function, d.func_qualname + 8, address(o.code));
	}
	return address(o.frame);
}

OwnerPlace place_owner_objects(const usdtprof_derived &d, OwnerObjects &o)
{
	// The environment pointer points into its array's middle: the method
	// entry lies below it (d.me < 0).
	constexpr int64_t kEnvironmentMiddle = 32;
	uint64_t ep = address(o.environment) + kEnvironmentMiddle;
	put(o.context, d.object, address(o.control_frame));
	put(o.control_frame, d.ep, ep);
	put(o.environment, kEnvironmentMiddle + d.me, address(o.method_entry));
	put(o.method_entry, 0, d.imemo_ment);
	put(o.method_entry, d.owner, address(o.klass));
	put(o.klass, d.value, address(o.klass) + 1); // a singleton class that is not the class
	bool entry = d.from == USDTPROF_FROM_ENTRY || d.from == USDTPROF_FROM_SLOT_ENTRY;
	uint64_t reached = entry ? address(o.method_entry) : address(o.context);
	if (d.from == USDTPROF_FROM_SLOT_ENTRY || d.from == USDTPROF_FROM_SLOT_EC) {
		o.slot = reached;
		return {reinterpret_cast<uintptr_t>(&o.slot) - uint64_t(int64_t(d.slot)), address(o.klass)};
	}
	return {reached, address(o.klass)};
}

} // namespace usdtprof
