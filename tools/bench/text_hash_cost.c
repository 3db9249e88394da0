/* `make bench`: the run time of the engine's text hashes, per text, of this
 * build's test programs and of others' side by side: each OBJECT is loaded,
 * and ROUNDS times in turn each one runs 20,000 times by BPF_PROG_TEST_RUN on
 * each text. The kernel's run time per run (BPF_ENABLE_STATS) and the hash,
 * which must be the same for every build.
 *
 * sql: the SQL-shape lexer (bpf/sql.bpf.h; tests/bpf/sql_shape.bpf.c), on
 * pgbench -S's statement (58 bytes) and a ~1 KB one (an IN list of literals,
 * as ORMs send: about the most the engine reads).
 * content: a name's content hash (bpf/content.bpf.h;
 * tests/bpf/content_hash.bpf.c), on a PHP method's name, a long Ruby class
 * name and Ruby's name of a class without one (its address left out).
 *
 *   text_hash_cost sql|content ROUNDS OBJECT... */
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define RUNS 20000

struct text {
	const char *text;
	int anon; /* content: leave out addresses */
};

struct hasher {
	const char *path;
	struct bpf_object *obj;
	int prog_fd;
	char *bss; /* the program's .bss: text, text_len, its hash, anon */
	size_t text_at, text_size, len_at, hash_at, anon_at;
	int has_anon;
};

static int var_offsets(struct hasher *l)
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
		else if (!strcmp(name, "shape_hash") || !strcmp(name, "content_hash"))
			l->hash_at = v->offset, found++;
		else if (!strcmp(name, "anon"))
			l->anon_at = v->offset, l->has_anon = 1;
	}
	return found == 3 ? 0 : -1;
}

static int load(struct hasher *l)
{
	struct bpf_program *prog;
	struct bpf_map *map;
	size_t size;

	l->obj = bpf_object__open_file(l->path, NULL);
	if (!l->obj || bpf_object__load(l->obj) || var_offsets(l))
		return -1;
	prog = bpf_object__next_program(l->obj, NULL); /* a test object has one */
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

/* ns per run of RUNS runs on t, and its hash. */
static double cost(struct hasher *l, const struct text *t, unsigned long long *hash)
{
	struct bpf_prog_info before = {}, after = {};
	__u32 len = sizeof(before);
	LIBBPF_OPTS(bpf_test_run_opts, opts);

	memset(l->bss + l->text_at, 0, l->text_size);
	memcpy(l->bss + l->text_at, t->text, strlen(t->text));
	*(long *)(l->bss + l->len_at) = (long)strlen(t->text) + 1;
	if (l->has_anon)
		*(__u32 *)(l->bss + l->anon_at) = t->anon;
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
	const struct text sql[] = { { "SELECT abalance FROM pgbench_accounts WHERE aid = 48213;" }, { longer } };
	const struct text content[] = { { "Controller::handle" },
					{ "ActiveSupport::Cache::Strategy::LocalCache" },
					{ "#<Class:0x00007f3a1c2b4e58>", 1 } };
	const struct text *texts = argc > 1 && !strcmp(argv[1], "content") ? content : sql;
	int ntexts = texts == content ? 3 : 2;
	int rounds = argc > 3 ? atoi(argv[2]) : 0, n = argc - 3;
	struct hasher *hashers = calloc(n > 0 ? n : 1, sizeof(*hashers));

	if (rounds <= 0 || n <= 0 || (strcmp(argv[1], "sql") && strcmp(argv[1], "content"))) {
		fprintf(stderr, "usage: text_hash_cost sql|content ROUNDS OBJECT...\n");
		return 2;
	}
	if (bpf_enable_stats(BPF_STATS_RUN_TIME) < 0) {
		perror("text_hash_cost: BPF_ENABLE_STATS");
		return 1;
	}
	strcpy(longer, "SELECT abalance FROM pgbench_accounts WHERE aid IN (");
	while (strlen(longer) < 990)
		strcat(longer, "48213, ");
	strcat(longer, "1) AND bid = -1;");
	for (int i = 0; i < n; i++) {
		hashers[i].path = argv[i + 3];
		if (load(&hashers[i])) {
			fprintf(stderr, "text_hash_cost: cannot load %s\n", argv[i + 3]);
			return 1;
		}
	}
	for (int r = 1; r <= rounds; r++)
		for (int t = 0; t < ntexts; t++)
			for (int i = 0; i < n; i++) {
				unsigned long long hash;
				double ns = cost(&hashers[i], &texts[t], &hash);

				if (ns < 0) {
					perror("text_hash_cost: BPF_PROG_TEST_RUN");
					return 1;
				}
				printf("round %d, %zu bytes, %s: %.1f ns a text (hash %016llx)\n", r, strlen(texts[t].text),
				       hashers[i].path, ns, hash);
			}
	return 0;
}
