// SPDX-License-Identifier: MIT
//
// fabric.hpp - the simulated cluster in shared memory.
//
// /dev/shm/tb5sim.<fabric> holds the fabric's settings and one slot per
// host. A process joins by claiming a free slot (or the slot of a process
// that died) with a fresh random session number, which is also its host
// id; it leaves by clearing it. Every pair of hosts is cabled unless the
// fabric's creator said uncabled=i-j, with cables=K parallel cables a
// pair; the rings of cable c (0..K-1) between slots i < j live in
//   /dev/shm/tb5sim.<fabric>.<i>.<j>.<c>.<session i>.<session j>
// so that a host that restarts gets new, empty rings; whichever end comes
// first creates the file, and the file goes when either end sees the other
// leave.
//
// The last host to leave removes the fabric file; a process that joined a
// file in the moment it was removed notices and joins afresh.
//
// Each slot also has a doorbell: a futex word that producers bump (only
// when the slot's owner sleeps in tb5_wait()) after they publish frames
// for it or free room in its rings.
#ifndef TB5_SIM_FABRIC_HPP
#define TB5_SIM_FABRIC_HPP

#include <atomic>
#include <cstdint>
#include <string>

#include "sim/sim_config.hpp"
#include "util/mapping.hpp"
#include "util/unique_fd.hpp"

namespace tb5::sim {

struct alignas(64) HostSlot {
	std::atomic<uint64_t> session;		// 0: free; else the host id
	std::atomic<int32_t> pid;		// the owner, for liveness checks
	alignas(64) std::atomic<uint32_t> doorbell;	// futex word
	std::atomic<uint32_t> sleepers;
};

// The fabric file's magic ("tb5sim01"), and the layout's version: a
// process of another version refuses the file (-EPROTONOSUPPORT).
// 2: ring descriptors carry the link-rate model's due time.
// 3: the header says which pairs are uncabled.
// 4: cables=K parallel cables a pair; cable files name their cable.
inline constexpr uint64_t kFabricMagic = 0x74623573696d3031ull;
inline constexpr uint32_t kFabricVersion = 4;

struct FabricHeader {
	std::atomic<uint64_t> magic;		// set last by the creator
	uint32_t version;
	uint32_t hosts;
	uint32_t ring_size;
	uint32_t cables;		// parallel cables a pair (1..kMaxCables)
	uint16_t uncabled[kMaxHosts];	// bit j of row i: no cable i-j
	alignas(64) HostSlot slots[kMaxHosts];
};

// Wakes the owner of @slot if it sleeps. Call after publishing.
void ring_doorbell(HostSlot &slot);
// Sleeps until the doorbell moves from @seen or @timeout_ms passes.
void sleep_on_doorbell(HostSlot &slot, uint32_t seen, int timeout_ms);

class Fabric {
public:
	// Opens or creates the fabric file and claims a slot.
	int join(const Config &cfg);
	// Gives the slot back and removes this host's cable files.
	void leave();

	uint32_t hosts() const { return hdr_->hosts; }
	uint32_t ring_size() const { return hdr_->ring_size; }
	uint32_t cables() const { return hdr_->cables; }
	uint32_t my_slot() const { return slot_; }
	uint64_t my_session() const { return session_; }
	HostSlot &slot(uint32_t i) { return hdr_->slots[i]; }
	// Is there a cable between slots @i and @j?
	bool cabled(uint32_t i, uint32_t j) const
	{
		return i != j && !(hdr_->uncabled[i] & (1u << j));
	}
	const std::string &name() const { return name_; }

	// The file of cable @cable between this host and slot @peer whose
	// session is @peer_session.
	std::string cable_path(uint32_t peer, uint32_t cable,
			       uint64_t peer_session) const;
	// Opens (or creates) and maps the cable's rings; 0 or -errno.
	int map_cable(uint32_t peer, uint32_t cable, uint64_t peer_session,
		      Mapping &out) const;
	// Is the owner of @peer (claimed with @session) still alive? Clears
	// the slot of a dead owner so that it can be taken again.
	bool peer_alive(uint32_t peer, uint64_t session);

private:
	int join_once(const Config &cfg);
	// Lets go of a file that is no fabric of this version; returns @err.
	int forget(int err);
	bool claim(uint32_t i, uint64_t expect);
	bool unlinked() const;
	void remove_stale_cables(uint32_t slot);

	std::string name_;
	UniqueFd fd_;
	Mapping map_;
	FabricHeader *hdr_ = nullptr;
	uint32_t slot_ = 0;
	uint64_t session_ = 0;
};

} // namespace tb5::sim

#endif // TB5_SIM_FABRIC_HPP
