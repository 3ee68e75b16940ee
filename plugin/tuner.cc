// SPDX-License-Identifier: MIT
//
// tuner.cc - the tb5 tuner: NCCL 2.28 looks for a tuner plugin in the net
// plugin's library when NCCL_TUNER_PLUGIN names none (src/plugin/tuner.cc,
// ncclGetNetPluginLib), and finds ncclTunerPlugin_v4 here.
//
// What it changes: for a job whose collectives go through the network
// (more than one node, or one node with NCCL's P2P and SHM transports off,
// as the GPU tests run), collectives of TB5_NCCL_TUNER_SIMPLE_MIN bytes or
// more (default 64 KiB) use NCCL's Simple protocol: LL and LL128 entries
// of NCCL's cost table are priced out, NCCL still picks the algorithm
// (ring, tree) among the Simple ones. LL doubles the bytes on the wire (a
// flag beside every 8 bytes) and LL128 adds 1/15, and with host-memory
// buffers the proxy posts a step only once the whole step's flags are in
// (src/transport/net.cc sendProxyProgress): a store-and-forward of 64 KiB
// (LL) or 600 KiB (LL128) steps that NCCL's cost model, fed only the
// link's speed, does not see. Below the threshold NCCL's own choice
// stands (LL's latency wins for small messages).
//
// Those collectives also get one channel per TB5_NCCL_TUNER_CHANNEL_BYTES
// (default 1 MiB), at least TB5_NCCL_TUNER_MIN_CHANNELS (default 2;
// NCCL caps the count at its own). NCCL gives a 1 MiB
// all_reduce all of its channels (8 on the GPU machines), which cuts it
// into 32 KiB messages (64 KiB of one rank's step per channel, sent as two
// slices) and 0-byte ones: each a full clear-to-send round, and all of
// them copied by the one proxy thread of a rank. 2 channels send 128 KiB
// messages, large enough for the simulator's copy workers to share; on
// the GPU machines that took 1 MiB from 2.6-3.0 to 4.1-4.6 GB/s, and 4
// channels took 4 MiB from 5.5-6.5 to 6.1-7.1. One channel was slower
// than two below 256 KiB, where the messages are too small to share
// either way (docs/performance.md). TB5_NCCL_TUNER=0 turns the tuner
// off; NCCL_TUNER_PLUGIN=none does too, NCCL_PROTO overrides its
// protocol.
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

#include "env.hpp"
#include "log.hpp"
#include "nccl_net_abi.h"

namespace {

using tb5net::env_is;
using tb5net::env_long;

// NCCL 2.28's tuner ABI, version 4 (ext-tuner/: tuner.h), written from
// its documentation: the cost table is float[algorithms][protocols],
// NCCL_ALGO_PROTO_IGNORE (-1.0) for combinations NCCL will not use.
enum {
	kFuncBroadcast = 0,
	kFuncReduce = 1,
	kFuncAllGather = 2,
	kFuncReduceScatter = 3,
	kFuncAllReduce = 4,
};
constexpr int kProtoLl = 0;
constexpr int kProtoLl128 = 1;
constexpr int kProtoSimple = 2;
constexpr int kNumProtocols = 3;
constexpr float kIgnore = -1.0f;
// NCCL's MAXCHANNELS; it caps what a tuner asks for at the communicator's
// channels, so asking for at least this many leaves NCCL's count.
constexpr uint64_t kMaxChannels = 64;

struct Tuner {
	bool net = false;	// collectives go through the network
	uint64_t simple_min = 64 << 10;
	// A Simple collective gets one channel per this many bytes (0: NCCL's
	// channel count stands).
	uint64_t channel_bytes = 1 << 20;
	uint64_t min_channels = 2;	// and never fewer than this
};

ncclResult_t init(size_t nranks, size_t nnodes, ncclDebugLogger_t logger, void **ctx)
{
	if (!ctx)
		return ncclInvalidArgument;
	if (logger)
		tb5net::g_logger.store(logger, std::memory_order_relaxed);
	auto *t = new (std::nothrow) Tuner;
	if (!t)
		return ncclSystemError;
	const bool on = env_long("TB5_NCCL_TUNER", 1, 0, 1) != 0;
	t->simple_min = (uint64_t)env_long("TB5_NCCL_TUNER_SIMPLE_MIN", (long)t->simple_min,
					   0, LONG_MAX);
	t->channel_bytes = (uint64_t)env_long("TB5_NCCL_TUNER_CHANNEL_BYTES",
					      (long)t->channel_bytes, 0, LONG_MAX);
	t->min_channels = (uint64_t)env_long("TB5_NCCL_TUNER_MIN_CHANNELS",
					     (long)t->min_channels, 0, kMaxChannels);
	if (t->min_channels < 1)
		t->min_channels = 1;
	// One node talks through NVLink or shared memory unless both are off.
	t->net = on && nranks > 1 &&
		 (nnodes > 1 || (env_is("NCCL_P2P_DISABLE", "1") && env_is("NCCL_SHM_DISABLE", "1")));
	TB5_INFO(NCCL_INIT | NCCL_TUNING, "tuner: %zu ranks on %zu node%s: %s", nranks, nnodes,
		 nnodes == 1 ? "" : "s",
		 !on ? "off (TB5_NCCL_TUNER=0)" :
		 t->net ? "collectives of TB5_NCCL_TUNER_SIMPLE_MIN bytes or more use Simple" :
			  "no network between the ranks, NCCL's choices stand");
	if (t->net)
		TB5_INFO(NCCL_INIT | NCCL_TUNING,
			 "tuner: Simple from %llu bytes, one channel per %llu bytes, at least %llu",
			 (unsigned long long)t->simple_min, (unsigned long long)t->channel_bytes,
			 (unsigned long long)t->min_channels);
	*ctx = t;
	return ncclSuccess;
}

ncclResult_t get_coll_info(void *ctx, int coll, size_t bytes, int pipe_ops, float **table,
			 int nalgo, int nproto, int reg_buff, int *nchannels)
{
	(void)pipe_ops;
	(void)reg_buff;
	auto *t = static_cast<Tuner *>(ctx);
	if (!t || !t->net || !table || bytes < t->simple_min || nproto < kNumProtocols)
		return ncclSuccess;
	if (coll != kFuncAllReduce && coll != kFuncAllGather && coll != kFuncReduceScatter &&
	    coll != kFuncBroadcast && coll != kFuncReduce)
		return ncclSuccess;
	auto *cost = reinterpret_cast<float(*)[kNumProtocols]>(table);
	bool simple = false;
	for (int a = 0; a < nalgo; a++)
		simple |= cost[a][kProtoSimple] != kIgnore;
	if (!simple)
		return ncclSuccess;	// Simple not possible here: leave it
	for (int a = 0; a < nalgo; a++)
		for (int p : {kProtoLl, kProtoLl128})
			if (cost[a][p] != kIgnore)
				cost[a][p] = 1e12f;
	if (nchannels && t->channel_bytes) {
		uint64_t want = bytes / t->channel_bytes;
		if (want < t->min_channels)
			want = t->min_channels;
		if (want < kMaxChannels)
			*nchannels = (int)want;
	}
	return ncclSuccess;
}

ncclResult_t destroy(void *ctx)
{
	delete static_cast<Tuner *>(ctx);
	return ncclSuccess;
}

} // namespace

typedef struct {
	const char *name;
	ncclResult_t (*init)(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction,
			     void **context);
	ncclResult_t (*getCollInfo)(void *context, int collType, size_t nBytes, int numPipeOps,
				    float **collCostTable, int numAlgo, int numProto, int regBuff,
				    int *nChannels);
	ncclResult_t (*destroy)(void *context);
} tb5TunerV4;

extern "C" __attribute__((visibility("default"))) const tb5TunerV4 ncclTunerPlugin_v4 = {
	"TB5", init, get_coll_info, destroy,
};
