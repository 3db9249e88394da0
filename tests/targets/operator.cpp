// Modelled on a deep-learning framework's custom operator: MyOp::forward runs
// its own code (4 ms on the CPU), pushes three sub-operations (_plus_scalar,
// 4 ms each) to an engine thread and waits for them. 20 forward calls.
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <usdtprof/usdtprof.h>
#include "measure.h"

class Engine {
public:
	Engine() : worker_([this] { run(); }) {}
	~Engine()
	{
		push([] {}, true);
		worker_.join();
	}

	void push(std::function<void()> op, bool last = false)
	{
		std::lock_guard<std::mutex> lock(mutex_);
		uint64_t id = next_id_++;
		USDTPROF_TASK_CREATE(id);
		queue_.push_back({id, std::move(op), last});
		pending_++;
		cv_.notify_all();
	}

	void wait_all()
	{
		std::unique_lock<std::mutex> lock(mutex_);
		cv_.wait(lock, [this] { return pending_ == 0; });
	}

private:
	struct Task {
		uint64_t id;
		std::function<void()> op;
		bool last;
	};

	void run()
	{
		for (;;) {
			std::unique_lock<std::mutex> lock(mutex_);
			cv_.wait(lock, [this] { return !queue_.empty(); });
			Task t = std::move(queue_.front());
			queue_.pop_front();
			lock.unlock();
			USDTPROF_TASK_BEGIN(t.id);
			t.op();
			USDTPROF_TASK_END(t.id);
			lock.lock();
			pending_--;
			cv_.notify_all();
			if (t.last)
				return;
		}
	}

	std::mutex mutex_;
	std::condition_variable cv_;
	std::deque<Task> queue_;
	uint64_t next_id_ = 1;
	int pending_ = 0;
	std::thread worker_;
};

static void plus_scalar()
{
	USDTPROF_SCOPE("_plus_scalar");
	spin_us(4000);
}

// What forward's thread measured itself: CPU time (its thread clock) and the
// rest of its wall time, for comparison with usdtprof's on/off-CPU split.
static long long forward_cpu, forward_wall;

struct MyOp {
	void forward(Engine &engine)
	{
		USDTPROF_FUNC();
		long long wall = now_ns(), cpu = thread_cpu_ns();
		spin_us(4000);
		for (int i = 0; i < 3; i++)
			engine.push(plus_scalar);
		engine.wait_all();
		forward_cpu += thread_cpu_ns() - cpu;
		forward_wall += now_ns() - wall;
	}
};

int main()
{
	long long slack;
	{
		USDTPROF_SCOPE("main");
		Engine engine;
		MyOp op;
		long long start = now_ns();
		for (int i = 0; i < 20; i++)
			op.forward(engine);
		// The critical path: each forward's own 4 ms and the 12 ms it waits for.
		slack = now_ns() - start - 20 * 16 * 1000000LL;
	}
	printf("measured slack %lld\nmeasured oncpu %lld\nmeasured offcpu %lld\n", slack > 0 ? slack : 0, forward_cpu,
	       forward_wall - forward_cpu);
	return 0;
}
