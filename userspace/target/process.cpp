#include "target/process.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <poll.h>
#include <sstream>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "target/container.h"

namespace usdtprof {

namespace {

std::string read_file(const std::string &path)
{
	std::ifstream in(path, std::ios::binary);
	std::ostringstream s;
	s << in.rdbuf();
	return s.str();
}

uint64_t entry_point(int pid)
{
	std::string auxv = read_file("/proc/" + std::to_string(pid) + "/auxv");
	for (size_t i = 0; i + 16 <= auxv.size(); i += 16) {
		uint64_t type, value;
		std::memcpy(&type, auxv.data() + i, 8);
		std::memcpy(&value, auxv.data() + i + 8, 8);
		if (type == 9 /* AT_ENTRY */)
			return value;
	}
	return 0;
}

// Waits for the next stop with SIGTRAP, passing other signals on. Returns
// false when the child exits instead.
bool wait_for_trap(int pid, int &status)
{
	for (;;) {
		if (waitpid(pid, &status, __WALL) < 0)
			return false;
		if (!WIFSTOPPED(status))
			return false;
		bool event = status >> 16; // a ptrace event stop (followed commands): nothing to deliver
		if (WSTOPSIG(status) == SIGTRAP && !event)
			return true;
		ptrace(PTRACE_CONT, pid, 0, event ? 0 : WSTOPSIG(status));
	}
}

std::string exit_text(int status)
{
	if (WIFEXITED(status))
		return "exit status " + std::to_string(WEXITSTATUS(status));
	if (WIFSIGNALED(status))
		return std::string("signal ") + strsignal(WTERMSIG(status));
	return "unknown status";
}

} // namespace

Result<void> run_to_entry(int pid)
{
	uint64_t entry = entry_point(pid);
	if (!entry)
		return Error{"cannot find the entry point of the launched command"};
	errno = 0;
	long orig = ptrace(PTRACE_PEEKTEXT, pid, entry, 0);
	if (errno)
		return Error{std::string("cannot read the launched command: ") + strerror(errno)};
	if (ptrace(PTRACE_POKETEXT, pid, entry, (orig & ~0xffL) | 0xcc) ||
	    ptrace(PTRACE_CONT, pid, 0, 0))
		return Error{std::string("cannot start the launched command: ") + strerror(errno)};
	int status;
	if (!wait_for_trap(pid, status))
		return Error{"the command ended before it started (" + exit_text(status) + ")"};
	user_regs_struct regs;
	if (ptrace(PTRACE_POKETEXT, pid, entry, orig) || ptrace(PTRACE_GETREGS, pid, 0, &regs))
		return Error{std::string("cannot restore the launched command: ") + strerror(errno)};
	regs.rip = entry;
	if (ptrace(PTRACE_SETREGS, pid, 0, &regs))
		return Error{std::string("cannot restore the launched command: ") + strerror(errno)};
	return {};
}

namespace {

// The child side of a launch: restores the signals usdtprof blocks and, if
// may_exec, execs args; on failure writes errno to report_fd and exits 127.
[[noreturn]] void exec_in_child(char *const *args, int report_fd, bool may_exec)
{
	// usdtprof blocks these for its signalfd; the command must not inherit that.
	sigset_t stop;
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigprocmask(SIG_UNBLOCK, &stop, nullptr);
	if (may_exec)
		execvp(args[0], args);
	int err = errno ? errno : ECANCELED; // not 0: 0 would read as "exec'd"
	(void)!write(report_fd, &err, sizeof(err));
	_exit(127);
}

} // namespace

Result<ForkedCommand> fork_command(const std::vector<std::string> &argv, const std::function<bool()> &may_exec)
{
	int report[2];
	if (argv.empty() || pipe2(report, O_CLOEXEC))
		return Error{"cannot launch the command"};
	// Made before the fork: a child of a multithreaded process may not allocate.
	std::vector<char *> args;
	for (const auto &a : argv)
		args.push_back(const_cast<char *>(a.c_str()));
	args.push_back(nullptr);
	pid_t pid = fork();
	if (pid < 0) {
		int err = errno;
		close(report[0]);
		close(report[1]);
		return Error{std::string("fork: ") + strerror(err)};
	}
	if (pid == 0) {
		close(report[0]);
		exec_in_child(args.data(), report[1], may_exec());
	}
	close(report[1]);
	return ForkedCommand{pid, UniqueFd(report[0])};
}

int exec_error(const ForkedCommand &child)
{
	int err = 0;
	return read(child.exec_report.get(), &err, sizeof(err)) == sizeof(err) ? err : 0;
}

Result<HeldChild> HeldChild::launch(const std::vector<std::string> &argv)
{
	// Never run the command unheld: probes would miss its start.
	auto forked = fork_command(argv, [] { return ptrace(PTRACE_TRACEME, 0, 0, 0) == 0; });
	if (!forked)
		return forked.error();
	HeldChild child(forked->pid);
	int status;
	if (int err = exec_error(*forked)) {
		waitpid(forked->pid, &status, 0);
		child.pid_ = 0;
		return Error{"cannot run " + argv[0] + ": " + strerror(err)};
	}
	if (!wait_for_trap(forked->pid, status)) {
		child.pid_ = 0;
		return Error{"the command ended before it started (" + exit_text(status) + ")"};
	}
	if (auto r = run_to_entry(forked->pid); !r)
		return r.error();
	return child;
}

HeldChild::~HeldChild()
{
	if (pid_ > 0 && held_) {
		kill(pid_, SIGKILL);
		waitpid(pid_, nullptr, 0);
	}
}

Result<void> HeldChild::release()
{
	if (ptrace(PTRACE_DETACH, pid_, 0, 0))
		return Error{std::string("cannot release the launched command: ") + strerror(errno)};
	held_ = false;
	return {};
}

int HeldChild::wait()
{
	int status;
	while (waitpid(pid_, &status, 0) < 0)
		if (errno != EINTR)
			return 1;
	pid_ = 0;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + WTERMSIG(status);
}

bool stat_says_exited(std::string_view stat)
{
	// "PID (COMM) S ...": the command may hold ')' and spaces; the state
	// follows the last ')'. num_threads is field 20, the 18th after it.
	size_t paren = stat.rfind(')');
	if (paren == std::string_view::npos)
		return false;
	std::string_view rest = stat.substr(paren + 1);
	std::string_view fields[18];
	size_t n = 0;
	for (size_t at = 0; n < 18;) {
		at = rest.find_first_not_of(" \n", at);
		if (at == std::string_view::npos)
			break;
		size_t end = std::min(rest.find_first_of(" \n", at), rest.size());
		fields[n++] = rest.substr(at, end - at);
		at = end;
	}
	if (n < 18 || fields[0].size() != 1 || (fields[0][0] != 'Z' && fields[0][0] != 'X'))
		return false;
	// A leader that called pthread_exit beside live threads is a zombie
	// too ("Zl"): the process runs on while any other thread does.
	unsigned long threads = 0;
	auto [end, ec] = std::from_chars(fields[17].data(), fields[17].data() + fields[17].size(), threads);
	return ec == std::errc() && end == fields[17].data() + fields[17].size() && threads <= 1;
}

bool process_exists(int pid)
{
	if (pid <= 0 || (kill(pid, 0) != 0 && errno != EPERM))
		return false;
	// kill() reaches a zombie: exited, not yet reaped by its parent.
	char path[32];
	snprintf(path, sizeof path, "/proc/%d/stat", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno != ENOENT; // reaped since; unreadable (hidepid): as kill() says
	char buf[1024];
	ssize_t n = read(fd, buf, sizeof buf);
	close(fd);
	return n <= 0 || !stat_says_exited(std::string_view(buf, size_t(n)));
}

std::string thread_name(uint32_t pid, uint32_t tid, const std::map<uint32_t, std::string> &exited)
{
	std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/comm");
	std::string name;
	if (std::getline(in, name) && !name.empty())
		return name;
	auto it = exited.find(tid);
	return it != exited.end() ? it->second : "";
}

ProfileProcess describe_process(int pid)
{
	ProfileProcess p;
	p.pid = pid;
	std::string dir = "/proc/" + std::to_string(pid);
	p.comm = read_file(dir + "/comm");
	if (!p.comm.empty() && p.comm.back() == '\n')
		p.comm.pop_back();
	p.ns_pid = ns_pid_from_status(read_file(dir + "/status"));
	p.cgroup = cgroup_from_proc(read_file(dir + "/cgroup"));
	ContainerId container = container_id_from_cgroup(p.cgroup);
	p.container_runtime = container.runtime;
	p.container_id = container.id;
	std::string cmdline = read_file(dir + "/cmdline");
	for (size_t start = 0; start < cmdline.size();) {
		size_t end = cmdline.find('\0', start);
		if (end == std::string::npos)
			end = cmdline.size();
		p.cmdline.push_back(cmdline.substr(start, end - start));
		start = end + 1;
	}
	return p;
}

int open_pidfd(int pid)
{
	return static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
}

bool has_exited(int pid)
{
	int fd = open_pidfd(pid);
	if (fd < 0)
		return true;
	pollfd p = {fd, POLLIN, 0};
	bool exited = poll(&p, 1, 0) == 1;
	close(fd);
	return exited;
}

} // namespace usdtprof
