#include <catch2/catch.hpp>

#include "target/container.h"
#include "target/proc_root.h"

using namespace usdtprof;

namespace {

const std::string kId = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

ContainerId parse(const std::string &path)
{
	return container_id_from_cgroup(path);
}

} // namespace

TEST_CASE("container ids are parsed from the usual runtimes' cgroup names", "[container]")
{
	using Case = std::tuple<std::string, std::string>;
	auto [path, runtime] = GENERATE_REF(
		Case{"/system.slice/docker-" + kId + ".scope", "docker"}, Case{"/docker/" + kId, "docker"},
		Case{"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1a2b.slice/cri-containerd-" + kId +
			     ".scope",
		     "containerd"},
		Case{"/kubepods.slice/kubepods-pod1a2b.slice/crio-" + kId + ".scope", "crio"},
		Case{"/machine.slice/libpod-" + kId + ".scope/container", "podman"},
		Case{"/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" + kId + ".scope", "podman"},
		Case{"/kubepods/burstable/pod1a2b-3c4d/" + kId, "kubernetes"});
	INFO(path);
	ContainerId c = parse(path);
	REQUIRE(c.runtime == runtime);
	REQUIRE(c.id == kId);
}

TEST_CASE("cgroups that name no container give none", "[container]")
{
	auto path = GENERATE_REF(std::string("/"), std::string(""), std::string("/user.slice/user-0.slice/session-3.scope"),
				 "/system.slice/crio-conmon-" + kId + ".scope", "/system.slice/docker-" + kId.substr(1) + ".scope",
				 "/system.slice/docker-" + kId + "0.scope", "/docker/" + kId.substr(0, 12),
				 std::string("/docker-") + "0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF.scope",
				 "/" + kId, "/other/" + kId, "/docker/" + kId.substr(0, 63) + "g");
	INFO(path);
	ContainerId c = parse(path);
	REQUIRE(c.id.empty());
	REQUIRE(c.runtime.empty());
}

TEST_CASE("the innermost container named in a cgroup is its", "[container]")
{
	std::string outer(64, 'a');
	REQUIRE(parse("/docker/" + outer + "/docker/" + kId).id == kId);
	REQUIRE(parse("/system.slice/docker-" + outer + ".scope/libpod-" + kId + ".scope").runtime == "podman");
}

TEST_CASE("the cgroup of a process: the unified hierarchy's, bounded and escaped", "[container]")
{
	REQUIRE(cgroup_from_proc("0::/system.slice/docker-x.scope\n") == "/system.slice/docker-x.scope");
	// Hybrid: a v1 hierarchy holds the container when the unified one is the root.
	REQUIRE(cgroup_from_proc("12:pids:/docker/abc\n1:name=systemd:/docker/abc\n0::/\n") == "/docker/abc");
	REQUIRE(cgroup_from_proc("0::/a:b:c\n") == "/a:b:c");
	REQUIRE(cgroup_from_proc("") == "");
	REQUIRE(cgroup_from_proc("garbage") == "");
	// A container may name its cgroups with any bytes.
	std::string hostile = cgroup_from_proc(std::string("0::/x\x1b[2J\n", 11) + "y");
	REQUIRE(hostile.find('\x1b') == std::string::npos);
	REQUIRE(hostile.find("\\x1b") != std::string::npos);
	std::string long_path = cgroup_from_proc("0::/" + std::string(10000, 'a') + "\n");
	REQUIRE(long_path.size() == kMaxCgroupPath);
	REQUIRE(long_path.ends_with("..."));
	std::string long_escaped = cgroup_from_proc("0::/" + std::string(10000, '\x01') + "\n");
	REQUIRE(long_escaped.size() <= 4 * kMaxCgroupPath);
}

TEST_CASE("a process's pid in its own pid namespace is the last NSpid field", "[container]")
{
	REQUIRE(ns_pid_from_status("Name:\tsrv\nNSpid:\t4242\t7\nNStgid:\t4242\t7\n") == 7);
	REQUIRE(ns_pid_from_status("Name:\tsrv\nNSpid:\t4242\t9\t1\n") == 1);
	REQUIRE(ns_pid_from_status("Name:\tsrv\nNSpid:\t4242\n") == 0); // usdtprof's own namespace
	REQUIRE(ns_pid_from_status("Name:\tsrv\n") == 0);
	REQUIRE(ns_pid_from_status("Name:\tsrv\nNSpid:\t4242\tx\n") == 0);
	REQUIRE(ns_pid_from_status("Name:\tsrv\nNSpid:\t4242\t99999999999999\n") == 0);
}

TEST_CASE("/proc/PID/root/REST names REST in PID's root; nothing else does", "[container]")
{
	auto r = split_proc_root("/proc/42/root/app/bin/srv");
	REQUIRE(r);
	REQUIRE(r->pid == 42);
	REQUIRE(r->path == "/app/bin/srv");
	REQUIRE(split_proc_root("/proc/42/root")->path == "/");
	REQUIRE(split_proc_root("/proc/42/root/")->path == "/");
	for (const char *other : {"/proc/42/rootfs/x", "/proc/self/root/x", "/proc//root/x", "/proc/42/cwd/x", "/usr/bin/x",
				  "proc/42/root/x", "/proc/4200000000000/root/x"})
		REQUIRE_FALSE(split_proc_root(other));
}
