// SPDX-License-Identifier: MIT
//
// dma_engine.hpp - the DMA engines that carry GPU memory over a simulated
// cable (DmaEngine), and the queue of copies a link hands them (DmaQueue).
//
// A cable's NHI moves payload with its DMA engine; the simulator moves host
// memory with the CPU (copy_engine.hpp) and GPU memory with the GPUs' copy
// engines, never a CPU copy of GPU payload. An engine knows its device
// memory (find(): which allocation holds a pointer), exports an allocation
// to another process and maps a peer's (CUDA IPC, or a cuMem allocation's
// shareable handle passed as a file descriptor), and copies between any
// two of host and device memory, asynchronously: copy() starts a copy,
// sync() returns once every copy started is in place.
//
// Two engines implement it:
//   cuda     the GPUs' copy engines through the CUDA driver API, loaded at
//            run time (dlopen("libcuda.so.1"): no build or package
//            dependency), cuda_dma.cc
//   standin  a test device without a GPU: its "device memory" is memfds it
//            allocates (sim/standin_mem.hpp), exported to a peer as (pid,
//            fd) and mapped there after pidfd_getfd() (as the CUDA engine
//            exports a cuMem allocation), copied with plain memcpy;
//            standin_dma.cc. Not a performance model.
// Everything above them (regions, by-reference frames, completion rules,
// the link model) is the same code for both (gpu_region.cc,
// sim_link_gpu.cc), so that CI runs all of it through the stand-in.
#ifndef TB5_SIM_DMA_ENGINE_HPP
#define TB5_SIM_DMA_ENGINE_HPP

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

namespace tb5::sim {

// TB5_SIM dma=: which engine carries GPU memory.
enum class DmaKind {
	kCuda,		// the default: CUDA if it loads and has a device
	kStandin,	// the test device (no GPU)
	kOff,		// none: GPU registrations are refused
};

// The device allocation that holds a pointer (find()).
struct DevSpan {
	uint8_t *base = nullptr;	// where the allocation starts
	uint64_t len = 0;		// its bytes
	int device = 0;			// CUDA ordinal (stand-in: 0)
	uint64_t file_ino = 0;		// stand-in: its memfd's inode
	uint64_t file_off = 0;		// stand-in: base's offset in the memfd
	bool priv = false;		// stand-in: private memory (not exportable)
};

// An allocation exported for other processes: the engine's handle (CUDA:
// a CUipcMemHandle, or the exporter's pid and the fd of a cuMem
// allocation's shareable handle; stand-in: pid, fd and file offset).
struct IpcHandle {
	uint8_t bytes[96];
};

class DmaEngine {
public:
	virtual ~DmaEngine() = default;
	// "cuda", "standin".
	virtual const char *name() const = 0;

	// 0 and the allocation holding [addr, addr + len), or -EINVAL with a
	// message saying why it is not this engine's device memory.
	virtual int find(const void *addr, uint64_t len, DevSpan &out) = 0;
	// Is @target (/proc/self/fd/<fd>'s link) a dma-buf this engine
	// takes? (A plain file, a socket... are not.)
	virtual bool dmabuf_target(const std::string &target) const = 0;
	// 0 when @fd's bytes at @offset are the ones @addr in @span maps,
	// as far as the engine can tell; else -EINVAL with a message.
	virtual int check_dmabuf_maps(int fd, uint64_t offset, const void *addr,
				      const DevSpan &span) = 0;

	// Exports @span; -EOPNOTSUPP with the reason when it cannot be (a
	// cuMem allocation made without a POSIX fd handle type, peers that
	// may not take this process's fds; stand-in memory whose memfd is
	// closed or private): its frames then go through host memory, two
	// DMAs.
	virtual int export_span(const DevSpan &span, IpcHandle &out) = 0;
	virtual void unexport(const IpcHandle &h) = 0;
	// Maps a peer's export of @len bytes; *@base its address here.
	virtual int import_span(const IpcHandle &h, uint64_t len, uint8_t **base) = 0;
	virtual void close_import(uint8_t *base, uint64_t len) = 0;

	// Page-locks host memory the engine copies to or from (a cable's
	// rings), best effort; unpin() undoes it.
	virtual void pin(void *addr, size_t len) = 0;
	virtual void unpin(void *addr) = 0;

	// Starts a copy of @len bytes, host or device memory either side.
	virtual int copy(void *dst, const void *src, size_t len) = 0;
	// Every copy started is in place.
	virtual int sync() = 0;
};

// The engine @kind names, or null with @why (a sentence: "libcuda.so.1
// not found (...)", "cuInit failed: ...", "TB5_SIM dma=off").
std::unique_ptr<DmaEngine> make_dma_engine(DmaKind kind, std::string &why);
std::unique_ptr<DmaEngine> make_cuda_dma(std::string &why);
std::unique_ptr<DmaEngine> make_standin_dma(std::string &why);

// Where /proc/self/fd/@fd points ("" and -errno when it is not open).
int fd_target(int fd, std::string &out);

// Exports by file descriptor (a cuMem allocation's shareable handle, the
// stand-in's memfd): the exporter keeps the fd open and publishes (pid,
// fd); the importer takes a duplicate with pidfd_getfd() (Linux 5.6 or
// later, the same user and ptrace-permitted: PTRACE_MODE_ATTACH).
//
// "" when this process's peers can take its fds, else why not (checked
// once per process: pidfd_getfd on its own pidfd, kernel.yama.ptrace_scope
// and CAP_SYS_PTRACE).
const std::string &fd_export_why();
// A duplicate (close-on-exec) of process @pid's descriptor @fd, or
// -errno with a message.
int take_fd(int32_t pid, int32_t fd);

// Copies a link hands an engine: adjacent ones (both ends continuing) are
// merged, a merged copy is started when the next one does not continue it,
// and flush() starts the last and waits for all. Any thread may add or
// flush (under the queue's lock); the link's rules say when it must.
class DmaQueue {
public:
	void bind(DmaEngine *engine) { engine_ = engine; }
	explicit operator bool() const { return engine_ != nullptr; }
	// 0, or the engine's error starting an earlier copy.
	int add(void *dst, const void *src, size_t len);
	// Every copy added so far in place; 0 or the first error.
	int flush();
	bool pending() const { return pending_.load(std::memory_order_acquire); }

private:
	int start_locked();
	// Says on stderr that a DMA failed (the first few times).
	static void note_failure();

	std::mutex mu_;
	DmaEngine *engine_ = nullptr;
	uint8_t *dst_ = nullptr;
	const uint8_t *src_ = nullptr;
	size_t len_ = 0;		// the open (merging) copy
	bool started_ = false;		// copies started since the last sync
	std::atomic<bool> pending_{ false };
};

} // namespace tb5::sim

#endif // TB5_SIM_DMA_ENGINE_HPP
