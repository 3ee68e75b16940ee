// SPDX-License-Identifier: MIT
//
// copy_capacity.hpp - tb5-perf --copy-capacity: how many bytes per second
// this host's CPUs can copy with N threads at once.
//
// Why: the simulator moves every byte with two CPU copies (the sender's
// into the peer's ring, the receiver's out of it), where a cable's DMA
// engines would move it with none. Whatever several simulated hosts on one
// machine carry together is therefore bounded by half of what the
// machine's threads can copy at once, and a benchmark of the fabric (NCCL
// over a mesh, say) can only be judged against that bound.
//
// Each thread copies between two buffers of its own, --memcpy-footprint
// bytes each (default 64 MiB: from memory, not a cache), in copies of
// each --sizes size, all threads at once for --duration seconds after a
// common start; the figure is the bytes copied by all of them over the
// time from that start until the last stopped. Two ways of copying:
//   - memcpy, within the process: what the simulator does, twice a byte;
//   - process_vm_readv from another process (a child that holds the
//     sources): one copy a byte, what a simulator that read the sender's
//     memory directly would do (cross memory attach; a container's seccomp
//     profile or Yama may refuse it, which is then reported).
#ifndef TB5_PERF_COPY_CAPACITY_HPP
#define TB5_PERF_COPY_CAPACITY_HPP

#include <cstdint>
#include <string>
#include <vector>

#include "options.hpp"

namespace tb5perf {

enum class CopyMethod { kMemcpy, kProcessVmReadv };

struct CopyCapacity {
	uint32_t threads;
	uint64_t size;		// bytes per copy
	double seconds;
	uint64_t bytes;		// copied by all threads
	std::string error;	// not measured: why (process_vm_readv refused)
	double gbps() const { return seconds > 0 ? bytes / seconds / 1e9 : 0; }
};

// Copies with @threads threads at once, @size bytes a copy, each thread
// cycling through @footprint bytes of its own, for about @duration_s. A
// copy the kernel refuses is reported in .error; buffers or a source
// process that cannot be had throw Error, SIGINT/SIGTERM Interrupted.
CopyCapacity measure_copy_capacity(uint32_t threads, uint64_t size,
				   uint64_t footprint, double duration_s,
				   CopyMethod method = CopyMethod::kMemcpy);

// Thread counts when --copy-threads is not given: 1, 2, 4, ... up to the
// CPUs this process may run on, and that number itself.
std::vector<uint32_t> default_copy_threads();

// The --copy-capacity mode: a table (or JSON) of every thread count and
// size, both ways of copying; the exit status.
int run_copy_capacity(const Options &opt);

} // namespace tb5perf

#endif // TB5_PERF_COPY_CAPACITY_HPP
