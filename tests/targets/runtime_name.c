/* A function named by a string the program writes at run time (in its
 * writable data, where the file holds other bytes), and one named by a
 * literal; each called twice, then the program exits. */
#include <string.h>
#include <usdtprof/usdtprof.h>

static char made_at_run_time[32];

int main(void)
{
	strcpy(made_at_run_time, "written_at_run_time");
	for (int i = 0; i < 2; i++) {
		USDTPROF_ENTER(made_at_run_time);
		USDTPROF_EXIT(made_at_run_time);
		USDTPROF_ENTER("literal");
		USDTPROF_EXIT("literal");
	}
	return 0;
}
