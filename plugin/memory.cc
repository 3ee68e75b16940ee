// SPDX-License-Identifier: MIT
//
// memory.cc - NCCL's registered regions (regMr, regMrDmaBuf, deregMr) and
// where an operation's bytes lie in them: host memory through
// tb5_reg_host(), GPU memory (regMr with NCCL_PTR_CUDA, regMrDmaBuf)
// through tb5_reg_gpu(). A region holds its link open;
// one that is still in use when NCCL deregisters it is freed as soon as
// its operations end.
#include <algorithm>
#include <cerrno>

#include "log.hpp"
#include "state.hpp"

namespace tb5net {

int locate(Comm *c, void *mhandle, void *data, size_t size, tb5_mr **mr, uint64_t *offset)
{
	auto *m = static_cast<Mr *>(mhandle);
	if (size == 0) {
		*mr = c->dev->scratch;
		*offset = 0;
		return 0;
	}
	if (!m || m->dev != c->dev || !m->mr) {
		TB5_WARN("a %zu-byte operation on link %s names memory not registered "
			 "on that link", size, c->dev->name.c_str());
		return -EINVAL;
	}
	uintptr_t p = (uintptr_t)data;
	if (p < m->base || p - m->base > m->len || size > m->len - (p - m->base)) {
		TB5_WARN("a %zu-byte operation at %p lies outside its %zu-byte region "
			 "at %#lx", size, data, m->len, (unsigned long)m->base);
		return -EINVAL;
	}
	*mr = m->mr;
	*offset = p - m->base;
	return 0;
}

void retry_deferred_locked(Device *d)
{
	auto &v = d->deferred;
	v.erase(std::remove_if(v.begin(), v.end(),
			       [](tb5_mr *mr) { return tb5_dereg(mr) == 0; }),
		v.end());
}

namespace {

// A region for @c's link at @data; its tb5 region is filled in by the caller.
std::unique_ptr<Mr> new_mr(Comm *c, void *data, size_t size)
{
	auto m = std::make_unique<Mr>();
	m->dev = c->dev;
	m->base = (uintptr_t)data;
	m->len = size;
	return m;
}

// Hands a registered region to NCCL; it holds its link open.
ncclResult_t publish_mr(Comm *c, std::unique_ptr<Mr> m, void **mhandle)
{
	std::lock_guard lk(g.mu);
	c->dev->refs++;
	*mhandle = m.release();
	return ncclSuccess;
}

// GPU memory on @c's link: a CUDA address with its dma-buf (@fd >= 0), or
// the address alone (@fd -1). The library says why it cannot.
ncclResult_t reg_gpu(Comm *c, void *data, size_t size, int fd, uint64_t offset,
		     void **mhandle)
{
	auto m = new_mr(c, data, size);
	if (size) {
		int r = tb5_reg_gpu(c->dev->dev.get(), data, size, fd, offset, &m->mr);
		if (r < 0) {
			TB5_WARN("cannot register %zu bytes of GPU memory at %p (dma-buf %d, "
				 "offset %llu) on %s: %s (%s)", size, data, fd,
				 (unsigned long long)offset, c->dev->name.c_str(),
				 tb5_strerror(r), last_error());
			return ncclSystemError;
		}
	}
	return publish_mr(c, std::move(m), mhandle);
}

} // namespace

ncclResult_t reg_mr(void *comm, void *data, size_t size, int type, void **mhandle)
{
	if (!comm || !mhandle)
		return ncclInvalidArgument;
	*mhandle = nullptr;
	auto *c = static_cast<Comm *>(comm);
	if (type == NCCL_PTR_CUDA) {
		if (!(c->dev->info.caps & TB5_CAP_GPU_MEM)) {
			TB5_WARN("regMr: link %s does not carry GPU memory by address "
				 "(ptrSupport has no NCCL_PTR_CUDA)", c->dev->name.c_str());
			return ncclInvalidUsage;
		}
		return reg_gpu(c, data, size, -1, 0, mhandle);
	}
	if (type != NCCL_PTR_HOST) {
		TB5_WARN("regMr: memory type %d is neither host (%d) nor CUDA (%d) memory",
			 type, NCCL_PTR_HOST, NCCL_PTR_CUDA);
		return ncclInvalidUsage;
	}
	auto m = new_mr(c, data, size);
	if (size) {
		int r = tb5_reg_host(c->dev->dev.get(), data, size, &m->mr);
		if (r < 0) {
			TB5_WARN("cannot register %zu bytes at %p on %s: %s (%s)", size, data,
				 c->dev->name.c_str(), tb5_strerror(r), last_error());
			return r == -ENOMEM ? ncclSystemError : ncclInvalidArgument;
		}
	}
	return publish_mr(c, std::move(m), mhandle);
}

ncclResult_t reg_mr_dma_buf(void *comm, void *data, size_t size, int type,
			 uint64_t offset, int fd, void **mhandle)
{
	if (!comm || !mhandle)
		return ncclInvalidArgument;
	*mhandle = nullptr;
	auto *c = static_cast<Comm *>(comm);
	if (type == NCCL_PTR_HOST)
		return reg_mr(comm, data, size, type, mhandle);
	if (type != NCCL_PTR_CUDA) {
		TB5_WARN("regMrDmaBuf: memory type %d is not CUDA memory (%d)", type,
			 NCCL_PTR_CUDA);
		return ncclInvalidUsage;
	}
	if (!(c->dev->info.caps & (TB5_CAP_DMABUF | TB5_CAP_GPU_MEM))) {
		TB5_WARN("regMrDmaBuf: link %s carries no GPU memory (ptrSupport has no "
			 "NCCL_PTR_DMABUF)", c->dev->name.c_str());
		return ncclInvalidUsage;
	}
	if (fd < 0) {
		TB5_WARN("regMrDmaBuf: %d is not a dma-buf fd", fd);
		return ncclInvalidUsage;
	}
	return reg_gpu(c, data, size, fd, offset, mhandle);
}

ncclResult_t dereg_mr(void *comm, void *mhandle)
{
	(void)comm;	// the region knows its link; NCCL may close comms first
	auto *m = static_cast<Mr *>(mhandle);
	if (!m)
		return ncclSuccess;
	std::lock_guard lk(g.mu);
	if (m->mr) {
		int r = tb5_dereg(m->mr);
		if (r == -EBUSY)
			m->dev->deferred.push_back(m->mr);	// freed when its ops end
		else if (r < 0)
			TB5_WARN("deregistering %zu bytes on %s: %s", m->len,
				 m->dev->name.c_str(), tb5_strerror(r));
	}
	release_locked(m->dev);
	delete m;
	return ncclSuccess;
}

ncclResult_t get_device_mr(void *comm, void *mhandle, void **dptr_mhandle)
{
	(void)comm;
	(void)mhandle;
	(void)dptr_mhandle;
	return ncclInternalError;	// no device offload (netDeviceType HOST)
}

} // namespace tb5net
