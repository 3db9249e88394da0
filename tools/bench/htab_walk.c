// By hand (docs/benchmarks.md, "Fresh memory, by host"): how long the kernel takes to read
// a BPF hash map in batches of 4096, by its number of entries and their size. Fills a
// BPF_F_NO_PREALLOC hash map (as usdtprof's call-path table) with N u64 keys of VALUE_BYTES
// each from userspace, then times three whole batched reads.
//
//   cc -O2 tools/bench/htab_walk.c -lbpf -o htab_walk
//   ./htab_walk N VALUE_BYTES MAX_ENTRIES        (as root)
#include <bpf/bpf.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { BATCH = 4096 };

static double seconds_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static int fill(int fd, long entries, int value_bytes)
{
	char *value = calloc(1, value_bytes);
	for (uint64_t i = 1; i <= (uint64_t)entries; i++) {
		uint64_t key = i * 0x9e3779b97f4a7c15ull; // spread as path ids are
		memcpy(value, &i, sizeof(i));
		if (bpf_map_update_elem(fd, &key, value, BPF_ANY)) {
			perror("bpf_map_update_elem");
			return -1;
		}
	}
	free(value);
	return 0;
}

// Every entry once, in batches; the number read, -1 on an error.
static long read_all(int fd, uint64_t *keys, char *values)
{
	long total = 0;
	__u32 in = 0, out = 0;
	for (int start = 1;; start = 0) {
		__u32 count = BATCH;
		int err = bpf_map_lookup_batch(fd, start ? NULL : &in, &out, keys, values, &count, NULL);
		total += count;
		if (err)
			return errno == ENOENT ? total : -1;
		in = out;
	}
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: htab_walk N VALUE_BYTES MAX_ENTRIES\n");
		return 2;
	}
	long entries = atol(argv[1]);
	int value_bytes = atoi(argv[2]), max_entries = atoi(argv[3]);
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_NO_PREALLOC);
	int fd = bpf_map_create(BPF_MAP_TYPE_HASH, "htab_walk", sizeof(uint64_t), value_bytes, max_entries, &opts);
	if (fd < 0 || fill(fd, entries, value_bytes)) {
		perror("htab_walk");
		return 1;
	}
	uint64_t *keys = malloc(sizeof(uint64_t) * BATCH);
	char *values = malloc((size_t)value_bytes * BATCH);
	for (int round = 0; round < 3; round++) {
		double start = seconds_now();
		long read = read_all(fd, keys, values);
		double took = seconds_now() - start;
		if (read < 0) {
			perror("bpf_map_lookup_batch");
			return 1;
		}
		printf("%ld entries of %d bytes (max %d): read in %.3f s, %.0f ns each\n", read, value_bytes,
		       max_entries, took, took * 1e9 / (read ? read : 1));
	}
	return 0;
}
