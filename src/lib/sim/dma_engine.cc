// SPDX-License-Identifier: MIT
//
// dma_engine.cc - choosing a DMA engine, and the queue of copies a link
// hands it.
#include "sim/dma_engine.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "error.hpp"
#include "tb5/tb5.h"
#include "util/unique_fd.hpp"

// Older C libraries' headers lack them; the numbers are every
// architecture's (but alpha's) since Linux 5.1.
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

namespace tb5::sim {

std::unique_ptr<DmaEngine> make_dma_engine(DmaKind kind, std::string &why)
{
	switch (kind) {
	case DmaKind::kCuda:
		return make_cuda_dma(why);
	case DmaKind::kStandin:
		return make_standin_dma(why);
	case DmaKind::kOff:
		break;
	}
	why = "TB5_SIM has dma=off";
	return nullptr;
}

int fd_target(int fd, std::string &out)
{
	char path[64], buf[PATH_MAX];
	ssize_t n;

	out.clear();
	if (fd < 0)
		return -EBADF;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, buf, sizeof(buf) - 1);
	if (n < 0)
		return errno == ENOENT ? -EBADF : -errno;
	out.assign(buf, size_t(n));
	return 0;
}

namespace {

constexpr int kCapSysPtrace = 19;	// linux/capability.h

std::string check_fd_export()
{
	UniqueFd self(int(syscall(SYS_pidfd_open, getpid(), 0)));
	int yama = 0;
	unsigned long long caps = 0;
	std::string line;

	if (!self)
		return std::string("pidfd_open: ") + strerror(errno) +
		       " (the kernel needs to be Linux 5.6 or later)";
	UniqueFd dup(int(syscall(SYS_pidfd_getfd, self.get(), self.get(), 0)));

	if (!dup)
		return std::string("pidfd_getfd: ") + strerror(errno) +
		       (errno == ENOSYS ? " (the kernel needs to be Linux 5.6 or later)" :
			errno == EPERM ? " (a seccomp filter refuses it?)" : "");
	std::ifstream("/proc/sys/kernel/yama/ptrace_scope") >> yama;
	std::ifstream status("/proc/self/status");
	while (std::getline(status, line))
		if (line.rfind("CapEff:", 0) == 0)
			caps = strtoull(line.c_str() + 7, nullptr, 16);
	if (yama >= 3 || (yama >= 1 && !(caps >> kCapSysPtrace & 1)))
		return "kernel.yama.ptrace_scope is " + std::to_string(yama) +
		       " and the process lacks CAP_SYS_PTRACE: its peers may not "
		       "take its fds with pidfd_getfd (ptrace_scope 0 allows it)";
	return "";
}

} // namespace

const std::string &fd_export_why()
{
	static const std::string why = check_fd_export();

	return why;
}

int take_fd(int32_t pid, int32_t fd)
{
	UniqueFd p(int(syscall(SYS_pidfd_open, pid, 0)));
	int ret;

	if (!p)
		return fail(-errno, "pidfd_open(%d): %s", int(pid), strerror(errno));
	ret = int(syscall(SYS_pidfd_getfd, p.get(), fd, 0));
	if (ret < 0)
		return fail(-errno, "pidfd_getfd(pid %d, fd %d): %s", int(pid), int(fd),
			    strerror(errno));
	return ret;
}

int DmaQueue::add(void *dst, const void *src, size_t len)
{
	auto *d = static_cast<uint8_t *>(dst);
	auto *s = static_cast<const uint8_t *>(src);
	std::lock_guard lk(mu_);
	int ret = 0;

	if (len_ && d == dst_ + len_ && s == src_ + len_) {
		len_ += len;
		return 0;
	}
	if (len_)
		ret = start_locked();
	dst_ = d;
	src_ = s;
	len_ = len;
	pending_.store(true, std::memory_order_release);
	return ret;
}

int DmaQueue::start_locked()
{
	int ret = engine_->copy(dst_, src_, len_);

	len_ = 0;
	started_ = true;
	return ret;
}

int DmaQueue::flush()
{
	std::lock_guard lk(mu_);
	int ret = 0, r;

	if (len_)
		ret = start_locked();
	if (started_) {
		r = engine_->sync();
		ret = ret ? ret : r;
		started_ = false;
	}
	pending_.store(false, std::memory_order_release);
	if (ret)
		note_failure();
	return ret;
}

void DmaQueue::note_failure()
{
	// A failed DMA is not tied to the operation it served (its frames
	// count as moved), so the process says so where the user looks, the
	// first few times.
	static std::atomic<int> notes{ 0 };
	constexpr int kMaxNotes = 8;
	const int n = notes.fetch_add(1, std::memory_order_relaxed);

	if (n < kMaxNotes)
		fprintf(stderr, "tb5-sim[%d]: a DMA failed, the bytes of the frames it "
			"carried are wrong: %s%s\n", int(getpid()), tb5_last_error(),
			n + 1 == kMaxNotes ? " (further notes not shown)" : "");
}

} // namespace tb5::sim
