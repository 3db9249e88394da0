/* `make bench`: the SQL-shape lexer's run time (bpf/sql.bpf.h), per statement,
 * of this build's test program (tests/bpf/sql_shape.bpf.c) and of others'
 * side by side: each OBJECT is loaded, and ROUNDS times in turn each one runs
 * 20,000 times by BPF_PROG_TEST_RUN on pgbench -S's statement (58 bytes) and
 * on a ~1 KB one (an IN list of literals, as ORMs send: about the most the
 * engine reads). The kernel's run time per run (BPF_ENABLE_STATS) and the hash,
 * which must be the same for every build.
 *
 *   sql_lexer_cost ROUNDS OBJECT... */
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define RUNS 20000

struct lexer {
	const char *path;
	struct bpf_object *obj;
	int prog_fd;
	char *bss; /* the program's .bss: text, text_len, shape_hash */
	size_t text_at, text_size, len_at, hash_at;
};

static int var_offsets(struct lexer *l)
{
	const struct btf *btf = bpf_object__btf(l->obj);
	int id = btf ? btf__find_by_name_kind(btf, ".bss", BTF_KIND_DATASEC) : -1;
	const struct btf_type *sec;
	const struct btf_var_secinfo *v;
	int found = 0;

	if (id < 0)
		return -1;
	sec = btf__type_by_id(btf, id);
	v = btf_var_secinfos(sec);
	for (int i = 0; i < btf_vlen(sec); i++, v++) {
		const char *name = btf__name_by_offset(btf, btf__type_by_id(btf, v->type)->name_off);

		if (!strcmp(name, "text"))
			l->text_at = v->offset, l->text_size = v->size, found++;
		else if (!strcmp(name, "text_len"))
			l->len_at = v->offset, found++;
		else if (!strcmp(name, "shape_hash"))
			l->hash_at = v->offset, found++;
	}
	return found == 3 ? 0 : -1;
}

static int load(struct lexer *l)
{
	struct bpf_program *prog;
	struct bpf_map *map;
	size_t size;

	l->obj = bpf_object__open_file(l->path, NULL);
	if (!l->obj || bpf_object__load(l->obj) || var_offsets(l))
		return -1;
	prog = bpf_object__find_program_by_name(l->obj, "sql_shape");
	/* The live .bss, as a skeleton maps it (without one, libbpf keeps only
	 * its initial value). */
	bpf_object__for_each_map(map, l->obj)
		if (strstr(bpf_map__name(map), ".bss")) {
			size = bpf_map__value_size(map);
			l->bss = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(map), 0);
		}
	if (!prog || !l->bss || l->bss == MAP_FAILED)
		return -1;
	l->prog_fd = bpf_program__fd(prog);
	return 0;
}

/* ns per run of RUNS runs on text, and its hash. */
static double cost(struct lexer *l, const char *text, unsigned long long *hash)
{
	struct bpf_prog_info before = {}, after = {};
	__u32 len = sizeof(before);
	LIBBPF_OPTS(bpf_test_run_opts, opts);

	memset(l->bss + l->text_at, 0, l->text_size);
	memcpy(l->bss + l->text_at, text, strlen(text));
	*(long *)(l->bss + l->len_at) = (long)strlen(text) + 1;
	bpf_obj_get_info_by_fd(l->prog_fd, &before, &len);
	for (int i = 0; i < RUNS; i++)
		if (bpf_prog_test_run_opts(l->prog_fd, &opts))
			return -1;
	len = sizeof(after);
	bpf_obj_get_info_by_fd(l->prog_fd, &after, &len);
	*hash = *(unsigned long long *)(l->bss + l->hash_at);
	return (double)(after.run_time_ns - before.run_time_ns) / (after.run_cnt - before.run_cnt);
}

int main(int argc, char **argv)
{
	static char longer[1024];
	const char *texts[2] = { "SELECT abalance FROM pgbench_accounts WHERE aid = 48213;", longer };
	int rounds = argc > 2 ? atoi(argv[1]) : 0, n = argc - 2;
	struct lexer *lexers = calloc(n > 0 ? n : 1, sizeof(*lexers));

	if (rounds <= 0 || n <= 0) {
		fprintf(stderr, "usage: sql_lexer_cost ROUNDS OBJECT...\n");
		return 2;
	}
	if (bpf_enable_stats(BPF_STATS_RUN_TIME) < 0) {
		perror("sql_lexer_cost: BPF_ENABLE_STATS");
		return 1;
	}
	strcpy(longer, "SELECT abalance FROM pgbench_accounts WHERE aid IN (");
	while (strlen(longer) < 990)
		strcat(longer, "48213, ");
	strcat(longer, "1) AND bid = -1;");
	for (int i = 0; i < n; i++) {
		lexers[i].path = argv[i + 2];
		if (load(&lexers[i])) {
			fprintf(stderr, "sql_lexer_cost: cannot load %s\n", argv[i + 2]);
			return 1;
		}
	}
	for (int r = 1; r <= rounds; r++)
		for (int t = 0; t < 2; t++)
			for (int i = 0; i < n; i++) {
				unsigned long long hash;
				double ns = cost(&lexers[i], texts[t], &hash);

				if (ns < 0) {
					perror("sql_lexer_cost: BPF_PROG_TEST_RUN");
					return 1;
				}
				printf("round %d, %zu bytes, %s: %.1f ns a statement (hash %016llx)\n", r, strlen(texts[t]),
				       lexers[i].path, ns, hash);
			}
	return 0;
}
