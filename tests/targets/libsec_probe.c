/* A library with probes of its own (our header's), for the security tests:
 * one copy is an attacker's, loaded by a process any user runs; another is a
 * root-owned library loaded by a root victim, whose semaphore must stay 0
 * (the kernel raises it only in a process being probed). */
#include <usdtprof/usdtprof.h>

void sec_probe_call(void)
{
	USDTPROF_ENTER("sec_probe_call");
	USDTPROF_EXIT("sec_probe_call");
}

/* This copy's semaphores, as this process sees them. */
unsigned sec_probe_semaphores(void)
{
	return usdtprof_enter_semaphore + usdtprof_exit_semaphore;
}
