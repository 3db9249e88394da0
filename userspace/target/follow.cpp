#include "target/follow.h"

#include <cerrno>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "target/process.h"

namespace usdtprof {

namespace {

constexpr long kOptions = PTRACE_O_TRACEEXEC | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE;
constexpr int kKcmpVm = 1; // KCMP_VM of linux/kcmp.h

// A field of /proc/PID/status ("Tgid", "PPid"), -1 if unreadable.
int status_field(int pid, const std::string &field)
{
	std::ifstream in("/proc/" + std::to_string(pid) + "/status");
	for (std::string line; std::getline(in, line);)
		if (line.starts_with(field + ":"))
			return atoi(line.c_str() + field.size() + 1);
	return -1;
}

bool is_stop_signal(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

int shell_status(int status)
{
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

} // namespace

struct FollowedCommand::Tracer {
	Callbacks callbacks;
	std::thread thread;
	std::mutex mutex;
	std::condition_variable changed;
	std::optional<Result<int>> start_result; // set once: the pid, or why not
	std::optional<int> exit_status;
	bool following = true;                   // under mutex
	std::set<int> known;                     // tasks seen (tracer thread only)

	void run(const std::vector<std::string> &argv);
	Result<int> start(const std::vector<std::string> &argv);
	void handle_stop(int pid, int status);
	void new_task(int pid);
	void started(Result<int> result);
	bool is_following()
	{
		std::lock_guard lock(mutex);
		return following;
	}
};

Result<std::unique_ptr<FollowedCommand>> FollowedCommand::launch(const std::vector<std::string> &argv,
								  Callbacks callbacks)
{
	if (argv.empty())
		return Error{"cannot launch the command"};
	std::unique_ptr<FollowedCommand> f(new FollowedCommand());
	auto t = std::make_shared<Tracer>();
	f->tracer_ = t;
	t->callbacks = std::move(callbacks);
	// The tracer is a thread, not the process: every ptrace request comes from
	// the thread that forked, and its exit lets every traced process go.
	t->thread = std::thread([t, argv] { t->run(argv); });
	std::unique_lock lock(t->mutex);
	t->changed.wait(lock, [&] { return t->start_result.has_value(); });
	if (!*t->start_result) {
		Error e = t->start_result->error();
		lock.unlock();
		t->thread.join();
		return e;
	}
	f->pid_ = **t->start_result;
	return f;
}

FollowedCommand::~FollowedCommand()
{
	if (tracer_ && tracer_->thread.joinable()) {
		// Not waited for (an error while recording): the command runs on, let go.
		stop_following();
		tracer_->thread.detach();
	}
}

void FollowedCommand::Tracer::started(Result<int> result)
{
	std::lock_guard lock(mutex);
	start_result = std::move(result);
	changed.notify_all();
}

// Forks the command, traced from before its exec (PTRACE_SEIZE, so that job
// control stops stay stops), and holds its first image at its entry point.
Result<int> FollowedCommand::Tracer::start(const std::vector<std::string> &argv)
{
	int go[2];
	if (pipe2(go, O_CLOEXEC))
		return Error{"cannot launch the command"};
	// Never run the command untraced: the tracer seizes it first.
	auto forked = fork_command(argv, [&] {
		close(go[1]);
		char c;
		return read(go[0], &c, 1) == 1;
	});
	close(go[0]);
	if (!forked) {
		close(go[1]);
		return forked.error();
	}
	int pid = forked->pid;
	bool seized = ptrace(PTRACE_SEIZE, pid, 0, kOptions) == 0;
	int seize_err = errno;
	if (seized)
		(void)!write(go[1], "g", 1);
	close(go[1]);
	int err = exec_error(*forked);
	int status;
	if (!seized || err) {
		waitpid(pid, &status, __WALL);
		return Error{"cannot run " + argv[0] + ": " + strerror(seized ? err : seize_err)};
	}
	for (;;) {
		if (waitpid(pid, &status, __WALL) < 0 || !WIFSTOPPED(status))
			return Error{"the command ended before it started"};
		if (status >> 8 == (SIGTRAP | (PTRACE_EVENT_EXEC << 8)))
			break;
		ptrace(PTRACE_CONT, pid, 0, status >> 16 ? 0 : WSTOPSIG(status));
	}
	known.insert(pid);
	if (auto r = run_to_entry(pid); !r) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, __WALL);
		return r.error();
	}
	callbacks.on_image(pid);
	return pid;
}

void FollowedCommand::Tracer::run(const std::vector<std::string> &argv)
{
	auto pid = start(argv);
	bool ok = bool(pid);
	int root = ok ? *pid : 0;
	started(std::move(pid));
	if (!ok)
		return;
	ptrace(PTRACE_CONT, root, 0, 0);
	for (;;) {
		int status;
		int p = waitpid(-1, &status, __WALL);
		if (p < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (WIFSTOPPED(status)) {
			handle_stop(p, status);
			continue;
		}
		known.erase(p);
		if (p == root) {
			// Returning ends the tracer thread: the kernel lets every
			// process still traced go, as a detach would.
			std::lock_guard lock(mutex);
			exit_status = shell_status(status);
			changed.notify_all();
			return;
		}
	}
	std::lock_guard lock(mutex);
	exit_status = 1;
	changed.notify_all();
}

// A task seen for the first time: a new thread, or a new process with its
// parent's image (fork) or sharing its parent's memory until it execs (vfork).
void FollowedCommand::Tracer::new_task(int pid)
{
	known.insert(pid);
	if (status_field(pid, "Tgid") != pid)
		return;
	int parent = status_field(pid, "PPid");
	if (parent > 0 && syscall(SYS_kcmp, parent, pid, kKcmpVm, 0, 0) > 0)
		callbacks.on_fork(pid, parent);
}

void FollowedCommand::Tracer::handle_stop(int pid, int status)
{
	int sig = WSTOPSIG(status), event = status >> 16;
	// A signal for the process (not a ptrace event) is passed on.
	int deliver = event == 0 ? sig : 0;
	if (!is_following()) {
		ptrace(PTRACE_DETACH, pid, 0, deliver);
		return;
	}
	if (event == PTRACE_EVENT_STOP) {
		if (is_stop_signal(sig)) {
			// A job-control stop: the process stays stopped until SIGCONT.
			ptrace(PTRACE_LISTEN, pid, 0, 0);
			return;
		}
		if (!known.count(pid))
			new_task(pid);
	} else if (event == PTRACE_EVENT_EXEC) {
		if (!run_to_entry(pid))
			return; // gone before its entry point
		callbacks.on_image(pid);
	} else if (event == 0 && callbacks.on_signal) {
		callbacks.on_signal(pid, sig);
	}
	ptrace(PTRACE_CONT, pid, 0, deliver);
}

void FollowedCommand::stop_following()
{
	std::lock_guard lock(tracer_->mutex);
	tracer_->following = false;
}

int FollowedCommand::wait()
{
	{
		std::unique_lock lock(tracer_->mutex);
		tracer_->changed.wait(lock, [&] { return tracer_->exit_status.has_value(); });
	}
	if (tracer_->thread.joinable())
		tracer_->thread.join();
	return *tracer_->exit_status;
}

} // namespace usdtprof
