// SPDX-License-Identifier: MIT
//
// fabric_file.hpp - a simulator fabric file as a libtb5 of another fabric
// version would have made it, for the tests of a version mismatch
// (tests/lib, tests/plugin). Header-only: it needs src/lib on the include
// path (sim/fabric.hpp) and nothing to link.
#ifndef TB5_SUPPORT_FABRIC_FILE_HPP
#define TB5_SUPPORT_FABRIC_FILE_HPP

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <string>

#include "sim/fabric.hpp"

namespace tb5test {

// Makes /dev/shm/tb5sim.<@fabric> (which must not exist) with version
// @version, hosts=2, ring=256 and one cable, its magic set last as the
// simulator sets it; returns the file's header, mapped (munmap() it,
// sizeof(FabricHeader) bytes), or nullptr.
inline tb5::sim::FabricHeader *make_fabric_file(const std::string &fabric, uint32_t version)
{
	using tb5::sim::FabricHeader;
	const std::string shm = "/tb5sim." + fabric;
	int fd = shm_open(shm.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

	if (fd < 0)
		return nullptr;
	void *p = MAP_FAILED;
	if (ftruncate(fd, sizeof(FabricHeader)) == 0)
		p = mmap(nullptr, sizeof(FabricHeader), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		shm_unlink(shm.c_str());
		return nullptr;
	}
	auto *h = static_cast<FabricHeader *>(p);
	h->version = version;
	h->hosts = 2;
	h->ring_size = 256;
	h->cables = 1;
	h->magic.store(tb5::sim::kFabricMagic, std::memory_order_release);
	return h;
}

} // namespace tb5test

#endif // TB5_SUPPORT_FABRIC_FILE_HPP
