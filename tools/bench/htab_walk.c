// By hand (docs/benchmarks.md, "Fresh memory, by host" and "Reading a million call paths
// from the kernel"): how long the kernel takes to hand userspace a table of N entries of
// VALUE_BYTES each, by the table's layout:
//   hash      a BPF_F_NO_PREALLOC hash map of u64 keys (usdtprof's call-path table), read by
//             bpf_map_lookup_batch, 4096 a call;
//   prealloc  the same, preallocated;
//   array     an array map, read by bpf_map_lookup_batch;
//   mmap      an array map with BPF_F_MMAPABLE, read through its mapping (copied out).
// Fills it from userspace, then times three whole reads, and what creating the map took.
//
//   cc -O2 tools/bench/htab_walk.c -lbpf -o htab_walk
//   ./htab_walk N VALUE_BYTES MAX_ENTRIES [hash|prealloc|array|mmap]        (as root)
#include <bpf/bpf.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

enum { BATCH = 4096 };

struct layout {
	const char *name;
	enum bpf_map_type type;
	__u32 flags;
};

static const struct layout layouts[] = {
	{"hash", BPF_MAP_TYPE_HASH, BPF_F_NO_PREALLOC},
	{"prealloc", BPF_MAP_TYPE_HASH, 0},
	{"array", BPF_MAP_TYPE_ARRAY, 0},
	{"mmap", BPF_MAP_TYPE_ARRAY, BPF_F_MMAPABLE},
};

static double seconds_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static int is_array(const struct layout *l)
{
	return l->type == BPF_MAP_TYPE_ARRAY;
}

static int fill(int fd, const struct layout *l, long entries, int value_bytes)
{
	char *value = calloc(1, value_bytes);
	for (uint64_t i = 1; i <= (uint64_t)entries; i++) {
		uint64_t key = i * 0x9e3779b97f4a7c15ull; // spread as path ids are
		uint32_t index = (uint32_t)(i - 1);
		memcpy(value, &i, sizeof(i));
		if (bpf_map_update_elem(fd, is_array(l) ? (void *)&index : (void *)&key, value, BPF_ANY)) {
			perror("bpf_map_update_elem");
			return -1;
		}
	}
	free(value);
	return 0;
}

// Every entry once, in batches; the number read, -1 on an error.
static long read_batched(int fd, uint64_t *keys, char *values)
{
	long total = 0;
	__u64 in = 0, out = 0; // a hash map's token is 4 bytes, an array's its key's
	for (int start = 1;; start = 0) {
		__u32 count = BATCH;
		int err = bpf_map_lookup_batch(fd, start ? NULL : &in, &out, keys, values, &count, NULL);
		total += count;
		if (err)
			return errno == ENOENT ? total : -1;
		in = out;
	}
}

// Every entry once through the map's mapping, copied out a batch at a time
// as the batched read does; -1 on an error.
static long read_mapped(int fd, long entries, int value_bytes, char *values)
{
	size_t bytes = (size_t)value_bytes * entries;
	const char *table = mmap(NULL, bytes, PROT_READ, MAP_SHARED, fd, 0);
	if (table == MAP_FAILED)
		return -1;
	for (long i = 0; i < entries; i += BATCH) {
		long count = entries - i < BATCH ? entries - i : BATCH;
		memcpy(values, table + (size_t)value_bytes * i, (size_t)value_bytes * count);
	}
	munmap((void *)table, bytes);
	return entries;
}

int main(int argc, char **argv)
{
	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: htab_walk N VALUE_BYTES MAX_ENTRIES [hash|prealloc|array|mmap]\n");
		return 2;
	}
	long entries = atol(argv[1]);
	int value_bytes = atoi(argv[2]), max_entries = atoi(argv[3]);
	const struct layout *l = &layouts[0];
	for (size_t i = 0; argc == 5 && i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (!strcmp(argv[4], layouts[i].name))
			l = &layouts[i];
	if (argc == 5 && strcmp(argv[4], l->name)) {
		fprintf(stderr, "htab_walk: unknown layout %s\n", argv[4]);
		return 2;
	}
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = l->flags);
	double created = seconds_now();
	int fd = bpf_map_create(l->type, "htab_walk", is_array(l) ? sizeof(uint32_t) : sizeof(uint64_t), value_bytes,
				max_entries, &opts);
	created = seconds_now() - created;
	if (fd < 0 || fill(fd, l, entries, value_bytes)) {
		perror("htab_walk");
		return 1;
	}
	if (is_array(l))
		entries = max_entries; // an array always has them all
	uint64_t *keys = malloc(sizeof(uint64_t) * BATCH);
	char *values = malloc((size_t)value_bytes * BATCH);
	for (int round = 0; round < 3; round++) {
		double start = seconds_now();
		long read = l->flags & BPF_F_MMAPABLE ? read_mapped(fd, entries, value_bytes, values)
						      : read_batched(fd, keys, values);
		double took = seconds_now() - start;
		if (read < 0) {
			perror("htab_walk: read");
			return 1;
		}
		printf("%s: %ld entries of %d bytes (max %d, created in %.3f s): read in %.3f s, %.0f ns each\n",
		       l->name, read, value_bytes, max_entries, created, took, took * 1e9 / (read ? read : 1));
	}
	close(fd);
	return 0;
}
