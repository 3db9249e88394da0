// A test's BPF program over a text (tests/bpf/*.bpf.c, which keeps the text
// in its .bss as `text` and `text_len`): its skeleton owned and loaded, the
// text written, and one run of the program by the kernel (BPF_PROG_TEST_RUN).
#pragma once

#include <catch2/catch.hpp>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <cstring>
#include <memory>
#include <string_view>

namespace usdtprof::test {

template <auto Destroy> struct DestroySkeleton {
	template <typename Skeleton> void operator()(Skeleton *skel) const { Destroy(skel); }
};

// A skeleton destroyed by its own __destroy (Destroy).
template <typename Skeleton, auto Destroy> using OwnedSkeleton = std::unique_ptr<Skeleton, DestroySkeleton<Destroy>>;

// skel, from its __open_and_load(): the test fails if it did not load.
template <auto Destroy, typename Skeleton> OwnedSkeleton<Skeleton, Destroy> require_loaded(Skeleton *skel)
{
	OwnedSkeleton<Skeleton, Destroy> owned(skel);
	REQUIRE(owned);
	return owned;
}

// text in the program's .bss, NUL-padded, its length counting the NUL as
// bpf_probe_read_user_str() counts a string the engine read.
template <typename Bss> void put_text(Bss &bss, std::string_view text)
{
	REQUIRE(text.size() < sizeof(bss.text));
	memset(bss.text, 0, sizeof(bss.text));
	memcpy(bss.text, text.data(), text.size());
	bss.text_len = long(text.size()) + 1;
}

// One run of prog by the kernel; it must return 0.
inline void run_once(const bpf_program *prog)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts);
	REQUIRE(bpf_prog_test_run_opts(bpf_program__fd(prog), &opts) == 0);
	REQUIRE(opts.retval == 0);
}

} // namespace usdtprof::test
