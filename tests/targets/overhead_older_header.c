/* tests/targets/overhead.c built with the probes of usdtprof.h before
 * 2026-12-05, which pass three clock reads, not four. */
#define OVERHEAD_OLDER_HEADER
#include "overhead.c"
