// SPDX-License-Identifier: MIT
//
// standin_mem.hpp - the stand-in DMA engine's "device memory" (TB5_SIM
// dma=standin, a test device): a memfd of its own name, mapped shared.
// The memfd plays the dma-buf (tb5_reg_gpu()'s fd) and the mapping the
// device address; the engine takes no other memory, as CUDA takes no host
// pointer, and a peer process takes the memfd with pidfd_getfd() and maps
// it, as the CUDA engine's peers take a cuMem allocation's shareable
// handle. Memory allocated private (a memfd of a second name) is device
// memory that cannot be exported, as a cuMem allocation made without a
// POSIX fd handle type. Header-only, so that tests allocate it exactly as
// the engine expects it (standin_dma.cc).
#ifndef TB5_SIM_STANDIN_MEM_HPP
#define TB5_SIM_STANDIN_MEM_HPP

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>

namespace tb5::sim {

// The memfd's name; /proc/<pid>/fd and /proc/<pid>/maps show
// "/memfd:tb5-standin-dev (deleted)".
inline constexpr char kStandinMemName[] = "tb5-standin-dev";
// Private memory's: "/memfd:tb5-standin-dev.private (deleted)".
inline constexpr char kStandinPrivateName[] = "tb5-standin-dev.private";

// @len bytes of stand-in device memory: its address, and *@fd the memfd
// (keep it open while the memory may be exported; close it with
// standin_free()), private (not exportable) if @priv. nullptr when the
// system refuses.
inline void *standin_alloc(size_t len, int *fd, bool priv = false)
{
	int f = memfd_create(priv ? kStandinPrivateName : kStandinMemName, MFD_CLOEXEC);
	void *p;

	if (f < 0)
		return nullptr;
	if (ftruncate(f, off_t(len)) ||
	    (p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0)) ==
		    MAP_FAILED) {
		close(f);
		return nullptr;
	}
	*fd = f;
	return p;
}

// Unmaps @p (@len bytes) and closes @fd (if >= 0).
inline void standin_free(void *p, size_t len, int fd)
{
	munmap(p, len);
	if (fd >= 0)
		close(fd);
}

} // namespace tb5::sim

#endif // TB5_SIM_STANDIN_MEM_HPP
