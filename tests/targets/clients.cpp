// What the viewers are tested on (tests/e2e/test_clients.cpp): C++ names that
// a viewer's C++ clean-up would rewrite or merge (a class template's call
// operator, two functions that differ only in template arguments), a worker
// thread with a name of its own, and tasks created on the main thread and run
// on the worker (flow arrows). ROUNDS rounds (argument, default 8): main's
// handle runs app::detail::Worker<T, N>::operator() (300 us), Box<int>::get()
// (200 us) and Box<long>::get() (100 us), then creates a task that the worker
// runs (task_work, 400 us) and waits for it.
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <pthread.h>
#include <thread>
#include <usdtprof/usdtprof.h>
#include "spin.h"

namespace app::detail {
template <typename T, int N>
struct Worker {
	T operator()(T x) const
	{
		USDTPROF_FUNC(); // "app::detail::Worker<T, N>::operator()"
		spin_us(300);
		return x * N;
	}
};
} // namespace app::detail

template <typename T>
struct Box {
	static void get()
	{
		// Named by hand: __PRETTY_FUNCTION__ would give both the same name.
		const char *name = sizeof(T) == sizeof(int) ? "Box<int>::get()" : "Box<long>::get()";
		USDTPROF_ENTER(name);
		spin_us(sizeof(T) == sizeof(int) ? 200 : 100);
		USDTPROF_EXIT(name);
	}
};

namespace {

std::mutex lock;
std::condition_variable changed;
uint64_t queued, done; // task ids 1..queued created, 1..done run

void worker(int rounds)
{
	pthread_setname_np(pthread_self(), "clients-worker");
	for (uint64_t id = 1; id <= static_cast<uint64_t>(rounds); id++) {
		{
			std::unique_lock<std::mutex> l(lock);
			changed.wait(l, [id] { return queued >= id; });
		}
		USDTPROF_TASK_BEGIN(id);
		USDTPROF_ENTER("task_work");
		spin_us(400);
		USDTPROF_EXIT("task_work");
		USDTPROF_TASK_END(id);
		std::lock_guard<std::mutex> l(lock);
		done = id;
		changed.notify_all();
	}
}

void handle(uint64_t id)
{
	USDTPROF_ENTER("handle");
	app::detail::Worker<int, 3>{}(static_cast<int>(id));
	Box<int>::get();
	Box<long long>::get();
	USDTPROF_TASK_CREATE(id);
	USDTPROF_EXIT("handle");
	{
		std::lock_guard<std::mutex> l(lock);
		queued = id;
	}
	changed.notify_all();
	std::unique_lock<std::mutex> l(lock);
	changed.wait(l, [id] { return done >= id; });
}

} // namespace

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 8;
	if (rounds < 1)
		return 2;
	std::thread t(worker, rounds);
	USDTPROF_ENTER("main");
	for (int i = 1; i <= rounds; i++)
		handle(static_cast<uint64_t>(i));
	USDTPROF_EXIT("main");
	t.join();
	return 0;
}
