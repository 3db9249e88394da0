// USDT (SystemTap SDT) probe discovery: reads .note.stapsdt from ELF files and
// decodes argument specs into the form the BPF programs read.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "usdtprof/bpf_shared.h"

namespace usdtprof {

// One probe site: a probe (provider:name) may have several sites in a binary.
struct UsdtSite {
	std::string provider;
	std::string name;
	uint64_t pc = 0;                 // virtual address in the ELF file (after prelink adjustment)
	uint64_t pc_offset = 0;          // file offset of pc: what a uprobe attaches to
	uint64_t semaphore = 0;          // virtual address of the semaphore, 0 if none
	uint64_t semaphore_offset = 0;   // file offset of the semaphore (uprobe ref_ctr_offset), 0 if none
	std::string args_text;           // raw argument string, e.g. "8@%rax -4@$5"
	std::vector<std::string> args;   // args_text split into one spec per argument
};

// A target's file may hold millions of notes: at most this many are read
// from one file, from at most this many bytes of notes.
constexpr size_t kMaxSitesPerFile = 65536;
constexpr size_t kMaxNoteBytes = 16 << 20;
// And at most this many are kept from all files, and attached in all.
constexpr size_t kMaxSitesTotal = 131072;

// The USDT sites of an ELF file, in note order, up to max_sites and
// kMaxNoteBytes (*cut tells whether some were left). An ELF without probes
// gives an empty vector; an unreadable or non-ELF file gives an Error. fd is
// read with pread only; name is for messages.
Result<std::vector<UsdtSite>> read_usdt_sites(int fd, const std::string &name, bool *cut = nullptr,
					      size_t max_sites = kMaxSitesPerFile);
// ... of the file at path, opened without blocking: a regular file only.
Result<std::vector<UsdtSite>> read_usdt_sites(const std::string &path, bool *cut = nullptr);

// File offset of the ELF entry point: code that runs once, at start-up.
Result<uint64_t> entry_point_offset(int fd, const std::string &name);

// Decodes one x86-64 argument spec ("8@%rdi", "-4@$-5", "8@-16(%rbp)", "4@%eax").
Result<usdtprof_arg_spec> parse_usdt_arg(std::string_view spec);

} // namespace usdtprof
