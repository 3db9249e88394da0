// libFuzzer: parse_usdt_arg on arbitrary text must return a spec or an Error,
// never crash or trip a sanitizer; an accepted spec must be one the BPF side reads.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "target/usdt.h"

using namespace usdtprof;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	Result<usdtprof_arg_spec> r = parse_usdt_arg(std::string_view(reinterpret_cast<const char *>(data), size));
	if (!r)
		return 0;
	const usdtprof_arg_spec &a = *r;
	bool size_ok = a.size == 1 || a.size == 2 || a.size == 4 || a.size == 8;
	bool kind_ok = a.kind == USDTPROF_ARG_CONST || a.kind == USDTPROF_ARG_REG || a.kind == USDTPROF_ARG_REG_DEREF;
	if (!size_ok || !kind_ok || (a.kind != USDTPROF_ARG_CONST && a.reg > USDTPROF_REG_IP))
		abort();
	return 0;
}
