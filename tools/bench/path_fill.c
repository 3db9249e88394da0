/* `make bench` (path_bench): fills the kernel's call-path table. `path_fill B`
 * calls main -> f<i> -> f<j> for every i, j < B (B <= 1000, default 1000):
 * 1 + B + B^2 distinct call paths (1,001,001 at B = 1000), one call each, no
 * work inside. The names are literals ("f000" ... "f999") in one array, so
 * each has its own address (the function's id) and a name usdtprof reads
 * from the binary.
 * `path_fill B ROUNDS` (path_bench --monitor) makes the same calls ROUNDS
 * times, the same paths each time, and stops itself (SIGSTOP) after each
 * round but the last: the bench reads the table there, as a monitor interval
 * would, and resumes it (SIGCONT). */
#include <signal.h>
#include <stdlib.h>
#include <usdtprof/usdtprof.h>

#define D1(p) p "0\0" p "1\0" p "2\0" p "3\0" p "4\0" p "5\0" p "6\0" p "7\0" p "8\0" p "9\0"
#define D2(p) D1(p "0") D1(p "1") D1(p "2") D1(p "3") D1(p "4") D1(p "5") D1(p "6") D1(p "7") D1(p "8") D1(p "9")
#define D3(p) D2(p "0") D2(p "1") D2(p "2") D2(p "3") D2(p "4") D2(p "5") D2(p "6") D2(p "7") D2(p "8") D2(p "9")

static const char names[] = D3("f"); /* "f000\0f001\0...f999\0": 5 bytes each */

int main(int argc, char **argv)
{
	int b = argc > 1 ? atoi(argv[1]) : 1000;
	int rounds = argc > 2 ? atoi(argv[2]) : 1;

	if (b < 1 || b > 1000 || rounds < 1)
		return 2;
	for (int r = 0; r < rounds; r++) {
		if (r)
			raise(SIGSTOP);
		USDTPROF_ENTER("main");
		for (int i = 0; i < b; i++) {
			USDTPROF_ENTER(names + 5 * i);
			for (int j = 0; j < b; j++) {
				USDTPROF_ENTER(names + 5 * j);
				USDTPROF_EXIT(names + 5 * j);
			}
			USDTPROF_EXIT(names + 5 * i);
		}
		USDTPROF_EXIT("main");
	}
	return 0;
}
