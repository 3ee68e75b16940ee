// SPDX-License-Identifier: MIT
//
// gpu_region.hpp - GPU memory on the simulator's links (GpuMem): the
// process's DMA engine, its registered GPU regions, their exports to the
// other hosts, and the peers' exports it has opened.
//
// Exports: each host with an engine has a table in shared memory,
//   /dev/shm/tb5sim.<fabric>.gpu.<session>
// of kMaxExports entries, one per exported device allocation (regions of
// one allocation share it): a generation (0: free), the exporter's pid,
// address and size, and the engine's IPC handle. A payload frame of an
// exported region travels by reference (GpuRef: entry, generation,
// offset), and the receiver copies from the peer's memory straight into
// its posted buffer: one DMA per byte. A region whose allocation is not
// exported (the engine cannot, or the table is full) goes through host
// memory, and the process says why on stderr (note_locked()). The table's epoch counts
// withdrawals, so that an importer closes what a peer withdrew (its
// region deregistered) on its next pass, and a link that goes down
// closes everything of that peer.
#ifndef TB5_SIM_GPU_REGION_HPP
#define TB5_SIM_GPU_REGION_HPP

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "sim/dma_engine.hpp"
#include "util/mapping.hpp"

namespace tb5::sim {

// What a by-reference frame carries in its ring slot.
struct GpuRef {
	uint32_t index;		// the exporter's table entry
	uint32_t pad;
	uint64_t gen;		// the entry's generation
	uint64_t offset;	// from the allocation's start
};

// A registered GPU region (tb5_mem.region of its operations).
struct GpuRegion {
	uint8_t *addr = nullptr;	// the region's first byte
	uint64_t len = 0;
	DevSpan span;			// the allocation around it
	int32_t index = -1;		// its export; -1: not exported
	uint64_t gen = 0;
};

class GpuMem {
public:
	static constexpr uint32_t kMaxExports = 1024;

	GpuMem() = default;
	~GpuMem();
	GpuMem(const GpuMem &) = delete;
	GpuMem &operator=(const GpuMem &) = delete;

	// Loads the engine @kind names and creates this host's export
	// table; without an engine GPU registrations are refused with why().
	void init(DmaKind kind, const std::string &fabric, uint64_t session);
	// Removes the export table (the process leaves the fabric).
	void leave();
	DmaEngine *engine() const { return engine_.get(); }
	const std::string &why() const { return why_; }

	// [addr, addr + len) of device memory, with its dma-buf @fd at
	// @offset if @fd >= 0; 0 and @out, or -errno with a message.
	int reg(void *addr, uint64_t len, int fd, uint64_t offset, GpuRegion &out);
	void dereg(GpuRegion &r);

	// The address here of @len bytes a by-reference frame of host
	// session @peer names; null when it names nothing valid (the
	// caller drops the frame). Opens the peer's export on first use.
	uint8_t *resolve(uint64_t peer, const GpuRef &ref, uint32_t len);
	// Opens every export of host session @peer not opened yet. Called where a GPU region is registered: opening takes
	// CUDA calls that wait for the whole process's CUDA lock (one held
	// by any thread blocked on a GPU kernel), which the data path must
	// not make while NCCL's kernels wait for it (resolve() still opens
	// what appeared since, as a last resort).
	void open_exports(uint64_t peer);
	// Closes the imports of @peer that it withdrew since (its epoch
	// moved); cheap when it did not.
	void sweep(uint64_t peer);
	// Does host session @peer have a DMA engine (an export table)?
	bool has_engine(uint64_t peer) const;
	// Closes every import of @peer, which has left the fabric (or
	// died: its table is removed too).
	void forget(uint64_t peer);

private:
	struct Entry {
		std::atomic<uint64_t> gen;	// 0: free
		int32_t pid;
		uint32_t pad;
		uint64_t base;			// the exporter's address
		uint64_t len;
		IpcHandle handle;
	};
	struct Table {
		std::atomic<uint32_t> epoch;	// withdrawals so far
		uint32_t pad;
		Entry e[kMaxExports];
	};
	struct Import {
		uint64_t gen = 0;		// 0: none
		uint8_t *base = nullptr;
		uint64_t len = 0;
		bool mapped = false;		// opened (else the exporter's own)
	};
	struct Peer {
		Mapping map;
		Table *table = nullptr;
		uint32_t epoch = 0;
		std::vector<Import> imports;	// by entry
	};
	struct Export {
		int32_t index;
		uint32_t users;
	};

	std::string table_path(uint64_t session) const;
	int export_locked(GpuRegion &r);
	Peer *peer_locked(uint64_t session);
	void close_locked(Import &im);
	// Entry @index of @p opened at generation @gen (or already open).
	bool open_locked(Peer &p, uint32_t index, uint64_t gen);
	// Says @what on stderr (the first few times in the process).
	void note_locked(const std::string &what);

	std::unique_ptr<DmaEngine> engine_;
	std::string why_;
	std::string fabric_;
	uint64_t session_ = 0;
	std::mutex mu_;			// all below
	Mapping own_map_;
	Table *own_ = nullptr;
	uint64_t next_gen_ = 1;
	std::map<uint8_t *, Export> exports_;	// by allocation
	std::map<uint64_t, Peer> peers_;	// by host session
	size_t notes_ = 0;			// note_locked() lines so far
};

} // namespace tb5::sim

#endif // TB5_SIM_GPU_REGION_HPP
