// SPDX-License-Identifier: MIT
//
// dma_engine.cc - choosing a DMA engine, and the queue of copies a link
// hands it.
#include "sim/dma_engine.hpp"

#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>

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
	return ret;
}

} // namespace tb5::sim
