// SPDX-License-Identifier: MIT
//
// nccl_topo_model.hpp - what NCCL 2.28.3 makes of a net plugin's devices
// when it builds a host's topology: which devices it shows to the plugin's
// makeVDevice (NIC fusion, NCCL_NET_MERGE_LEVEL), which NET nodes the host
// keeps afterwards, and so which device numbers it then listens and
// connects on, channel by channel. A small re-implementation of the parts
// of NCCL's src/graph/ that decide it (each step cites its source), so that
// a test without GPUs replays the calls NCCL makes and fails where NCCL
// would (issue 25: "Could not find NET with id 0" with 3 or 4 hosts).
#ifndef TB5_PLUGIN_NCCL_TOPO_MODEL_HPP
#define TB5_PLUGIN_NCCL_TOPO_MODEL_HPP

#include <string>
#include <vector>

#include "plugin_api.hpp"

namespace tb5plugintest {

struct NcclTopo {
	bool ok = false;
	std::string error;		// NCCL's WARN when !ok
	std::vector<int> nets;		// device numbers of the host's NET nodes
	std::vector<std::string> log;	// what NCCL did (merges tried)
};

// NCCL_NET_MERGE_LEVEL's values (topo.cc nicPathKvList), and PATH_PORT
// when @level is empty (topo.cc ncclTopoGetFusionEnv). -1: unknown.
int NcclMergeLevel(const std::string &level);

// Runs NCCL's ncclTopoProcessNet over @api's devices at merge level
// @level (NcclMergeLevel); calls devices(), getProperties() and, when the
// table offers it, makeVDevice() as NCCL does.
NcclTopo ModelNcclTopo(Api &api, int level);

// The NET device NCCL uses for channel @channel of a host with @topo
// (search.cc: channels take the host's nets in turn).
int NcclChannelNet(const NcclTopo &topo, int channel);

// The NET devices in the topology of every rank of one machine (one host
// hash) whose ranks' own topologies are @ranks, rank after rank: NCCL
// fuses the ranks' XML and keeps each net's "dev", the index its own
// rank's plugin gave it, so a rank is handed devices of the others'
// numbering (see nccl_topo_model.cc).
std::vector<int> NcclMachineNets(const std::vector<NcclTopo> &ranks);

} // namespace tb5plugintest

#endif // TB5_PLUGIN_NCCL_TOPO_MODEL_HPP
