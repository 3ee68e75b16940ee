// SPDX-License-Identifier: MIT
//
// standin_dma.cc - the stand-in DMA engine (TB5_SIM dma=standin): the
// DmaEngine interface without a GPU, for tests. Its device memory is the
// memfds of sim/standin_mem.hpp; it refuses any other pointer, as CUDA
// refuses host memory. Export is (pid, fd), as the CUDA engine exports a
// cuMem allocation: the importer takes the fd with pidfd_getfd() and maps
// it; private memory, or a process whose peers may not take its fds, is
// not exported (with the reason). Copies are plain memcpy, made at once:
// it checks the rules, it models no speed.
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "error.hpp"
#include "sim/dma_engine.hpp"
#include "sim/standin_mem.hpp"

namespace tb5::sim {
namespace {

// What /proc/<pid>/maps and /proc/<pid>/fd show for the stand-in's memfds.
const std::string kMemfdTarget = std::string("/memfd:") + kStandinMemName + " (deleted)";
const std::string kPrivateTarget =
	std::string("/memfd:") + kStandinPrivateName + " (deleted)";

struct StandinHandle {
	int32_t pid;
	int32_t fd;
	uint64_t file_off;
};
static_assert(sizeof(StandinHandle) <= sizeof(IpcHandle));

class StandinDma final : public DmaEngine {
public:
	const char *name() const override { return "standin"; }

	int find(const void *addr, uint64_t len, DevSpan &out) override
	{
		FILE *f = fopen("/proc/self/maps", "re");
		const auto a = uintptr_t(addr);
		char line[512];
		bool mapped = false;
		int ret = 0;

		if (!f)
			return fail(-errno, "stand-in DMA engine: /proc/self/maps: %s",
				    strerror(errno));
		while (fgets(line, sizeof(line), f)) {
			uintptr_t start, end;
			unsigned long long off, ino;
			char path[400] = "";

			if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %*s %llx %*s %llu %399[^\n]",
				   &start, &end, &off, &ino, path) < 4 ||
			    a < start || a >= end)
				continue;
			mapped = true;
			if (kMemfdTarget != path && kPrivateTarget != path) {
				ret = fail(-EINVAL, "%p is not device memory of the "
					   "stand-in DMA engine (it maps %s)", addr,
					   *path ? path : "anonymous memory");
			} else if (len > end - a) {
				ret = fail(-EINVAL, "%" PRIu64 " bytes from %p run past "
					   "the end of its stand-in device allocation "
					   "(%zu bytes from %p)", len, addr,
					   size_t(end - start), (void *)start);
			} else {
				out.base = reinterpret_cast<uint8_t *>(start);
				out.len = end - start;
				out.device = 0;
				out.file_ino = ino;
				out.file_off = off;
				out.priv = kPrivateTarget == path;
			}
			break;
		}
		fclose(f);
		if (!mapped)
			return fail(-EINVAL, "%p is not device memory of the stand-in "
				    "DMA engine (not mapped)", addr);
		return ret;
	}

	bool dmabuf_target(const std::string &target) const override
	{
		return target == kMemfdTarget || target == kPrivateTarget;
	}

	int check_dmabuf_maps(int fd, uint64_t offset, const void *addr,
			      const DevSpan &span) override
	{
		struct stat st;
		const uint64_t at = span.file_off +
				    uint64_t(static_cast<const uint8_t *>(addr) - span.base);

		if (fstat(fd, &st))
			return fail(-errno, "dma-buf fd %d: %s", fd, strerror(errno));
		if (uint64_t(st.st_ino) != span.file_ino)
			return fail(-EINVAL, "%p is not memory of dma-buf fd %d (it "
				    "maps another allocation)", addr, fd);
		if (at != offset)
			return fail(-EINVAL, "%p is byte %" PRIu64 " of dma-buf fd %d, "
				    "not the offset %" PRIu64 " given", addr, at, fd,
				    offset);
		return 0;
	}

	int export_span(const DevSpan &span, IpcHandle &out) override
	{
		// The memfd the application holds (the stand-in's allocation
		// keeps it open); a duplicate stays open while exported.
		DIR *d;
		int found = -1;

		if (span.priv)
			return fail(-EOPNOTSUPP, "stand-in memory at %p is private (made "
				    "without a shareable handle, as a cuMem allocation "
				    "without CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)",
				    (void *)span.base);
		if (!fd_export_why().empty())
			return fail(-EOPNOTSUPP, "stand-in memory at %p cannot be "
				    "exported: %s", (void *)span.base,
				    fd_export_why().c_str());
		d = opendir("/proc/self/fd");
		if (!d)
			return fail(-errno, "stand-in export: /proc/self/fd: %s",
				    strerror(errno));
		while (struct dirent *e = readdir(d)) {
			struct stat st;
			std::string target;
			int fd = atoi(e->d_name);

			if (e->d_name[0] < '0' || e->d_name[0] > '9' || fd == dirfd(d))
				continue;
			if (!fstat(fd, &st) && uint64_t(st.st_ino) == span.file_ino &&
			    !fd_target(fd, target) && dmabuf_target(target)) {
				found = fd;
				break;
			}
		}
		closedir(d);
		if (found < 0)
			return fail(-EOPNOTSUPP, "stand-in memory at %p cannot be "
				    "exported: its memfd is closed", (void *)span.base);
		int dup = fcntl(found, F_DUPFD_CLOEXEC, 0);

		if (dup < 0)
			return fail(-errno, "stand-in export: dup: %s", strerror(errno));
		StandinHandle h = { int32_t(getpid()), dup, span.file_off };

		memset(&out, 0, sizeof(out));
		memcpy(out.bytes, &h, sizeof(h));
		return 0;
	}

	void unexport(const IpcHandle &ih) override
	{
		StandinHandle h;

		memcpy(&h, ih.bytes, sizeof(h));
		if (h.pid == getpid())
			close(h.fd);
	}

	int import_span(const IpcHandle &ih, uint64_t len, uint8_t **base) override
	{
		StandinHandle h;

		memcpy(&h, ih.bytes, sizeof(h));
		int fd = take_fd(h.pid, h.fd);

		if (fd < 0)
			return fd;
		void *p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
			       off_t(h.file_off));
		int err = errno;

		close(fd);
		if (p == MAP_FAILED)
			return fail(-err, "stand-in import: mapping pid %d's fd %d: %s",
				    int(h.pid), int(h.fd), strerror(err));
		*base = static_cast<uint8_t *>(p);
		return 0;
	}

	void close_import(uint8_t *base, uint64_t len) override { munmap(base, len); }

	void pin(void *, size_t) override {}
	void unpin(void *) override {}

	int copy(void *dst, const void *src, size_t len) override
	{
		memcpy(dst, src, len);
		return 0;
	}
	int sync() override { return 0; }
};

} // namespace

std::unique_ptr<DmaEngine> make_standin_dma(std::string &)
{
	return std::make_unique<StandinDma>();
}

} // namespace tb5::sim
