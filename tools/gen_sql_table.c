/* Writes the SQL-shape lexer's tables (bpf/sql.bpf.h) as a C header on stdout.
 *
 * The lexer's rules are written here once, as a step over one character
 * (`step`, the rules of userspace/target/sql.cpp's sql_shape_key). This
 * program runs the step from every state the rules can reach on every
 * character, numbers the states, groups the characters that act alike in
 * every state into classes, and writes for each state and class what the
 * step emits and the state after it. The BPF lexer then walks the tables: a
 * character costs two loads and no branch on the rules, so the verifier sees
 * one path per character whatever the rules are, and a loop step can take
 * several characters (docs/design.md, "Runtime probes: identity and
 * names", the `SQL` mode).
 *
 *   gen_sql_table > sql_table.h */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What the rules keep between characters. prev and prev_sig matter only by
 * the questions the rules ask of them, so they are kept as those answers. */
struct lex {
	unsigned char in_quote, quote_closed, in_number, minus_pending, space_pending;
	unsigned char prev_ident; /* the previous character, white space included, could be in a name */
	unsigned char prev_sig;   /* the last character emitted but a space: SIG_* */
};
enum { SIG_NONE, SIG_UNARY, SIG_OTHER };

/* The emitted symbols: '?', '-', ' ', or C for the character itself. */
#define EMIT_SELF 'C'
struct emits {
	char sym[8];
	int n;
};

static int digit(int ch) { return ch >= '0' && ch <= '9'; }
static int ident(int ch)
{
	return digit(ch) || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_' || ch == '$' ||
	       ch >= 0x80;
}
/* A minus is unary after the start, an opening parenthesis, a comma or an operator. */
static int unary_before(int ch) { return ch && strchr("(,=<>+-*/%^|", ch); }

static void emit(struct lex *c, struct emits *e, int ch, char sym)
{
	int b = sym == EMIT_SELF ? ch : sym;

	e->sym[e->n++] = sym;
	if (b != ' ')
		c->prev_sig = unary_before(b) ? SIG_UNARY : SIG_OTHER;
}

/* One character (never NUL): numeric and quoted literals (a leading unary
 * minus included) become '?', runs of white space one space. */
static void step(struct lex *c, int ch, struct emits *e)
{
	e->n = 0;
	if (c->in_quote) {
		if (ch == '\'')
			c->in_quote = 0, c->quote_closed = 1;
		goto next;
	}
	if (c->quote_closed) {
		c->quote_closed = 0;
		if (ch == '\'') { /* '' inside a literal */
			c->in_quote = 1;
			goto next;
		}
		emit(c, e, ch, '?');
	}
	if (c->in_number) {
		if (digit(ch) || ch == '.')
			goto next;
		c->in_number = 0;
	}
	if (c->minus_pending) {
		c->minus_pending = 0;
		if (digit(ch)) {
			emit(c, e, ch, '?');
			c->in_number = 1;
			goto next;
		}
		emit(c, e, ch, '-');
	}
	if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r') {
		c->space_pending = c->prev_sig != SIG_NONE;
		goto next;
	}
	if (c->space_pending) {
		c->space_pending = 0;
		emit(c, e, ch, ' ');
	}
	if (ch == '\'')
		c->in_quote = 1;
	else if (digit(ch) && !c->prev_ident)
		emit(c, e, ch, '?'), c->in_number = 1;
	else if (ch == '-' && c->prev_sig != SIG_OTHER)
		c->minus_pending = 1;
	else
		emit(c, e, ch, EMIT_SELF);
next:
	c->prev_ident = ident(ch);
}

/* What the text's end emits. */
static void end(struct lex *c, struct emits *e)
{
	e->n = 0;
	if (c->quote_closed)
		emit(c, e, 0, '?');
	if (c->minus_pending)
		emit(c, e, 0, '-');
}

/* Emits as flags, in the order the BPF lexer applies them (SQL_EMIT_*). */
static const char order[] = { '?', '-', ' ', '?', EMIT_SELF };

static int flags_of(const struct emits *e)
{
	int flags = 0, at = 0;

	for (int i = 0; i < e->n; i++) {
		while (at < 5 && order[at] != e->sym[i])
			at++;
		if (at == 5) {
			fprintf(stderr, "gen_sql_table: emits in an order the lexer cannot apply\n");
			exit(1);
		}
		flags |= 1 << at++;
	}
	return flags;
}

#define MAX_STATES 64 /* bpf/sql.bpf.h: a state is below it */
#define MAX_CLASSES 16
static struct lex states[MAX_STATES];
static int nstates;

static int state_id(const struct lex *c)
{
	for (int i = 0; i < nstates; i++)
		if (!memcmp(&states[i], c, sizeof *c))
			return i;
	if (nstates == MAX_STATES) {
		fprintf(stderr, "gen_sql_table: more than %d states\n", MAX_STATES);
		exit(1);
	}
	states[nstates] = *c;
	return nstates++;
}

/* Each state's entry for a character: (flags << 8) | next state. */
static int entry(int s, int ch)
{
	struct lex c = states[s];
	struct emits e;

	step(&c, ch, &e);
	return flags_of(&e) << 8 | state_id(&c);
}

int main(void)
{
	static int row[256][MAX_STATES];
	int cls[256] = { 0 }, nclasses = 1, rep[MAX_CLASSES] = { 0 };
	struct lex start = { 0 };

	state_id(&start);
	for (int s = 0; s < nstates; s++) /* nstates grows as new states are found */
		for (int ch = 1; ch < 256; ch++)
			entry(s, ch);
	for (int ch = 1; ch < 256; ch++)
		for (int s = 0; s < nstates; s++)
			row[ch][s] = entry(s, ch);
	/* Class 0 is NUL's: the lexer stops there before the tables. */
	for (int ch = 1; ch < 256; ch++) {
		int k = 1;

		while (k < nclasses && memcmp(row[ch], row[rep[k]], sizeof row[ch]))
			k++;
		if (k == nclasses) {
			if (nclasses == MAX_CLASSES) {
				fprintf(stderr, "gen_sql_table: more than %d classes\n", MAX_CLASSES);
				exit(1);
			}
			rep[nclasses++] = ch;
		}
		cls[ch] = k;
	}
	printf("/* Generated by tools/gen_sql_table.c: the SQL-shape lexer's tables. */\n");
	printf("/* %d states, %d classes of characters (class 0: NUL, where the lexer stops) */\n", nstates, nclasses);
	printf("#define SQL_MAX_STATES %d\n#define SQL_MAX_CLASSES %d\n", MAX_STATES, MAX_CLASSES);
	printf("/* A character's emits, applied in this order. */\n");
	printf("#define SQL_EMIT_MARK 1 /* '?': a quoted literal closed */\n");
	printf("#define SQL_EMIT_MINUS 2 /* '-': a minus that was not a number's */\n");
	printf("#define SQL_EMIT_SPACE 4 /* ' ': white space before */\n");
	printf("#define SQL_EMIT_NUMBER 8 /* '?': a number starts */\n");
	printf("#define SQL_EMIT_SELF 16 /* the character */\n");
	printf("static const __u8 sql_class[256] = {");
	for (int ch = 0; ch < 256; ch++)
		printf("%s%d,", ch % 32 ? " " : "\n\t", cls[ch]);
	printf("\n};\n/* [state * %d + class]: the emits (SQL_EMIT_*) << 8 | the next state */\n", MAX_CLASSES);
	printf("static const __u16 sql_next[%d] = {", MAX_STATES * MAX_CLASSES);
	for (int s = 0; s < nstates; s++)
		for (int k = 0; k < MAX_CLASSES; k++)
			printf("%s%d,", k ? " " : "\n\t", k && k < nclasses ? row[rep[k]][s] : s);
	printf("\n};\n/* [state]: what the text's end emits */\n");
	printf("static const __u8 sql_end[%d] = {", MAX_STATES);
	for (int s = 0; s < nstates; s++) {
		struct lex c = states[s];
		struct emits e;

		end(&c, &e);
		printf("%s%d,", s % 32 ? " " : "\n\t", flags_of(&e));
	}
	printf("\n};\n");
	return 0;
}
