/* SPDX-License-Identifier: GPL-2.0 */
/* Call paths: the `paths` table (and the [other] children of paths whose
 * callees found no slot), and each thread's direct-mapped cache in front of it. */
#ifndef USDTPROF_PATHS_BPF_H
#define USDTPROF_PATHS_BPF_H

#include "maps.bpf.h"
#include "hash.bpf.h"
#include "durations.bpf.h"

/* A slot's totals, NULL if its chunk is not there. */
static __always_inline struct usdtprof_path_stats *slot_stats(__u32 slot)
{
	__u32 chunk = slot >> USDTPROF_PATH_CHUNK_BITS, i = slot & (USDTPROF_PATH_CHUNK - 1);
	void *inner = bpf_map_lookup_elem(&path_chunks, &chunk);

	return inner ? bpf_map_lookup_elem(inner, &i) : 0;
}

/* A slot number as a thread keeps it (a frame's, its path cache's), with
 * the slot_generation read before the slot was found: 0 for none. A kept
 * slot is used only while no slot has been freed since (kept_stats): a
 * program that reads the old generation began before userspace bumped it,
 * so userspace's wait for the programs, which comes after, waits for it
 * before the slot is zeroed and given again. */
static __always_inline __u64 slot_ref(__u32 slot, __u32 generation)
{
	return slot == USDTPROF_NO_SLOT ? 0 : ((__u64)generation << 32) | (slot + 1);
}

/* A kept slot's totals; NULL when there is none, or it may have been freed. */
static __always_inline struct usdtprof_path_stats *kept_stats(__u64 ref)
{
	if (!ref || (__u32)(ref >> 32) != READ_ONCE(slot_generation))
		return 0;
	return slot_stats((__u32)ref - 1);
}

/* A slot taken that lost its path to another CPU (path_slot), kept for
 * this CPU's next new path: zero, never in `paths`. */
static __always_inline void give_back_slot(__u32 slot)
{
	__u32 zero = 0, *spare = bpf_map_lookup_elem(&spare_slot, &zero);

	if (spare)
		*spare = slot + 1;
}

/* A free slot, zero: this CPU's spare, else one userspace freed, else the
 * next never used, if its chunk is there (USDTPROF_NO_SLOT when not: the
 * table is full, or userspace has not yet added the chunk, counted apart as
 * agg_late).
 * Compare-and-swap, so that a slot goes to one CPU and none is skipped. */
static __always_inline __u32 take_slot(void)
{
	__u32 zero = 0, *spare = bpf_map_lookup_elem(&spare_slot, &zero);

	if (spare && *spare) {
		__u32 slot = *spare - 1;

		*spare = 0;
		return slot;
	}
	for (int tries = 0; tries < 4; tries++) {
		__u64 taken = READ_ONCE(free_taken);
		__u32 at, half;
		__u64 *pair;

		if (taken >= READ_ONCE(free_given))
			break;
		if (__sync_val_compare_and_swap(&free_taken, taken, taken + 1) != taken)
			continue;
		at = taken % free_ring;
		half = at & 1;
		at >>= 1;
		pair = bpf_map_lookup_elem(&free_slots, &at);
		/* Little-endian: the even number in the low half. */
		return pair ? (__u32)(*pair >> (half * 32)) : USDTPROF_NO_SLOT;
	}
	for (int tries = 0; tries < 4; tries++) {
		__u32 made = READ_ONCE(slots_made);

		if (made >= READ_ONCE(slots_ready)) {
			/* Not full: the grower has not yet added the next chunk. */
			if (made < free_ring)
				count_anomaly(USDTPROF_ANOM_AGG_LATE, 1);
			return USDTPROF_NO_SLOT;
		}
		if (__sync_val_compare_and_swap(&slots_made, made, made + 1) != made)
			continue;
		/* One CPU takes each number: one wake for the chunk wanted. */
		if (made + 1 == READ_ONCE(grow_at))
			bpf_ringbuf_output(&grow_wake, &made, sizeof(made), 0);
		return made;
	}
	return USDTPROF_NO_SLOT;
}

/* An [other] path's totals, created (zero) if needed, in other_paths. */
static __always_inline struct usdtprof_path_stats *other_stats(__u64 path, __u64 parent, __u32 tgid)
{
	struct usdtprof_path_stats *s = bpf_map_lookup_elem(&other_paths, &path), *init;
	__u32 zero = 0;

	if (s)
		return s;
	/* The new path's value, beyond the 512-byte stack: only these three
	 * fields of this CPU's blank are ever written. */
	init = bpf_map_lookup_elem(&path_blank, &zero);
	if (!init)
		return 0;
	init->parent = parent;
	init->func = USDTPROF_FUNC_OTHER;
	init->tgid = tgid;
	bpf_map_update_elem(&other_paths, &path, init, BPF_NOEXIST);
	return bpf_map_lookup_elem(&other_paths, &path);
}

/* The slot of a path (not an [other] one), created (zero) if needed within
 * the process's share; USDTPROF_NO_SLOT when it finds none. Another CPU may
 * create it first: then EEXIST, the slot taken goes back (never written),
 * and the lookup finds the other's. A global function, verified once on its
 * own: inlined at each of the exit program's paths to the table, it took
 * the program's verification from 584k instructions to 981k, near the
 * kernel's limit of a million. */
__noinline __u32 path_slot(__u64 path, __u64 parent, __u64 func, __u32 tgid)
{
	struct usdtprof_path_stats *s;
	struct process_usage *u;
	__u32 *known, slot;
	bool full;

	known = bpf_map_lookup_elem(&paths, &path);
	if (known)
		return *known;
	/* Beyond its share, a process's new paths find no slot, as in a full table. */
	u = usage_of(tgid, &full);
	if (full || (u && path_share && u->paths >= path_share))
		return USDTPROF_NO_SLOT;
	slot = take_slot();
	if (slot == USDTPROF_NO_SLOT)
		return USDTPROF_NO_SLOT;
	s = slot_stats(slot);
	if (s && bpf_map_update_elem(&paths, &path, &slot, BPF_NOEXIST) == 0) {
		s->parent = parent;
		s->func = func;
		s->tgid = tgid;
		/* The id last: a slot read with its id has its ids (the reader
		 * skips slots without one). */
		asm volatile("" ::: "memory");
		WRITE_ONCE(s->path, path);
		if (u)
			__sync_fetch_and_add(&u->paths, 1);
		return slot;
	}
	give_back_slot(slot);
	known = bpf_map_lookup_elem(&paths, &path);
	return known ? *known : USDTPROF_NO_SLOT;
}

/* The totals of a path, created (zero) if needed: [other] children in
 * other_paths, every other path in its slot. NULL when it finds none. */
static __always_inline struct usdtprof_path_stats *path_stats(__u64 path, __u64 parent, __u64 func, __u32 tgid)
{
	__u32 slot;

	if (func == USDTPROF_FUNC_OTHER)
		return other_stats(path, parent, tgid);
	slot = path_slot(path, parent, func, tgid);
	return slot == USDTPROF_NO_SLOT ? 0 : slot_stats(slot);
}

/* The parent of the thread's roots: 0 (the process's), or with --per-thread
 * its thread's root id, which no path of the table has. */
static __always_inline __u64 thread_root(const struct usdtprof_thread_stack *st)
{
	return per_thread ? USDTPROF_THREAD_ROOT(st->tgid, st->tid) : 0;
}

/* The path id of the [other] child of parent (0: of the process's roots). */
static __always_inline __u64 other_path(__u64 parent, __u32 tgid)
{
	return path_hash(parent ? parent : tgid, USDTPROF_FUNC_OTHER);
}

/* Adds totals to a path, creating it if needed; a path that finds no slot
 * (its frame was not claimed at entry: the attach chain, [truncated]
 * markers, or a path deleted meanwhile) goes to its parent's [other] child.
 * Atomic: threads of a process on other CPUs share paths. */
static __always_inline void add_to_map(const struct usdtprof_path_slot *t, const struct usdtprof_path_dist *d,
				       __u32 tgid, __u64 open)
{
	struct usdtprof_path_stats *s = t->func == USDTPROF_FUNC_OTHER ? 0 : kept_stats(t->slot_ref);

	if (!s)
		s = path_stats(t->path, t->parent, t->func, tgid);

	if (!s && t->func != USDTPROF_FUNC_OTHER) {
		count_anomaly(USDTPROF_ANOM_AGG_FULL, 1);
		s = path_stats(other_path(t->parent, tgid), t->parent, USDTPROF_FUNC_OTHER, tgid);
	}
	if (!s) {
		count_anomaly(USDTPROF_ANOM_DROPPED_NS, t->self_ns);
		return;
	}
	__sync_fetch_and_add(&s->calls, t->calls);
	__sync_fetch_and_add(&s->self_ns, t->self_ns);
	__sync_fetch_and_add(&s->total_ns, t->total_ns);
	if (t->self_offcpu_ns)
		__sync_fetch_and_add(&s->self_offcpu_ns, t->self_offcpu_ns);
	if (t->probe_ns)
		__sync_fetch_and_add(&s->probe_ns, t->probe_ns);
	if (open)
		__sync_fetch_and_add(&s->open, open);
	/* A slot's durations (none when no call in it was timed, max 0). */
	if (!durations_off && d && d->max_ns) {
		span_extreme(&s->min_ns, d->min_ns, true);
		span_extreme(&s->max_ns, d->max_ns, false);
		add_buckets(s, d);
	}
}

/* Whether a frame entering path has a slot: its callees need one to hang
 * under. The thread's path cache holds only claimed paths, so a loop over
 * known paths pays no lookup. *ref: the slot, kept for the frame's exit, so
 * that its cache slot is added to the map without a lookup of the path. */
static __always_inline bool claim_path(struct usdtprof_thread_stack *st, __u64 path, __u64 parent, __u64 func,
				       __u64 *ref)
{
	const struct usdtprof_path_slot *cached = &st->cache[path & (USDTPROF_PATH_CACHE - 1)];
	__u32 generation, slot;

	if (cached->path == path) {
		*ref = cached->slot_ref;
		return true;
	}
	*ref = 0;
	if (func == USDTPROF_FUNC_OTHER)
		return path_stats(path, parent, func, st->tgid) != 0;
	/* Before the lookup: a slot found after a free must not carry the
	 * generation that free made (slot_ref). */
	generation = READ_ONCE(slot_generation);
	slot = path_slot(path, parent, func, st->tgid);
	*ref = slot_ref(slot, generation);
	return slot != USDTPROF_NO_SLOT;
}

/* A slot's totals added to the map, out of line: the map's code is not the
 * hot path's, and inlined into the exit program it took stack the runtimes'
 * identity needs there (512 bytes in all). */
static __noinline void evict_slot(struct usdtprof_thread_stack *st, __u32 i)
{
	i &= USDTPROF_PATH_CACHE - 1;
	add_to_map(&st->cache[i], &st->dist[i], st->tgid, 0);
}

/* A completed call goes to the thread's own path cache: no hashing, no
 * atomics, only the thread writes it. A slot holding another path is first
 * added to the map. */
static __always_inline void add_to_cache(struct usdtprof_thread_stack *st, __u64 path, __u64 parent,
					 __u64 func, __u64 ref, __u64 self, __u64 total, __u64 offcpu, __u64 probe,
					 bool timed)
{
	__u32 i = path & (USDTPROF_PATH_CACHE - 1);
	struct usdtprof_path_slot *slot = &st->cache[i];
	struct usdtprof_path_dist *dist = &st->dist[i];

	/* Also before a 16-bit bucket count could wrap. */
	if (slot->path != path || slot->calls >= USDTPROF_DIST_SLOT_MAX) {
		if (slot->calls)
			evict_slot(st, i);
		slot->path = path;
		slot->parent = parent;
		slot->func = func;
		slot->calls = 0;
		slot->self_ns = 0;
		slot->total_ns = 0;
		slot->self_offcpu_ns = 0;
		slot->probe_ns = 0;
		slot->slot_ref = 0;
		if (!durations_off)
			__builtin_memset(dist, 0, sizeof(*dist));
	}
	if (ref)
		slot->slot_ref = ref;
	slot->calls++;
	slot->self_ns += self;
	slot->total_ns += total;
	slot->self_offcpu_ns += offcpu;
	slot->probe_ns += probe;
	if (timed && !durations_off) {
		__u32 b = usdtprof_dist_bucket(total);

		if (b < USDTPROF_DIST_BUCKETS)
			dist->buckets[b]++;
		if (!dist->min_ns || total < dist->min_ns)
			dist->min_ns = total;
		if (total > dist->max_ns)
			dist->max_ns = total;
	}
}

#endif /* USDTPROF_PATHS_BPF_H */
