/* usdtprof probe header for C and C++ programs.
 *
 *   USDTPROF_ENTER("parse");  ...  USDTPROF_EXIT("parse");   (C and C++)
 *   USDTPROF_FUNC();          scope named after the enclosing function (C++)
 *   USDTPROF_SCOPE("name");   named scope (C++)
 *   USDTPROF_TASK_CREATE(id); USDTPROF_TASK_BEGIN(id); USDTPROF_TASK_END(id);
 *       work run between BEGIN and END (on any thread) for the task with this
 *       64-bit id is attributed under the call path that created it
 *
 * Each macro is a USDT probe (sys/sdt.h) in provider `usdtprof`, guarded by
 * its semaphore: while no profiler is attached the cost is one load and one
 * not-taken branch. Argument 0 is the address of the name string (or the
 * task id), so the profiler identifies a function without reading strings in
 * the kernel; the same literal in ENTER and EXIT names the same function.
 *
 * While a profiler is attached, each probe also reads CLOCK_MONOTONIC right
 * before it (argument 1) and right after it (kept per thread), and passes
 * the previous probe's two reads (arguments 2 and 3) with the next one: the
 * profiler then knows what each hit took, as the program's own clock saw
 * it, and takes exactly that out of the times it reports (docs/design.md,
 * "Probe time measured in band"). The read after is made twice, back to
 * back: what the second took (argument 4) is what the reads themselves add
 * to the code between two probes, measured at the host's speed of the
 * moment. Three clock reads a hit: ~75 ns on our host.
 */
#ifndef USDTPROF_USDTPROF_H
#define USDTPROF_USDTPROF_H

#define _SDT_HAS_SEMAPHORES 1
/* Keep every argument in a register: a "8@%reg" spec is the cheapest for the
 * kernel side to read. */
#define STAP_SDT_ARG_CONSTRAINT r
#include <sys/sdt.h>
/* On x86-64 each site is `nop` then a 5-byte nop (the sequence libbpf's usdt.h
 * also emits). usdtprof attaches at the 5-byte nop, which kernels that optimize
 * uprobes (Linux 6.18 has it) turn into a call after its first hit: a hit then
 * costs about a quarter of a breakpoint's (docs/benchmarks.md). Tools that
 * attach at the note's address hit the 1-byte nop as before. This applies to
 * every sys/sdt.h probe that follows in the translation unit; define
 * USDTPROF_SINGLE_NOP before including this header to keep sys/sdt.h's nop. */
#if defined(__x86_64__) && !defined(USDTPROF_SINGLE_NOP)
#undef _SDT_NOP
#define _SDT_NOP nop; .nops 5
#endif

/* One semaphore per probe and per binary (hidden), raised by the kernel while
 * a profiler is attached. Weak, so every translation unit may include this. */
#define USDTPROF_SEMAPHORE_(probe)                                                   \
	__attribute__((weak, visibility("hidden"), section(".probes"))) volatile         \
	unsigned short usdtprof_##probe##_semaphore
USDTPROF_SEMAPHORE_(enter);
USDTPROF_SEMAPHORE_(exit);
USDTPROF_SEMAPHORE_(task_create);
USDTPROF_SEMAPHORE_(task_begin);
USDTPROF_SEMAPHORE_(task_end);

__extension__ typedef unsigned long long usdtprof_u64_;

/* The calling thread's last probe: its clock reads before and after it. One
 * per thread in the whole process (weak, default visibility: the program and
 * every library built with this header share it), so that a call from one
 * binary into another keeps the chain of reads unbroken. */
struct usdtprof_clock_reads_ {
	usdtprof_u64_ before, after;
};
__attribute__((weak, visibility("default"))) __thread struct usdtprof_clock_reads_ usdtprof_clock_reads_;
/* What the thread's last read after a probe took: a variable of its own, so
 * that binaries built with an older header (whose pair has no room for it)
 * share the pair as before. */
__attribute__((weak, visibility("default"))) __thread usdtprof_u64_ usdtprof_clock_read_ns_;

/* libc's clock_gettime (the vDSO's, ~10 ns), declared under a name of its
 * own so that neither <time.h> nor a POSIX feature macro is needed (strict
 * -std=c99 and c11 programs lack both) and no declaration of the program's
 * can conflict. CLOCK_MONOTONIC is 1 on Linux, the kernel's
 * bpf_ktime_get_ns() clock. */
struct usdtprof_timespec_ {
	long tv_sec, tv_nsec;
};
#ifdef __cplusplus
extern "C"
#endif
	int
	usdtprof_clock_gettime_(int clock, struct usdtprof_timespec_ *ts) __asm__("clock_gettime");

static __inline__ __attribute__((always_inline)) usdtprof_u64_ usdtprof_clock_(void)
{
	struct usdtprof_timespec_ ts;
	usdtprof_clock_gettime_(1, &ts);
	return (usdtprof_u64_)ts.tv_sec * 1000000000u + (usdtprof_u64_)ts.tv_nsec;
}

/* A probe with its argument and the clock reads (see above). */
#define USDTPROF_PROBE_(probe, type, arg)                                            \
	do {                                                                             \
		if (__builtin_expect(usdtprof_##probe##_semaphore, 0)) {                     \
			type usdtprof_arg_ = (type)(arg);                                        \
			usdtprof_u64_ usdtprof_before_ = usdtprof_clock_();                      \
			STAP_PROBE5(usdtprof, probe, usdtprof_arg_, usdtprof_before_,            \
				    usdtprof_clock_reads_.before, usdtprof_clock_reads_.after,        \
				    usdtprof_clock_read_ns_);                                         \
			usdtprof_clock_reads_.before = usdtprof_before_;                         \
			usdtprof_u64_ usdtprof_first_ = usdtprof_clock_();                       \
			usdtprof_clock_reads_.after = usdtprof_clock_();                         \
			usdtprof_clock_read_ns_ = usdtprof_clock_reads_.after - usdtprof_first_; \
		}                                                                            \
	} while (0)

#define USDTPROF_ENTER(name) USDTPROF_PROBE_(enter, const char *, name)
#define USDTPROF_EXIT(name) USDTPROF_PROBE_(exit, const char *, name)
#define USDTPROF_TASK_PROBE_(probe, id) USDTPROF_PROBE_(probe, usdtprof_u64_, id)
#define USDTPROF_TASK_CREATE(id) USDTPROF_TASK_PROBE_(task_create, id)
#define USDTPROF_TASK_BEGIN(id) USDTPROF_TASK_PROBE_(task_begin, id)
#define USDTPROF_TASK_END(id) USDTPROF_TASK_PROBE_(task_end, id)

#ifdef __cplusplus
namespace usdtprof {
/* Fires EXIT from its destructor, so the exit is seen during exception
 * unwinding too. */
class Scope {
public:
	explicit Scope(const char *name) noexcept : name_(name) { USDTPROF_ENTER(name_); }
	~Scope() { USDTPROF_EXIT(name_); }
	Scope(const Scope &) = delete;
	Scope &operator=(const Scope &) = delete;

private:
	const char *name_;
};
} // namespace usdtprof

#define USDTPROF_CAT2_(a, b) a##b
#define USDTPROF_CAT_(a, b) USDTPROF_CAT2_(a, b)
/* __PRETTY_FUNCTION__ is one static string per function; usdtprof reports it
 * as the qualified name without return type and parameters. */
#define USDTPROF_FUNC() ::usdtprof::Scope USDTPROF_CAT_(usdtprof_scope_, __LINE__)(__PRETTY_FUNCTION__)
#define USDTPROF_SCOPE(name) ::usdtprof::Scope USDTPROF_CAT_(usdtprof_scope_, __LINE__)(name)
#endif

#endif
