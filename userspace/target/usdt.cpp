#include "target/usdt.h"

#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <memory>
#include <optional>
#include <sys/stat.h>
#include <unistd.h>

#include "base/unique_fd.h"

namespace usdtprof {

namespace {

constexpr uint32_t kNtStapsdt = 3;
// Note owner, including its terminating NUL as stored in the note.
constexpr std::string_view kStapsdtOwner{"stapsdt", 8};

struct ElfEnd {
	void operator()(Elf *elf) const { elf_end(elf); }
};
using ElfPtr = std::unique_ptr<Elf, ElfEnd>;

// Note descriptors are raw file bytes: libelf translates only the note header.
uint64_t read_addr(const unsigned char *p, size_t size, bool big_endian) {
	uint64_t v = 0;
	for (size_t i = 0; i < size; i++)
		v = v << 8 | p[big_endian ? i : size - 1 - i];
	return v;
}

// File offset of addr via the PT_LOAD segment containing it that has all of
// `flags`: that is the offset a uprobe (or its ref_ctr_offset) is given.
std::optional<uint64_t> file_offset(const std::vector<GElf_Phdr> &loads, uint64_t addr,
				    uint32_t flags) {
	for (const GElf_Phdr &ph : loads)
		if ((ph.p_flags & flags) == flags && ph.p_vaddr <= addr && addr - ph.p_vaddr < ph.p_memsz)
			return addr - ph.p_vaddr + ph.p_offset;
	return std::nullopt;
}

std::vector<std::string> split_args(std::string_view text) {
	std::vector<std::string> args;
	while (!text.empty()) {
		size_t end = text.find(' ');
		if (end != 0)
			args.emplace_back(text.substr(0, end));
		text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
	}
	return args;
}

// 64-, 32-, 16- and 8-bit names of each register, in enum usdtprof_reg order.
// ah..dh are left out on purpose: a spec cannot express their 8-bit shift.
constexpr std::array<std::array<std::string_view, 4>, 16> kRegNames = {{
	{"rax", "eax", "ax", "al"},     {"rbx", "ebx", "bx", "bl"},
	{"rcx", "ecx", "cx", "cl"},     {"rdx", "edx", "dx", "dl"},
	{"rsi", "esi", "si", "sil"},    {"rdi", "edi", "di", "dil"},
	{"rbp", "ebp", "bp", "bpl"},    {"rsp", "esp", "sp", "spl"},
	{"r8", "r8d", "r8w", "r8b"},    {"r9", "r9d", "r9w", "r9b"},
	{"r10", "r10d", "r10w", "r10b"}, {"r11", "r11d", "r11w", "r11b"},
	{"r12", "r12d", "r12w", "r12b"}, {"r13", "r13d", "r13w", "r13b"},
	{"r14", "r14d", "r14w", "r14b"}, {"r15", "r15d", "r15w", "r15b"},
}};

// "%name" to its register.
std::optional<usdtprof_reg> parse_reg(std::string_view text) {
	if (!text.starts_with('%'))
		return std::nullopt;
	text.remove_prefix(1);
	if (text == "rip")
		return USDTPROF_REG_IP;
	for (size_t reg = 0; reg < kRegNames.size(); reg++)
		for (std::string_view name : kRegNames[reg])
			if (text == name)
				return static_cast<usdtprof_reg>(reg);
	return std::nullopt;
}

// Optionally signed decimal or 0x-prefixed hex; all of text must be used.
std::optional<int64_t> parse_int(std::string_view text) {
	const bool negative = text.starts_with('-');
	if (negative || text.starts_with('+'))
		text.remove_prefix(1);
	int base = 10;
	if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
		base = 16;
		text.remove_prefix(2);
	}
	uint64_t magnitude = 0;
	const char *end = text.data() + text.size();
	auto [ptr, ec] = std::from_chars(text.data(), end, magnitude, base);
	if (text.empty() || ec != std::errc() || ptr != end)
		return std::nullopt;
	return static_cast<int64_t>(negative ? 0 - magnitude : magnitude);
}

Error bad_arg(std::string_view spec, const char *why) {
	return Error{"unsupported USDT argument \"" + std::string(spec) + "\": " + why};
}

} // namespace

Result<usdtprof_arg_spec> parse_usdt_arg(std::string_view spec) {
	usdtprof_arg_spec arg{};
	const size_t at = spec.find('@');
	if (at == std::string_view::npos)
		return bad_arg(spec, "expected SIZE@LOCATION");
	std::string_view size = spec.substr(0, at), loc = spec.substr(at + 1);
	arg.is_signed = size.starts_with('-');
	if (size.starts_with('-') || size.starts_with('+'))
		size.remove_prefix(1);
	if (size.size() != 1 || std::string_view("1248").find(size[0]) == std::string_view::npos)
		return bad_arg(spec, "size must be 1, 2, 4 or 8");
	arg.size = size[0] - '0';

	if (loc.starts_with('$')) {
		std::optional<int64_t> imm = parse_int(loc.substr(1));
		if (!imm)
			return bad_arg(spec, "bad immediate");
		arg.kind = USDTPROF_ARG_CONST;
		arg.offset = *imm;
		return arg;
	}
	if (loc.starts_with('%')) {
		std::optional<usdtprof_reg> reg = parse_reg(loc);
		if (!reg)
			return bad_arg(spec, "unknown register");
		arg.kind = USDTPROF_ARG_REG;
		arg.reg = *reg;
		return arg;
	}
	// [displacement](%reg); index-scaled forms fail as an unknown register.
	const size_t open = loc.find('(');
	if (open == std::string_view::npos || !loc.ends_with(')'))
		return bad_arg(spec, "unknown location form");
	std::string_view disp = loc.substr(0, open);
	std::optional<int64_t> offset = disp.empty() ? 0 : parse_int(disp);
	if (!offset)
		return bad_arg(spec, "displacement is not a number");
	std::optional<usdtprof_reg> reg = parse_reg(loc.substr(open + 1, loc.size() - open - 2));
	if (!reg)
		return bad_arg(spec, "unknown base register");
	arg.kind = USDTPROF_ARG_REG_DEREF;
	arg.reg = *reg;
	arg.offset = *offset;
	return arg;
}

namespace {

// An open ELF file with its header and loadable segments.
struct ElfFile {
	ElfPtr elf;
	GElf_Ehdr ehdr;
	std::vector<GElf_Phdr> loads;
};

// libelf reads fd with pread, as it needs: fd stays the caller's.
Result<ElfFile> open_elf(int fd, const std::string &name)
{
	if (elf_version(EV_CURRENT) == EV_NONE)
		return Error{std::string("libelf: ") + elf_errmsg(-1)};
	ElfFile f;
	f.elf = ElfPtr(elf_begin(fd, ELF_C_READ, nullptr));
	if (!f.elf || elf_kind(f.elf.get()) != ELF_K_ELF)
		return Error{name + ": not an ELF file"};
	size_t phnum = 0;
	if (!gelf_getehdr(f.elf.get(), &f.ehdr) || elf_getphdrnum(f.elf.get(), &phnum) != 0)
		return Error{name + ": " + elf_errmsg(-1)};
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(f.elf.get(), static_cast<int>(i), &ph) && ph.p_type == PT_LOAD)
			f.loads.push_back(ph);
	}
	return f;
}

// The notes, or their first kMaxNoteBytes (a note cut in two is not read).
Elf_Data *note_data(Elf *elf, Elf_Scn *notes, bool &cut)
{
	GElf_Shdr shdr;
	if (!gelf_getshdr(notes, &shdr))
		return nullptr;
	cut = shdr.sh_size > kMaxNoteBytes;
	if (!cut)
		return elf_getdata(notes, nullptr);
	return elf_getdata_rawchunk(elf, int64_t(shdr.sh_offset), kMaxNoteBytes, ELF_T_NHDR);
}

// x86-64's `nop` and `nopl 0x0(%rax,%rax,1)`: the sequence a USDT site
// emits (our header, libbpf's usdt.h) so that a uprobe on its second
// instruction can be optimized into a call by the kernel, where the first
// keeps a breakpoint (an exception, ~4x the cost on the machines measured
// in docs/benchmarks.md) for tools that attach at the note's address.
constexpr unsigned char kNopNop5[] = {0x90, 0x0f, 0x1f, 0x44, 0x00, 0x00};

bool nop5_follows(int fd, const GElf_Ehdr &ehdr, uint64_t pc_offset)
{
	unsigned char code[sizeof kNopNop5];
	return ehdr.e_machine == EM_X86_64 &&
	       pread(fd, code, sizeof code, off_t(pc_offset)) == ssize_t(sizeof code) &&
	       std::memcmp(code, kNopNop5, sizeof code) == 0;
}


// The .note.stapsdt section and .stapsdt.base's address, when the file has them.
struct StapsdtSections {
	Elf_Scn *notes = nullptr;
	std::optional<uint64_t> base;
};

StapsdtSections stapsdt_sections(Elf *elf, size_t shstrndx)
{
	StapsdtSections found;
	for (Elf_Scn *scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
		GElf_Shdr shdr;
		if (!gelf_getshdr(scn, &shdr))
			continue;
		const char *name = elf_strptr(elf, shstrndx, shdr.sh_name);
		if (!name)
			continue;
		if (shdr.sh_type == SHT_NOTE && std::strcmp(name, ".note.stapsdt") == 0)
			found.notes = scn;
		else if (std::strcmp(name, ".stapsdt.base") == 0)
			found.base = shdr.sh_addr;
	}
	return found;
}

// One stapsdt note's site (desc: its descsz bytes), its addresses moved by
// .stapsdt.base and turned into file offsets.
Result<UsdtSite> note_site(int fd, const ElfFile &file, const std::string &path, std::string_view desc_bytes,
			   std::optional<uint64_t> stapsdt_base)
{
	const size_t addr_size = file.ehdr.e_ident[EI_CLASS] == ELFCLASS64 ? 8 : 4;
	const bool big_endian = file.ehdr.e_ident[EI_DATA] == ELFDATA2MSB;
	const Error malformed{path + ": malformed .note.stapsdt"};
	if (desc_bytes.size() < 3 * addr_size)
		return malformed;
	const auto *desc = reinterpret_cast<const unsigned char *>(desc_bytes.data());
	UsdtSite site;
	site.pc = read_addr(desc, addr_size, big_endian);
	const uint64_t base = read_addr(desc + addr_size, addr_size, big_endian);
	site.semaphore = read_addr(desc + 2 * addr_size, addr_size, big_endian);
	// Prelink moves the sections but not the notes: .stapsdt.base records
	// where the note's base address ended up.
	if (stapsdt_base) {
		site.pc += *stapsdt_base - base;
		if (site.semaphore)
			site.semaphore += *stapsdt_base - base;
	}

	std::string_view strings = desc_bytes.substr(3 * addr_size);
	for (std::string *out : {&site.provider, &site.name, &site.args_text}) {
		const size_t nul = strings.find('\0');
		if (nul == std::string_view::npos)
			return malformed;
		*out = strings.substr(0, nul);
		strings.remove_prefix(nul + 1);
	}
	site.args = split_args(site.args_text);

	std::optional<uint64_t> pc_offset = file_offset(file.loads, site.pc, PF_X);
	if (!pc_offset)
		return Error{path + ": probe " + site.provider + ":" + site.name +
			     " is outside any executable segment"};
	site.pc_offset = *pc_offset;
	site.nop5_follows = nop5_follows(fd, file.ehdr, site.pc_offset);
	if (site.nop5_follows)
		site.pc_offset += 1;
	if (site.semaphore) {
		std::optional<uint64_t> sem_offset = file_offset(file.loads, site.semaphore, PF_W);
		if (!sem_offset)
			return Error{path + ": semaphore of probe " + site.provider + ":" + site.name +
				     " is outside any writable segment"};
		site.semaphore_offset = *sem_offset;
	}
	return site;
}

} // namespace

Result<uint64_t> entry_point_offset(int fd, const std::string &name)
{
	auto f = open_elf(fd, name);
	if (!f)
		return f.error();
	std::optional<uint64_t> offset = file_offset(f->loads, f->ehdr.e_entry, PF_X);
	if (!f->ehdr.e_entry || !offset)
		return Error{name + ": no entry point"};
	return *offset;
}

Result<std::vector<UsdtSite>> read_usdt_sites(const std::string &path, bool *cut)
{
	// Non-blocking: a FIFO put at the path must not hang the open.
	UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
	struct stat st;
	if (fd.get() < 0 || fstat(fd.get(), &st) != 0)
		return Error{path + ": " + std::strerror(errno)};
	if (!S_ISREG(st.st_mode))
		return Error{path + ": not a regular file"};
	return read_usdt_sites(fd.get(), path, cut);
}

Result<std::vector<UsdtSite>> read_usdt_sites(int fd, const std::string &path, bool *cut, size_t max_sites) {
	auto file = open_elf(fd, path);
	if (!file)
		return file.error();
	Elf *elf = file->elf.get();
	size_t shstrndx = 0;
	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return Error{path + ": " + elf_errmsg(-1)};

	StapsdtSections sections = stapsdt_sections(elf, shstrndx);
	bool bytes_cut = false;
	if (cut)
		*cut = false;
	if (!sections.notes)
		return std::vector<UsdtSite>{};
	Elf_Data *data = note_data(elf, sections.notes, bytes_cut);
	if (!data)
		return Error{path + ": " + elf_errmsg(-1)};

	std::vector<UsdtSite> sites;
	GElf_Nhdr nhdr;
	size_t name_off = 0, desc_off = 0;
	for (size_t off = 0, next; (next = gelf_getnote(data, off, &nhdr, &name_off, &desc_off)) != 0;
	     off = next) {
		if (sites.size() == max_sites) {
			bytes_cut = true;
			break;
		}
		const char *buf = static_cast<const char *>(data->d_buf);
		if (nhdr.n_type != kNtStapsdt || std::string_view(buf + name_off, nhdr.n_namesz) != kStapsdtOwner)
			continue;
		auto site = note_site(fd, *file, path, std::string_view(buf + desc_off, nhdr.n_descsz), sections.base);
		if (!site)
			return site.error();
		sites.push_back(std::move(*site));
	}
	if (cut)
		*cut = bytes_cut;
	return sites;
}

} // namespace usdtprof
