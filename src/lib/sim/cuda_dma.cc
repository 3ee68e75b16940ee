// SPDX-License-Identifier: MIT
//
// cuda_dma.cc - the GPUs' copy engines as the simulator's DMA engine
// (TB5_SIM dma=cuda, the default), through the CUDA driver API loaded at
// run time: dlopen("libcuda.so.1"), no build or package dependency. The
// few types and entry points used are declared here from the driver API's
// documentation (cuda.h is not included).
//
// One context (the primary context of the device of the first region
// registered, else device 0) and one non-blocking stream carry every copy
// of the process: cuMemcpyAsync with unified addressing copies host to
// device, device to host, and device to device across GPUs. Peer memory
// is opened with cuIpcOpenMemHandle into that context.
//
// CI has no GPU: the stand-in engine runs every line above this file
// there (test_sim_gpu.cc); tests/lib/test_sim_cuda.cc runs this one where
// there is a GPU and skips, saying why, where there is none.
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "error.hpp"
#include "sim/dma_engine.hpp"
#include "tb5/tb5.h"

namespace tb5::sim {
namespace {

// --- the driver API, as documented ---
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st *;
using CUstream = struct CUstream_st *;
using CUmemGenericAllocationHandle = unsigned long long;
struct CUipcMemHandle {
	char reserved[64];
};
struct CUmemLocation {
	int type;
	int id;
};
struct CUmemAllocationProp {
	int type;
	int requestedHandleTypes;
	CUmemLocation location;
	void *win32HandleMetaData;
	struct {
		unsigned char compressionType;
		unsigned char gpuDirectRDMACapable;
		unsigned short usage;
		unsigned char reserved[4];
	} allocFlags;
};
struct CUmemAccessDesc {
	CUmemLocation location;
	int flags;
};

constexpr CUresult CUDA_SUCCESS = 0;
constexpr int CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2;
constexpr int CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9;
constexpr int CU_POINTER_ATTRIBUTE_RANGE_START_ADDR = 11;
constexpr int CU_POINTER_ATTRIBUTE_RANGE_SIZE = 12;
constexpr unsigned CU_MEMORYTYPE_DEVICE = 2;
constexpr unsigned CU_STREAM_NON_BLOCKING = 1;
constexpr unsigned CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 1;
constexpr unsigned CU_MEMHOSTREGISTER_PORTABLE = 1;
constexpr int CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 1;
constexpr int CU_MEM_LOCATION_TYPE_DEVICE = 1;
constexpr int CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3;

// An export (IpcHandle's bytes): CUDA IPC's handle, or a cuMem
// allocation's shareable handle, an fd of the exporter's.
struct CudaHandle {
	uint32_t kind;			// kIpc, kShareable
	int32_t pid;			// kShareable: the exporter, its fd
	int32_t fd;
	uint32_t pad;
	uint64_t size;			// kShareable: the allocation's bytes
	CUipcMemHandle ipc;		// kIpc
};
constexpr uint32_t kIpc = 1, kShareable = 2;
static_assert(sizeof(CudaHandle) <= sizeof(IpcHandle));

struct CudaApi {
	CUresult (*cuInit)(unsigned);
	CUresult (*cuGetErrorString)(CUresult, const char **);
	CUresult (*cuDeviceGetCount)(int *);
	CUresult (*cuDeviceGet)(CUdevice *, int);
	CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
	CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
	CUresult (*cuCtxSetCurrent)(CUcontext);
	CUresult (*cuPointerGetAttribute)(void *, int, CUdeviceptr);
	CUresult (*cuStreamCreate)(CUstream *, unsigned);
	CUresult (*cuStreamSynchronize)(CUstream);
	CUresult (*cuMemcpyAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
	CUresult (*cuIpcGetMemHandle)(CUipcMemHandle *, CUdeviceptr);
	CUresult (*cuIpcOpenMemHandle)(CUdeviceptr *, CUipcMemHandle, unsigned);
	CUresult (*cuIpcCloseMemHandle)(CUdeviceptr);
	CUresult (*cuMemHostRegister)(void *, size_t, unsigned);
	CUresult (*cuMemHostUnregister)(void *);
	// cuMem (VMM) exports: optional (CUDA 10.2 and later).
	CUresult (*cuMemGetAddressRange)(CUdeviceptr *, size_t *, CUdeviceptr);
	CUresult (*cuMemRetainAllocationHandle)(CUmemGenericAllocationHandle *, void *);
	CUresult (*cuMemGetAllocationPropertiesFromHandle)(CUmemAllocationProp *,
							   CUmemGenericAllocationHandle);
	CUresult (*cuMemExportToShareableHandle)(void *, CUmemGenericAllocationHandle,
						 int, unsigned long long);
	CUresult (*cuMemImportFromShareableHandle)(CUmemGenericAllocationHandle *,
						   void *, int);
	CUresult (*cuMemAddressReserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr,
					unsigned long long);
	CUresult (*cuMemAddressFree)(CUdeviceptr, size_t);
	CUresult (*cuMemMap)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
			     unsigned long long);
	CUresult (*cuMemUnmap)(CUdeviceptr, size_t);
	CUresult (*cuMemSetAccess)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
	CUresult (*cuMemRelease)(CUmemGenericAllocationHandle);
};

// Entry points by their current (_v2) names where the API has them.
#define TB5_CUDA_SYMS(X)                                                     \
	X(cuInit, "cuInit")                                                  \
	X(cuGetErrorString, "cuGetErrorString")                              \
	X(cuDeviceGetCount, "cuDeviceGetCount")                              \
	X(cuDeviceGet, "cuDeviceGet")                                        \
	X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain")              \
	X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2")         \
	X(cuCtxSetCurrent, "cuCtxSetCurrent")                                \
	X(cuPointerGetAttribute, "cuPointerGetAttribute")                    \
	X(cuStreamCreate, "cuStreamCreate")                                  \
	X(cuStreamSynchronize, "cuStreamSynchronize")                        \
	X(cuMemcpyAsync, "cuMemcpyAsync")                                    \
	X(cuIpcGetMemHandle, "cuIpcGetMemHandle")                            \
	X(cuIpcOpenMemHandle, "cuIpcOpenMemHandle_v2")                       \
	X(cuIpcCloseMemHandle, "cuIpcCloseMemHandle")                        \
	X(cuMemHostRegister, "cuMemHostRegister_v2")                         \
	X(cuMemHostUnregister, "cuMemHostUnregister")

#define TB5_CUDA_VMM_SYMS(X)                                                 \
	X(cuMemGetAddressRange, "cuMemGetAddressRange_v2")                   \
	X(cuMemRetainAllocationHandle, "cuMemRetainAllocationHandle")        \
	X(cuMemGetAllocationPropertiesFromHandle,                            \
	  "cuMemGetAllocationPropertiesFromHandle")                          \
	X(cuMemExportToShareableHandle, "cuMemExportToShareableHandle")      \
	X(cuMemImportFromShareableHandle, "cuMemImportFromShareableHandle")  \
	X(cuMemAddressReserve, "cuMemAddressReserve")                        \
	X(cuMemAddressFree, "cuMemAddressFree")                              \
	X(cuMemMap, "cuMemMap")                                              \
	X(cuMemUnmap, "cuMemUnmap")                                          \
	X(cuMemSetAccess, "cuMemSetAccess")                                  \
	X(cuMemRelease, "cuMemRelease")

class CudaDma final : public DmaEngine {
public:
	~CudaDma() override
	{
		// The library stays loaded: other users of CUDA in the process
		// (NCCL, the application) hold it too.
		if (ctx_.load())
			api_.cuDevicePrimaryCtxRelease(dev_);
	}

	int load(std::string &why)
	{
		void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
		const char *e;
		int n = 0;
		CUresult r;

		if (!lib) {
			e = dlerror();
			why = std::string("libcuda.so.1 not found (") + (e ? e : "?") + ")";
			return -EOPNOTSUPP;
		}
#define TB5_CUDA_LOAD(field, sym)                                            \
	api_.field = reinterpret_cast<decltype(api_.field)>(dlsym(lib, sym));  \
	if (!api_.field) {                                                   \
		why = "libcuda.so.1 has no " sym;                            \
		return -EOPNOTSUPP;                                          \
	}
		TB5_CUDA_SYMS(TB5_CUDA_LOAD)
#undef TB5_CUDA_LOAD
		// Without them cuMem allocations go through host memory.
#define TB5_CUDA_LOAD_VMM(field, sym)                                        \
	api_.field = reinterpret_cast<decltype(api_.field)>(dlsym(lib, sym));  \
	if (!api_.field && vmm_why_.empty())                                 \
		vmm_why_ = "libcuda.so.1 has no " sym;
		TB5_CUDA_VMM_SYMS(TB5_CUDA_LOAD_VMM)
#undef TB5_CUDA_LOAD_VMM
		if ((r = api_.cuInit(0)) != CUDA_SUCCESS) {
			why = std::string("cuInit failed: ") + str(r);
			return -EOPNOTSUPP;
		}
		if ((r = api_.cuDeviceGetCount(&n)) != CUDA_SUCCESS || n < 1) {
			why = r ? std::string("cuDeviceGetCount failed: ") + str(r) :
				  std::string("CUDA sees no device");
			return -EOPNOTSUPP;
		}
		return 0;
	}

	const char *name() const override { return "cuda"; }

	int find(const void *addr, uint64_t len, DevSpan &out) override
	{
		const auto p = CUdeviceptr(uintptr_t(addr));
		unsigned type = 0;
		CUdeviceptr start = 0;
		size_t size = 0;
		int ordinal = 0;
		CUresult r = api_.cuPointerGetAttribute(
			&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p);

		if (r != CUDA_SUCCESS || type != CU_MEMORYTYPE_DEVICE)
			return fail(-EINVAL, "%p is not CUDA device memory (%s)", addr,
				    r ? str(r) : "host memory");
		if ((r = api_.cuPointerGetAttribute(&ordinal,
						    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p)) ||
		    (r = api_.cuPointerGetAttribute(&start,
						    CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p)) ||
		    (r = api_.cuPointerGetAttribute(&size,
						    CU_POINTER_ATTRIBUTE_RANGE_SIZE, p)))
			return fail(-EINVAL, "%p: cuPointerGetAttribute: %s", addr, str(r));
		if (len > start + size - p)
			return fail(-EINVAL, "%" PRIu64 " bytes from %p run past the "
				    "end of its CUDA allocation (%zu bytes from %#llx)",
				    len, addr, size, start);
		out = {};
		out.base = reinterpret_cast<uint8_t *>(uintptr_t(start));
		out.len = size;
		out.device = ordinal;
		int ret = ensure_context(ordinal);

		return ret ? ret : reach(out);
	}

	bool dmabuf_target(const std::string &target) const override
	{
		// "anon_inode:dmabuf" on older kernels, "/dmabuf:<name>" since
		// dma-bufs have a file system of their own.
		return target.rfind("anon_inode:dmabuf", 0) == 0 ||
		       target.rfind("/dmabuf:", 0) == 0;
	}

	// A dma-buf does not say which CUDA address it was made from: the
	// size (checked by the caller) is what can be checked.
	int check_dmabuf_maps(int, uint64_t, const void *, const DevSpan &) override
	{
		return 0;
	}

	int export_span(const DevSpan &span, IpcHandle &out) override
	{
		CudaHandle h = {};
		CUmemGenericAllocationHandle mh;
		std::string cumem_why = vmm_why_;
		CUresult r;
		int ret = -EOPNOTSUPP;

		CUdevice other = 0;
		CUcontext octx = nullptr;

		set_current();
		// Memory of another device than the engine's (one process
		// driving several GPUs): cuMemGetAddressRange finds it only in
		// that device's context.
		if (span.device != ordinal_ && !api_.cuDeviceGet(&other, span.device) &&
		    !api_.cuDevicePrimaryCtxRetain(&octx, other))
			api_.cuCtxSetCurrent(octx);
		// A cuMem allocation by its shareable handle; anything else
		// (or one that cannot be) by CUDA IPC, which takes cudaMalloc
		// memory.
		if (vmm_why_.empty() &&
		    api_.cuMemRetainAllocationHandle(&mh, span.base) == CUDA_SUCCESS) {
			ret = export_shareable(span, mh, h);
			api_.cuMemRelease(mh);
			if (ret)
				cumem_why = tb5_last_error();
		}
		if (octx) {
			set_current();
			api_.cuDevicePrimaryCtxRelease(other);
		}
		if (ret) {
			h = {};
			h.kind = kIpc;
			r = api_.cuIpcGetMemHandle(&h.ipc, CUdeviceptr(uintptr_t(span.base)));
			if (r != CUDA_SUCCESS)
				return fail(-EOPNOTSUPP, "%s%scuIpcGetMemHandle(%p): %s",
					    cumem_why.c_str(), cumem_why.empty() ? "" : "; ",
					    (void *)span.base, str(r));
		}
		memset(out.bytes, 0, sizeof(out.bytes));
		memcpy(out.bytes, &h, sizeof(h));
		return 0;
	}

	void unexport(const IpcHandle &ih) override
	{
		CudaHandle h;

		memcpy(&h, ih.bytes, sizeof(h));
		if (h.kind == kShareable && h.pid == getpid())
			close(h.fd);
	}

	int import_span(const IpcHandle &ih, uint64_t, uint8_t **base) override
	{
		CudaHandle h;
		CUdeviceptr p = 0;
		CUresult r;
		int ret = ensure_context(0);

		if (ret)
			return ret;
		memcpy(&h, ih.bytes, sizeof(h));
		if (h.kind == kShareable)
			return import_shareable(h, base);
		r = api_.cuIpcOpenMemHandle(&p, h.ipc, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
		if (r != CUDA_SUCCESS)
			return fail(-EIO, "cuIpcOpenMemHandle: %s", str(r));
		*base = reinterpret_cast<uint8_t *>(uintptr_t(p));
		return 0;
	}

	void close_import(uint8_t *base, uint64_t) override
	{
		const auto p = CUdeviceptr(uintptr_t(base));
		std::unique_lock lk(imports_mu_);
		auto it = mapped_.find(p);

		set_current();
		if (it == mapped_.end()) {
			lk.unlock();
			api_.cuIpcCloseMemHandle(p);
			return;
		}
		const size_t size = it->second;

		mapped_.erase(it);
		lk.unlock();
		api_.cuMemUnmap(p, size);
		api_.cuMemAddressFree(p, size);
	}

	void pin(void *addr, size_t len) override
	{
		if (!ensure_context(0))
			api_.cuMemHostRegister(addr, len, CU_MEMHOSTREGISTER_PORTABLE);
	}
	void unpin(void *addr) override
	{
		set_current();
		api_.cuMemHostUnregister(addr);
	}

	int copy(void *dst, const void *src, size_t len) override
	{
		CUresult r;

		set_current();
		r = api_.cuMemcpyAsync(CUdeviceptr(uintptr_t(dst)),
				       CUdeviceptr(uintptr_t(src)), len, stream_);
		if (r != CUDA_SUCCESS)
			return fail(-EIO, "cuMemcpyAsync of %zu bytes: %s", len, str(r));
		return 0;
	}

	int sync() override
	{
		CUresult r;

		set_current();
		r = api_.cuStreamSynchronize(stream_);
		if (r != CUDA_SUCCESS)
			return fail(-EIO, "cuStreamSynchronize: %s", str(r));
		return 0;
	}

private:
	// @mh (retained by the caller) as a POSIX fd into @h, or
	// -EOPNOTSUPP saying why its frames go through host memory.
	int export_shareable(const DevSpan &span, CUmemGenericAllocationHandle mh,
			     CudaHandle &h)
	{
		// Room for fields a later driver may add.
		union {
			CUmemAllocationProp prop;
			unsigned char room[256];
		} u = {};
		CUdeviceptr start = 0;
		size_t size = 0;
		int fd = -1;
		CUresult r;

		if ((r = api_.cuMemGetAllocationPropertiesFromHandle(&u.prop, mh)))
			return fail(-EOPNOTSUPP, "cuMemGetAllocationPropertiesFromHandle"
				    "(%p): %s", (void *)span.base, str(r));
		if (!(u.prop.requestedHandleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
			return fail(-EOPNOTSUPP, "the cuMem allocation at %p was made "
				    "without CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR (its "
				    "handle types: %#x): CUDA cannot export it",
				    (void *)span.base, unsigned(u.prop.requestedHandleTypes));
		if ((r = api_.cuMemGetAddressRange(&start, &size,
						   CUdeviceptr(uintptr_t(span.base)))))
			return fail(-EOPNOTSUPP, "cuMemGetAddressRange(%p): %s",
				    (void *)span.base, str(r));
		if (start != CUdeviceptr(uintptr_t(span.base)) || size != span.len)
			return fail(-EOPNOTSUPP, "the cuMem range at %p (%zu bytes from "
				    "%#llx) is not the allocation's (%" PRIu64 " bytes)",
				    (void *)span.base, size, start, span.len);
		if (!fd_export_why().empty())
			return fail(-EOPNOTSUPP, "the cuMem allocation at %p cannot be "
				    "exported: %s", (void *)span.base,
				    fd_export_why().c_str());
		if ((r = api_.cuMemExportToShareableHandle(
			     &fd, mh, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0)))
			return fail(-EOPNOTSUPP, "cuMemExportToShareableHandle(%p): %s",
				    (void *)span.base, str(r));
		h.kind = kShareable;
		h.pid = int32_t(getpid());
		h.fd = fd;
		h.size = span.len;
		return 0;
	}

	// A peer's cuMem allocation mapped here, for this process's device.
	int import_shareable(const CudaHandle &h, uint8_t **base)
	{
		CUmemGenericAllocationHandle mh;
		const CUmemAccessDesc access = {
			{ CU_MEM_LOCATION_TYPE_DEVICE, dev_ },
			CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
		};
		CUdeviceptr p = 0;
		CUresult r;
		int fd = take_fd(h.pid, h.fd);

		if (fd < 0)
			return fd;
		r = api_.cuMemImportFromShareableHandle(
			&mh, reinterpret_cast<void *>(uintptr_t(fd)),
			CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
		close(fd);
		if (r != CUDA_SUCCESS)
			return fail(-EIO, "cuMemImportFromShareableHandle (pid %d): %s",
				    int(h.pid), str(r));
		r = api_.cuMemAddressReserve(&p, h.size, 0, 0, 0);
		if (r == CUDA_SUCCESS) {
			r = api_.cuMemMap(p, h.size, 0, mh, 0);
			if (r != CUDA_SUCCESS)
				api_.cuMemAddressFree(p, h.size);
		}
		// From here the mapping, if any, holds the allocation.
		api_.cuMemRelease(mh);
		if (r != CUDA_SUCCESS)
			return fail(-EIO, "mapping a peer's cuMem allocation (%" PRIu64
				    " bytes): %s", h.size, str(r));
		if ((r = api_.cuMemSetAccess(p, h.size, &access, 1))) {
			api_.cuMemUnmap(p, h.size);
			api_.cuMemAddressFree(p, h.size);
			return fail(-EIO, "cuMemSetAccess (device %d): %s", int(dev_),
				    str(r));
		}
		{
			std::lock_guard lk(imports_mu_);
			mapped_[p] = size_t(h.size);
		}
		*base = reinterpret_cast<uint8_t *>(uintptr_t(p));
		return 0;
	}

	// A process that drives several GPUs (NCCL's one-process mode): a
	// cuMem allocation of another device than the engine's is reachable
	// from the engine's device only where the application granted that
	// device access (NCCL grants its peers none with P2P off), and a copy
	// from it would fail at the stream. Grant it here, at registration.
	// (cudaMalloc memory is reachable through unified addressing.)
	int reach(const DevSpan &span)
	{
		CUmemGenericAllocationHandle mh;
		const CUmemAccessDesc access = {
			{ CU_MEM_LOCATION_TYPE_DEVICE, dev_ },
			CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
		};
		CUresult r;

		if (span.device == ordinal_ || !vmm_why_.empty() ||
		    api_.cuMemRetainAllocationHandle(&mh, span.base) != CUDA_SUCCESS)
			return 0;
		api_.cuMemRelease(mh);
		set_current();
		r = api_.cuMemSetAccess(CUdeviceptr(uintptr_t(span.base)), span.len, &access, 1);
		if (r != CUDA_SUCCESS)
			return fail(-EOPNOTSUPP, "GPU memory at %p (device %d) cannot be "
				    "reached from device %d, whose copy engines carry this "
				    "process's frames: cuMemSetAccess: %s",
				    (void *)span.base, span.device, ordinal_, str(r));
		return 0;
	}

	const char *str(CUresult r) const
	{
		const char *s = nullptr;

		if (api_.cuGetErrorString(r, &s) != CUDA_SUCCESS || !s)
			return "unknown CUDA error";
		return s;
	}

	// The first device asked for gives the process's context and stream.
	int ensure_context(int ordinal)
	{
		std::lock_guard lk(mu_);
		CUresult r;

		CUcontext ctx = ctx_.load();

		if (ctx)
			return api_.cuCtxSetCurrent(ctx) ?
				       fail(-EIO, "cuCtxSetCurrent failed") : 0;
		if ((r = api_.cuDeviceGet(&dev_, ordinal)) ||
		    (r = api_.cuDevicePrimaryCtxRetain(&ctx, dev_)))
			return fail(-EIO, "CUDA device %d: %s", ordinal, str(r));
		if ((r = api_.cuCtxSetCurrent(ctx)) ||
		    (r = api_.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING))) {
			api_.cuDevicePrimaryCtxRelease(dev_);
			return fail(-EIO, "a CUDA stream on device %d: %s", ordinal,
				    str(r));
		}
		ordinal_ = ordinal;
		ctx_.store(ctx);	// with its stream
		return 0;
	}
	void set_current()
	{
		CUcontext ctx = ctx_.load();

		if (ctx)
			api_.cuCtxSetCurrent(ctx);
	}

	CudaApi api_ = {};
	std::mutex mu_;
	CUdevice dev_ = 0;
	int ordinal_ = 0;		// dev_'s
	std::atomic<CUcontext> ctx_{ nullptr };	// set once, with stream_
	CUstream stream_ = nullptr;
	std::string vmm_why_;		// why cuMem exports are off ("": on)
	std::mutex imports_mu_;
	std::map<CUdeviceptr, size_t> mapped_;	// cuMem imports, by address
};

} // namespace

std::unique_ptr<DmaEngine> make_cuda_dma(std::string &why)
{
	auto e = std::make_unique<CudaDma>();

	if (e->load(why))
		return nullptr;
	return e;
}

} // namespace tb5::sim
