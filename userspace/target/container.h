// A process's container identity as the host shows it: its pid inside its
// own pid namespace, its cgroup and the container id a runtime put in the
// cgroup's name. A container chooses much of this (its cgroup names, when the
// runtime delegates them): read bounded, kept escaped.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace usdtprof {

// Longer cgroup paths are cut here (before escaping) and marked with "...".
constexpr size_t kMaxCgroupPath = 512;

struct ContainerId {
	std::string runtime; // "docker", "containerd", "crio", "podman", "kubernetes"; "" when none
	std::string id;      // 64 lowercase hex digits; "" when none
};

// The container id in a cgroup path, from the innermost component that a
// usual runtime names: docker-<id>.scope (Docker, systemd driver),
// /docker/<id> (cgroupfs driver), cri-containerd-<id>.scope, crio-<id>.scope,
// libpod-<id>.scope (Podman), /kubepods/.../pod<uid>/<id> (cgroupfs kubelet).
// Anything else (crio-conmon-<id>, a short or non-hex id): none.
ContainerId container_id_from_cgroup(std::string_view cgroup_path);

// The cgroup of a process from its /proc/PID/cgroup text: the unified
// hierarchy's ("0::PATH"), else the first line's, cut at kMaxCgroupPath and
// escaped (escape_text): printable whatever bytes it held. "" if none.
std::string cgroup_from_proc(std::string_view proc_cgroup);

// The pid of a process in its innermost pid namespace from its
// /proc/PID/status text (the last NSpid field), 0 when it is in usdtprof's
// own namespace (one field) or the field is absent or bad.
int ns_pid_from_status(std::string_view status);

} // namespace usdtprof
