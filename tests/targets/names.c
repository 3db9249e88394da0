/* Names that stress reporting: one of 6000 characters, one with the folded
 * format's separators in it. Each is called twice. */
#include <string.h>
#include <usdtprof/usdtprof.h>
#include "spin.h"

#define X10(s) s s s s s s s s s s
#define X100(s) X10(X10(s))
/* 6000 characters: "abcdef" repeated 1000 times. */
static const char long_name[] = X10(X100("abcdef"));

int main(void)
{
	for (int i = 0; i < 2; i++) {
		USDTPROF_ENTER(long_name);
		USDTPROF_EXIT(long_name);
		USDTPROF_ENTER("a;b%c");
		spin_us(100); /* folded output omits paths under 1 us */
		USDTPROF_EXIT("a;b%c");
	}
	return 0;
}
