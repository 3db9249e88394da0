#include "engine/steal_clock.h"

#include <cstring>
#include <optional>

#include <bpf/btf.h>

namespace usdtprof {

namespace {

// The offset of the variable `name` in the per-CPU section, if its type is
// named `type_name` (any type when nullptr).
std::optional<uint32_t> percpu_offset(const btf *vmlinux, const char *name, const char *type_name)
{
	int sec = btf__find_by_name_kind(vmlinux, ".data..percpu", BTF_KIND_DATASEC);
	if (sec < 0)
		return std::nullopt;
	const btf_type *t = btf__type_by_id(vmlinux, uint32_t(sec));
	const btf_var_secinfo *v = btf_var_secinfos(t);
	for (uint16_t i = 0; i < btf_vlen(t); i++, v++) {
		const btf_type *var = btf__type_by_id(vmlinux, v->type);
		if (!var || !btf_is_var(var) || std::strcmp(btf__name_by_offset(vmlinux, var->name_off), name) != 0)
			continue;
		if (type_name) {
			const btf_type *type = btf__type_by_id(vmlinux, var->type);
			if (!type || !btf_is_struct(type) ||
			    std::strcmp(btf__name_by_offset(vmlinux, type->name_off), type_name) != 0)
				return std::nullopt;
		}
		return v->offset;
	}
	return std::nullopt;
}

} // namespace

int64_t steal_time_from_rq(const btf *vmlinux)
{
	if (!vmlinux)
		return 0;
	auto steal = percpu_offset(vmlinux, "steal_time", "kvm_steal_time");
	auto rq = percpu_offset(vmlinux, "runqueues", "rq");
	if (!steal || !rq)
		return 0;
	return int64_t(*steal) - int64_t(*rq);
}

int64_t steal_time_from_rq()
{
	btf *vmlinux = btf__load_vmlinux_btf();
	if (!vmlinux)
		return 0;
	int64_t distance = steal_time_from_rq(vmlinux);
	btf__free(vmlinux);
	return distance;
}

} // namespace usdtprof
