/* Context switches for `make bench`: two threads pass a byte back and forth
 * through pipes N times, each side inside a probed frame, so every switch is
 * one of a profiled thread. Writes the mean ns per round trip to OUT. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <usdtprof/usdtprof.h>

static int to_pong[2], to_ping[2];
static unsigned long rounds;

static void *pong(void *arg)
{
	char c;
	(void)arg;
	USDTPROF_ENTER("pong");
	for (unsigned long i = 0; i < rounds; i++)
		if (read(to_pong[0], &c, 1) != 1 || write(to_ping[1], &c, 1) != 1)
			break;
	USDTPROF_EXIT("pong");
	return NULL;
}

int main(int argc, char **argv)
{
	struct timespec a, b;
	pthread_t t;
	char c = 'x';
	FILE *out;

	rounds = argc > 1 ? strtoul(argv[1], NULL, 10) : 100000;
	out = argc > 2 ? fopen(argv[2], "w") : stdout;
	if (!out || pipe(to_pong) || pipe(to_ping))
		return 1;
	pthread_create(&t, NULL, pong, NULL);
	clock_gettime(CLOCK_MONOTONIC, &a);
	USDTPROF_ENTER("ping");
	for (unsigned long i = 0; i < rounds; i++)
		if (write(to_pong[1], &c, 1) != 1 || read(to_ping[0], &c, 1) != 1)
			return 1;
	USDTPROF_EXIT("ping");
	clock_gettime(CLOCK_MONOTONIC, &b);
	pthread_join(t, NULL);
	fprintf(out, "%.1f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / rounds);
	return fclose(out) != 0;
}
