// SPDX-License-Identifier: MIT
//
// udmabuf.cc - dma-bufs from /dev/udmabuf.
#include "udmabuf.hpp"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>
#include <utility>

#include "errors.hpp"
#include "units.hpp"

// Not every distribution's kernel headers have it (it came with 4.20): the
// tool builds without, and --memory udmabuf then says so.
#if defined(__has_include)
#if __has_include(<linux/udmabuf.h>)
#include <linux/udmabuf.h>
#define TB5_PERF_HAVE_UDMABUF 1
#endif
#endif

namespace tb5perf {
namespace {

constexpr char kDevice[] = "/dev/udmabuf";

[[noreturn]] void throw_not_built()
{
	throw Error("--memory udmabuf: this tb5-perf was built without "
		    "udmabuf support (<linux/udmabuf.h> was missing)");
}

[[noreturn]] void throw_no_device(int err)
{
	if (err == ENOENT)
		throw Error("--memory udmabuf: /dev/udmabuf does not exist: "
			    "the kernel needs CONFIG_UDMABUF (Debian's 6.12 "
			    "and newer kernels have it, Debian 12's 6.1 does "
			    "not; where it is a module, modprobe udmabuf)");
	throw Error(std::string("--memory udmabuf: cannot open ") + kDevice +
		    ": " + strerror(err));
}

#ifdef TB5_PERF_HAVE_UDMABUF
class Fd {
public:
	explicit Fd(int fd) : fd_(fd) {}
	~Fd()
	{
		if (fd_ >= 0)
			close(fd_);
	}
	Fd(const Fd &) = delete;
	Fd &operator=(const Fd &) = delete;

	int get() const { return fd_; }
	int release() { return std::exchange(fd_, -1); }

private:
	int fd_;
};

// udmabuf refuses a dma-buf larger than its size_limit_mb parameter with
// EINVAL, the same errno as any other misuse: compare to tell which.
uint64_t size_limit_mb()
{
	std::ifstream f("/sys/module/udmabuf/parameters/size_limit_mb");
	uint64_t mb = 0;

	if (f >> mb && mb)
		return mb;
	return 64;	// the default, and the fixed limit of old kernels
}
#endif

} // namespace

bool udmabuf_built()
{
#ifdef TB5_PERF_HAVE_UDMABUF
	return true;
#else
	return false;
#endif
}

void check_udmabuf()
{
	if (!udmabuf_built())
		throw_not_built();
	const int fd = open(kDevice, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		throw_no_device(errno);
	close(fd);
}

#ifdef TB5_PERF_HAVE_UDMABUF
Udmabuf::Udmabuf(size_t len)
{
	const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
	const std::string what = "udmabuf of " + format_size(len);

	if (!len)
		throw Error("udmabuf: the length must be > 0");
	size_ = (len + page - 1) / page * page;
	Fd dev(open(kDevice, O_RDWR | O_CLOEXEC));
	if (dev.get() < 0)
		throw_no_device(errno);
	Fd memfd(memfd_create("tb5-perf", MFD_CLOEXEC | MFD_ALLOW_SEALING));
	if (memfd.get() < 0)
		throw Error(what + ": memfd_create: " + strerror(errno));
	if (ftruncate(memfd.get(), static_cast<off_t>(size_)))
		throw Error(what + ": ftruncate: " + strerror(errno));
	// udmabuf takes only memfds that cannot shrink: its pages must stay.
	if (fcntl(memfd.get(), F_ADD_SEALS, F_SEAL_SHRINK))
		throw Error(what + ": F_ADD_SEALS: " + strerror(errno));
	struct udmabuf_create create = {};
	create.memfd = static_cast<uint32_t>(memfd.get());
	create.flags = UDMABUF_FLAGS_CLOEXEC;
	create.offset = 0;
	create.size = size_;
	Fd dmabuf(ioctl(dev.get(), UDMABUF_CREATE, &create));
	if (dmabuf.get() < 0) {
		const int err = errno;
		const uint64_t limit = size_limit_mb();
		// Limit first: a server's message reaches the client cut
		// to the 87 characters of an ERROR.
		if (err == EINVAL && size_ > (limit << 20))
			throw Error(what + ": over udmabuf's size_limit_mb "
				    "of " + std::to_string(limit) + " MiB (raise "
				    "it in /sys/module/udmabuf/parameters/, or "
				    "lower --max-inflight and the largest size)");
		throw Error(what + ": UDMABUF_CREATE: " + strerror(err));
	}
	// The CPU's view of the same pages; the mapping keeps the memfd
	// open, and the dma-buf holds its pages, so the fd can go.
	void *p = mmap(nullptr, size_, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_POPULATE, memfd.get(), 0);
	if (p == MAP_FAILED)
		throw Error(what + ": mmap of the memfd: " + strerror(errno));
	data_ = static_cast<uint8_t *>(p);
	// Touch every page, so that no page fault lands in a measurement.
	memset(data_, 0, size_);
	fd_ = dmabuf.release();
}
#else
Udmabuf::Udmabuf(size_t)
{
	throw_not_built();
}
#endif

Udmabuf::~Udmabuf()
{
	close_fd();
	if (data_)
		munmap(data_, size_);
}

void Udmabuf::close_fd()
{
	if (fd_ >= 0)
		close(fd_);
	fd_ = -1;
}

} // namespace tb5perf
