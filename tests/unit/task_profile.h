// A task handed from one thread to another, as the kernel records it: the
// creator "main;spawn" (110 us of its own, its wall-clock total 110 us), the
// task's work under it on the worker ("main;spawn;[task];work", 760 us), and
// the worker's own frame "thread_body" whose measured wall-clock total (811
// us) spans the task it ran for spawn. Some of the self times were off-CPU.
#pragma once

#include "profile/profile.h"

inline usdtprof::Profile task_profile()
{
	using usdtprof::kNoParent;
	usdtprof::Profile p;
	p.functions = {"main", "spawn", "[task]", "work", "thread_body"};
	p.processes = {{7, "app", {}}};
	p.duration_ns = 2'000'000;
	p.nodes = {
		// parent, function, pid, calls, open, self_ns, total_ns, self_offcpu_ns
		{kNoParent, 0, 7, 1, 0, 40'000, 150'000, 0},
		{0, 1, 7, 1, 0, 110'000, 110'000, 100'000},
		{1, 2, 7, 1, 0, 1'000, 761'000, 0},
		{2, 3, 7, 1, 0, 760'000, 760'000, 60'000},
		{kNoParent, 4, 7, 1, 0, 50'000, 811'000, 30'000},
	};
	return p;
}
