/* What the probes of other images and other processes do while recording:
 *   fork:        main -> parent_fn forks; the child calls child_fn 3 times and
 *                exits; parent_fn waits for it, calls parent_leaf, exits.
 *   exec PROG..: main -> before_exec execs PROG with its arguments (no EXIT).
 *   after-exec:  main -> after_exec: for exec of this program.
 *   quiet-exec PROG..: execs PROG with its arguments before any probe fires.
 *   children N:  main -> parent_fn forks N children; each prints "child PID",
 *                waits for its SIGUSR1, calls child_fn 3 times and exits;
 *                parent_fn waits for them all, calls parent_leaf, exits.
 *   zombies N:   as children, but parent_fn leaves them unreaped (zombies
 *                once they exit) until its own SIGUSR1, then reaps them.
 * Every probed function spins 1 ms. */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include <usdtprof/usdtprof.h>
#include "spin.h"

static void call(const char *name)
{
	USDTPROF_ENTER(name);
	spin_us(1000);
	USDTPROF_EXIT(name);
}

/* A child of "children": held until SIGUSR1 (blocked since before the fork:
 * none is lost), then its calls. */
static void child(sigset_t *unblocked)
{
	printf("child %d\n", (int)getpid());
	fflush(stdout);
	go_signal = 0;
	while (!go_signal)
		sigsuspend(unblocked);
	for (int i = 0; i < 3; i++)
		call("child_fn");
	_exit(0);
}

static void fork_children(int n, int hold_zombies)
{
	sigset_t old;
	block_go_signal(&old);
	for (int i = 0; i < n; i++)
		if (fork() == 0)
			child(&old);
	if (hold_zombies) {
		go_signal = 0;
		while (!go_signal)
			sigsuspend(&old);
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	while (wait(NULL) > 0)
		;
}

int main(int argc, char **argv)
{
	int arg = hold_if_asked(argc, argv);
	const char *mode = argc > arg ? argv[arg] : "fork";
	if (strcmp(mode, "quiet-exec") == 0 && argc > arg + 1) {
		execv(argv[arg + 1], argv + arg + 1);
		return 127;
	}
	USDTPROF_ENTER("main");
	if (strcmp(mode, "fork") == 0) {
		USDTPROF_ENTER("parent_fn");
		spin_us(1000);
		pid_t pid = fork();
		if (pid == 0) {
			for (int i = 0; i < 3; i++)
				call("child_fn");
			_exit(0);
		}
		waitpid(pid, NULL, 0);
		call("parent_leaf");
		USDTPROF_EXIT("parent_fn");
	} else if (strcmp(mode, "children") == 0 || strcmp(mode, "zombies") == 0) {
		USDTPROF_ENTER("parent_fn");
		fork_children(argc > arg + 1 ? atoi(argv[arg + 1]) : 2, strcmp(mode, "zombies") == 0);
		call("parent_leaf");
		USDTPROF_EXIT("parent_fn");
	} else if (strcmp(mode, "exec") == 0 && argc > arg + 1) {
		USDTPROF_ENTER("before_exec");
		spin_us(1000);
		execv(argv[arg + 1], argv + arg + 1);
		return 127;
	} else {
		call("after_exec");
	}
	USDTPROF_EXIT("main");
	return 0;
}
