#include "base/huge_pages.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <sys/mman.h>

namespace usdtprof {

namespace {

constexpr uintptr_t kHuge = uintptr_t(2) << 20;

// Asks for huge pages for the whole 2 MiB pages inside [begin, end).
void advise_whole_huge_pages(uintptr_t begin, uintptr_t end)
{
	begin = (begin + kHuge - 1) & ~(kHuge - 1);
	end &= ~(kHuge - 1);
	if (end > begin)
		madvise(reinterpret_cast<void *>(begin), end - begin, MADV_HUGEPAGE);
}

constexpr size_t kPage = 4096;

// ns of the thread's CPU clock (a fault's handling, the hypervisor's
// included, is this thread's time; another process's is not).
int64_t thread_cpu_ns()
{
	timespec t{};
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return int64_t(t.tv_sec) * 1000000000 + t.tv_nsec;
}

// What a first write to a 4 KiB page costs here, ns (0 when unmeasurable).
int64_t small_page_fault_ns()
{
	constexpr size_t kPages = 64;
	void *p = mmap(nullptr, kPages * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 0;
	madvise(p, kPages * kPage, MADV_NOHUGEPAGE);
	int64_t start = thread_cpu_ns();
	for (size_t i = 0; i < kPages; i++)
		static_cast<volatile char *>(p)[i * kPage] = 1;
	int64_t ns = (thread_cpu_ns() - start) / int64_t(kPages);
	munmap(p, kPages * kPage);
	return ns;
}

} // namespace

void advise_huge_pages(const void *data, size_t bytes)
{
	if (bytes < 2 * kHuge)
		return;
	uintptr_t begin = reinterpret_cast<uintptr_t>(data);
	advise_whole_huge_pages(begin, begin + bytes);
}

bool fresh_pages_huge(const char *forced, int64_t small_page_fault_ns)
{
	if (forced && !strcmp(forced, "huge"))
		return true;
	if (forced && !strcmp(forced, "small"))
		return false;
	return small_page_fault_ns > 4000;
}

bool fresh_memory_in_huge_pages()
{
	static const bool huge = [] {
		const char *forced = getenv("USDTPROF_FRESH_PAGES");
		bool decided = forced && (!strcmp(forced, "huge") || !strcmp(forced, "small"));
		return fresh_pages_huge(forced, decided ? 0 : small_page_fault_ns());
	}();
	return huge;
}

void advise_fresh(const void *data, size_t bytes)
{
	constexpr uintptr_t kSmallHead = uintptr_t(512) << 10;
	if (bytes <= kSmallHead || !fresh_memory_in_huge_pages())
		return;
	uintptr_t begin = reinterpret_cast<uintptr_t>(data);
	advise_whole_huge_pages(begin + kSmallHead, begin + bytes);
}

void *map_zeroed(size_t bytes)
{
	if (bytes == 0)
		return nullptr;
	void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return nullptr;
	advise_fresh(p, bytes);
	return p;
}

void unmap(void *data, size_t bytes)
{
	if (data)
		munmap(data, bytes);
}

} // namespace usdtprof
