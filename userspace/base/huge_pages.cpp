#include "base/huge_pages.h"

#include <cstdint>
#include <sys/mman.h>

namespace usdtprof {

void advise_huge_pages(const void *data, size_t bytes)
{
	constexpr uintptr_t kHuge = uintptr_t(2) << 20;
	if (bytes < 2 * kHuge)
		return;
	uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + kHuge - 1) & ~(kHuge - 1);
	uintptr_t end = (reinterpret_cast<uintptr_t>(data) + bytes) & ~(kHuge - 1);
	if (end > begin)
		madvise(reinterpret_cast<void *>(begin), end - begin, MADV_HUGEPAGE);
}

void *map_zeroed(size_t bytes)
{
	if (bytes == 0)
		return nullptr;
	void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return nullptr;
	return p;
}

void unmap(void *data, size_t bytes)
{
	if (data)
		munmap(data, bytes);
}

} // namespace usdtprof
