#include <catch2/catch.hpp>

#include <bpf/btf.h>

#include "engine/steal_clock.h"

using namespace usdtprof;

namespace {

// A BTF with a per-CPU section holding `vars` (name, type, offset).
struct FakeKernel {
	btf *b = btf__new_empty();
	int u64 = btf__add_int(b, "unsigned long long", 8, 0);
	int steal_type = btf__add_struct(b, "kvm_steal_time", 64);
	int rq_type = btf__add_struct(b, "rq", 3584);
	int other_type = btf__add_struct(b, "kernel_cpustat", 80);
	~FakeKernel() { btf__free(b); }
	void section(std::initializer_list<std::tuple<const char *, int, uint32_t>> vars)
	{
		std::vector<int> ids;
		for (auto [name, type, offset] : vars)
			ids.push_back(btf__add_var(b, name, BTF_VAR_GLOBAL_ALLOCATED, type));
		REQUIRE(btf__add_datasec(b, ".data..percpu", 300000) > 0);
		size_t i = 0;
		for (auto [name, type, offset] : vars)
			REQUIRE(btf__add_datasec_var_info(b, ids[i++], offset, 64) == 0);
	}
};

} // namespace

TEST_CASE("steal clock: the kvm_steal_time record's distance from the runqueue, from the per-CPU section",
	  "[steal]")
{
	FakeKernel k;
	SECTION("both there: steal_time's offset minus runqueues' (this machine's 6.18: 97280 - 195776)")
	{
		k.section({{"steal_time", k.steal_type, 97280}, {"kernel_cpustat", k.other_type, 98080},
			   {"runqueues", k.rq_type, 195776}});
		CHECK(steal_time_from_rq(k.b) == -98496);
	}
	SECTION("the record after the runqueue: a positive distance")
	{
		k.section({{"runqueues", k.rq_type, 4096}, {"steal_time", k.steal_type, 8192}});
		CHECK(steal_time_from_rq(k.b) == 4096);
	}
	SECTION("not a KVM guest kernel (no steal_time): 0, nothing is read")
	{
		k.section({{"runqueues", k.rq_type, 4096}});
		CHECK(steal_time_from_rq(k.b) == 0);
	}
	SECTION("a steal_time of another type is not the record: 0")
	{
		k.section({{"steal_time", k.other_type, 64}, {"runqueues", k.rq_type, 4096}});
		CHECK(steal_time_from_rq(k.b) == 0);
	}
	SECTION("no per-CPU section, or no BTF: 0")
	{
		CHECK(steal_time_from_rq(k.b) == 0);
		CHECK(steal_time_from_rq(nullptr) == 0);
	}
	(void)k.u64;
}

TEST_CASE("steal clock: the running kernel's distance is found when it is a KVM guest with BTF", "[steal]")
{
	// usdtprof needs the kernel's BTF anyway. A distance exactly when the
	// kernel has the KVM guest's record (this project's machine has).
	btf *vmlinux = btf__load_vmlinux_btf();
	REQUIRE(vmlinux);
	bool kvm = btf__find_by_name_kind(vmlinux, "kvm_steal_time", BTF_KIND_STRUCT) > 0;
	CHECK((steal_time_from_rq(vmlinux) != 0) == kvm);
	CHECK(steal_time_from_rq() == steal_time_from_rq(vmlinux));
	btf__free(vmlinux);
}
