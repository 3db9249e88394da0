/* Names a hostile program chooses, for the escaping tests: its process name,
 * a thread's name and a function's name carry ESC sequences (window title,
 * clear screen, colour), CR, LF followed by a fake line, a raw C1 CSI byte,
 * invalid UTF-8, and, well-formed in UTF-8, a C1 CSI (U+009B) and a
 * right-to-left override (U+202E). With --wait, the names are set before
 * "ready" is printed. */
#include <pthread.h>
#include <sys/prctl.h>
#include <usdtprof/usdtprof.h>
#include "spin.h"

#define MAIN_FUNCTION "main\r\nfake line\xc2\x9b" "31m\xe2\x80\xae" "reversed"
#define EVIL_FUNCTION "evil\x1b]0;pwned\x07\x1b[2J\r\nfake line\xff\xfe\x9b" "31m"

static void *worker(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "w\x1b[2J\r\nfake\xff");
	for (int i = 0; i < 3; i++) {
		USDTPROF_ENTER(EVIL_FUNCTION);
		spin_us(200);
		USDTPROF_EXIT(EVIL_FUNCTION);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t thread;
	prctl(PR_SET_NAME, "p\x1b[31m\r\nfake\x9b\xff");
	hold_if_asked(argc, argv);
	pthread_create(&thread, NULL, worker, NULL);
	pthread_join(thread, NULL);
	USDTPROF_ENTER(MAIN_FUNCTION);
	spin_us(100);
	USDTPROF_EXIT(MAIN_FUNCTION);
	return 0;
}
