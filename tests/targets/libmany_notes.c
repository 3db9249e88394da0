/* libsec_probe.so with 200,000 more USDT notes (about 14 MB of them): a
 * library any user can write and load, naming usdtprof:enter at one
 * instruction 200,000 times. usdtprof must read and attach a bounded number
 * of them (docs/security.md, "Caps"), not one uprobe and one spec per note. */
#include "libsec_probe.c"

/* The notes sys/sdt.h writes (provider, name, argument spec; no semaphore),
 * repeated; the instruction they name is never run. */
__asm__("	.text\n"
	"many_notes_site: nop\n"
	"	.rept 200000\n"
	"	.pushsection .note.stapsdt,\"?\",\"note\"\n"
	"	.balign 4\n"
	"	.4byte 992f-991f, 994f-993f, 3\n"
	"991:	.asciz \"stapsdt\"\n"
	"992:	.balign 4\n"
	"993:	.8byte many_notes_site, _.stapsdt.base, 0\n"
	"	.asciz \"usdtprof\"\n"
	"	.asciz \"enter\"\n"
	"	.asciz \"8@%rdi\"\n"
	"994:	.balign 4\n"
	"	.popsection\n"
	"	.endr\n");
