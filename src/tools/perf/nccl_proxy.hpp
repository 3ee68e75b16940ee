// SPDX-License-Identifier: MIT
//
// nccl_proxy.hpp - --nccl: an all_reduce between two ranks moved as NCCL
// 2.28's proxy thread moves it, through the NCCL net plugin (docs/perf.md).
#ifndef TB5_PERF_NCCL_PROXY_HPP
#define TB5_PERF_NCCL_PROXY_HPP

#include <cstdint>
#include <string>
#include <vector>

#include "options.hpp"

namespace tb5perf {

// NCCL's protocols, as they cut an all_reduce into network messages.
enum class NcclProto { kSimple, kLl, kLl128 };

struct NcclShape {
	uint64_t slot_bytes;	// what a posted receive covers: stepSize x sliceSteps
	uint32_t depth;		// messages in flight per connection: NCCL_STEPS / sliceSteps
	uint32_t slices;	// messages per chunk step: chunkSteps / sliceSteps
	uint64_t chunk_data;	// the largest chunk of user data per channel and step
	uint32_t wire_num, wire_den;	// message bytes = data x num / den
};

// NCCL 2.28.3's figures (src/include/device.h, collectives.h, enqueue.cc).
NcclShape nccl_shape_of(NcclProto p);

// One message of one rank's part of a 2-rank ring all_reduce on one
// channel, in the order NCCL's kernel posts them.
struct NcclMsg {
	uint32_t step;		// chunk step within its loop: 0 send own, 1 reduced
	uint32_t loop;
	uint64_t data_off;	// offset of its data in the user buffer
	uint64_t data_len;	// data bytes (0: an empty slice, still sent)
	uint64_t wire_len;	// bytes on the network
};

// The messages channel @ch of @nch carries for an all_reduce of @bytes
// between 2 ranks, for the chunk a rank sends at step 0 (@q0: its rank)
// and step 1 (the other chunk).
std::vector<NcclMsg> nccl_messages(NcclProto p, uint64_t bytes, uint32_t nch,
				  uint32_t ch, uint32_t q0);

int run_nccl(const Options &opt);

} // namespace tb5perf

#endif // TB5_PERF_NCCL_PROXY_HPP
