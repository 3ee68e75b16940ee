// SPDX-License-Identifier: MIT
//
// nccl_topo_model.cc - see nccl_topo_model.hpp. Line numbers are those of
// NVIDIA/nccl at tag v2.28.3-1.
#include "nccl_topo_model.hpp"

#include <climits>
#include <cstdlib>
#include <cstring>
#include <map>

#include <unistd.h>

namespace tb5plugintest {

namespace {

// src/graph/topo.h:62-98 (PATH_PORT is PATH_NVL).
constexpr int kPathLoc = 0, kPathPort = 1, kPathPix = 4, kPathPxb = 5, kPathP2c = 6,
	      kPathPxn = 7, kPathPhb = 8, kPathSys = 9, kPathDis = 11;

// Where ncclTopoFillNet (src/graph/xml.cc:915-958) hangs a device's "nic"
// node: under the PCI node of its bus id when pciPath names a PCI device
// (ncclTopoGetSubsystem, xml.cc:900-913: the path's "subsystem" link ends
// in "pci"), else under the first CPU ("Virtual NIC, no PCI device,
// attach to first CPU", xml.cc:945-947). "" stands for that CPU.
std::string NicParent(const std::string &pci_path)
{
	if (pci_path.empty())
		return "";
	char buf[4096];
	ssize_t n = readlink((pci_path + "/subsystem").c_str(), buf, sizeof(buf) - 1);
	if (n <= 0)
		return "";
	buf[n] = 0;
	const char *slash = std::strrchr(buf, '/');
	if (std::strcmp(slash ? slash + 1 : buf, "pci") != 0)
		return "";
	return pci_path.substr(pci_path.rfind('/') + 1);	// the bus id
}

// ncclTopoGetPath (src/graph/topo.cc:826-927) for two physical nets.
// Nets under one "nic" node have that nic as their common parent: PATH_PORT
// (topo.cc:912-913). Nets under two PCI devices whose bus ids differ only
// in the last character are ports of one card: PATH_PORT (the multi-port
// check, topo.cc:868-902). Anything else meets at a switch or at the CPU:
// modelled as PATH_PHB (the real tree may give PIX or PXB; all are above
// the default PORT, which is what decides NCCL's default merge).
int PathBetween(const std::string &a, const std::string &b)
{
	if (a == b)
		return kPathPort;
	if (!a.empty() && !b.empty() && a.size() == b.size() &&
	    a.compare(0, a.size() - 1, b, 0, b.size() - 1) == 0)
		return kPathPort;
	return kPathPhb;
}

} // namespace

int NcclMergeLevel(const std::string &level)
{
	// topo.cc:1149-1159 (nicPathKvList), topo.cc:1385-1393.
	static const std::map<std::string, int> kv = {
		{"LOC", kPathLoc}, {"PORT", kPathPort}, {"PIX", kPathPix}, {"PXB", kPathPxb},
		{"P2C", kPathP2c}, {"PXN", kPathPxn}, {"PHB", kPathPhb}, {"SYS", kPathSys},
	};
	if (level.empty())
		return kPathPort;
	auto it = kv.find(level);
	return it == kv.end() ? -1 : it->second;
}

NcclTopo ModelNcclTopo(Api &api, int level)
{
	NcclTopo out;
	int nphys = 0;
	if (api.Devices(&nphys) != ncclSuccess) {
		out.error = "devices() failed";
		return out;
	}
	// ncclTopoPopulateNics for the physical devices (topo.cc:1313-1357):
	// one "net" per device, keep=1.
	std::vector<Props> props(nphys);
	std::vector<std::string> parent(nphys);
	std::vector<bool> keep(nphys, true);
	for (int i = 0; i < nphys; i++) {
		if (api.GetProps(i, &props[i]) != ncclSuccess) {
			out.error = "getProperties(" + std::to_string(i) + ") failed";
			return out;
		}
		parent[i] = NicParent(props[i].pci_path);
	}
	// A plugin without makeVDevice keeps its physical devices
	// (usePhysicalDevices, topo.cc:1360-1364).
	std::vector<std::pair<int, bool>> nets;	// (dev, visible)
	if (api.HasMakeVDevice() && nphys > 0) {
		// ncclTopoAutoMerge (topo.cc:1080-1147).
		std::vector<int> paths(nphys * nphys), placed(nphys, 0);
		for (int i = 0; i < nphys; i++)
			for (int j = 0; j < nphys; j++)
				paths[i * nphys + j] = i == j ? kPathLoc : PathBetween(parent[i], parent[j]);
		for (int i = 0; i < nphys; i++) {
			if (placed[i])
				continue;
			std::vector<int> v = {i};
			placed[i] = 1;
			for (int j = 0; j < nphys; j++) {
				if (paths[i * nphys + j] <= level && !placed[j] && j != i) {
					v.push_back(j);
					placed[j] = 1;
				}
				if ((int)v.size() == NCCL_NET_MAX_DEVS_PER_NIC)
					break;
			}
			// ncclTopoMakeVnic (topo.cc:987-1017): no vNIC of one.
			if (v.size() == 1)
				continue;
			int vd = -1;
			ncclResult_t r = api.MakeVDevice(&vd, v);
			std::string members;
			for (int d : v)
				members += (members.empty() ? "" : " ") + std::to_string(d);
			if (r != ncclSuccess) {
				// Unplace, make them distant, start again
				// (topo.cc:1126-1144).
				out.log.push_back("makeVDevice(" + members + ") failed: " +
						  std::to_string(r));
				placed[i] = 0;
				for (size_t k = 1; k < v.size(); k++) {
					placed[v[k]] = 0;
					paths[i * nphys + v[k]] = kPathDis;
					paths[v[k] * nphys + i] = kPathDis;
				}
				i = 0;	// (as NCCL: the loop's i++ then skips 0, placed)
				continue;
			}
			out.log.push_back("vNIC " + std::to_string(vd) + " = " + members);
			for (int d : v)
				keep[d] = false;	// keep="0" (topo.cc:1008-1013)
		}
	}
	for (int i = 0; i < nphys; i++)
		if (keep[i])	// ncclTopoTrimXml drops keep="0" nets (xml.cc:962-985)
			nets.push_back({i, true});
	if (api.HasMakeVDevice()) {
		int ndev = 0;
		api.Devices(&ndev);
		for (int v = nphys; v < ndev; v++) {
			Props vp;
			if (api.GetProps(v, &vp) != ncclSuccess) {
				out.error = "getProperties(" + std::to_string(v) + ") failed";
				return out;
			}
			// ncclTopoGetVNicParent (topo.cc:1248-1283): the members'
			// common parent. Members under one "nic" meet there;
			// ncclFindFirstPciParent (topo.cc:814-823) moves it up to
			// a PCI node, and leaves it on the nic when there is none
			// (a CPU-attached nic). ncclTopoFillNet then adds a new
			// "nic" under that parent (xml.cc:949-957): under a PCI
			// node the vNIC is a NET of the host; under the nic it is
			// a nic inside a nic, which ncclTopoAddNic never reads
			// (it takes only "net" children, topo.cc:385-395): the
			// host has no such NET.
			bool same = true;
			std::string p0;
			for (size_t k = 0; k < vp.vdev_list.size(); k++) {
				int d = vp.vdev_list[k];
				std::string pk = d >= 0 && d < nphys ? parent[d] : "?";
				if (k == 0)
					p0 = pk;
				same = same && pk == p0;
			}
			bool visible;
			if (same) {
				visible = !p0.empty();
			} else if (!p0.empty()) {
				visible = true;	// re-parented under a made-up PCI node
			} else {
				// The common parent is the CPU and member 0 has no
				// PCI node: topo.cc:1277 -> ncclTopoMakePciParent.
				out.error = "TOPO/NET : Can't find busId of child 0 " + props[0].name;
				return out;
			}
			out.log.push_back("vNIC " + std::to_string(v) + " " + vp.name +
					  (visible ? ": a NET of the host" :
						     ": nested in a nic, not a NET of the host"));
			nets.push_back({v, visible});
		}
	}
	for (auto &[d, vis] : nets)
		if (vis)
			out.nets.push_back(d);
	if (out.nets.empty()) {
		// No NET: the search finds no path and falls back to
		// inter[0] = inter[1] = 0 (search.cc:1165-1171); transport/
		// net.cc:300 asks ncclTopoGetNetDev for that id, which
		// ncclTopoIdToNetDev does not find (topo.h:258-268).
		out.error = "graph/topo.h:267 NCCL WARN Could not find NET with id 0";
		return out;
	}
	out.ok = true;
	return out;
}

int NcclChannelNet(const NcclTopo &topo, int channel)
{
	// ncclTopoSearchRecNet: nets[(graph->nChannels + i) % netCount]
	// (search.cc:653): channel c starts on the host's c-th net.
	return topo.nets[(size_t)channel % topo.nets.size()];
}

std::vector<int> NcclMachineNets(const std::vector<NcclTopo> &ranks)
{
	// ncclTopoGetSystem (topo.cc:1478-1515): the ranks with this host
	// hash all-gather their XML (bootstrapIntraNodeAllGather) and each
	// fuses them all, rank after rank (ncclTopoFuseXml, xml.cc:291-318).
	// xmlFindNode (xml.h:195-216) merges two nodes only when every
	// attribute matches; the nets of different ranks differ in guid, so
	// every rank's nets stay, each with the "dev" its own plugin gave it
	// (topo.cc:1336, ncclTopoPopulateNics), which ncclTopoAddNet makes
	// the NET's device number (topo.cc:356-361). A channel on such a NET
	// has ncclTopoGetNetDev (search.cc:1252-1266) hand that number to
	// this rank's sendSetup/recvSetup (transport/net.cc:300, 343), and
	// the proxy asks this rank's plugin for it: getProperties(netDev) in
	// sendProxySetup and recvProxySetup (transport/net.cc:727, 766), then
	// listen(netDev) (net.cc:781) and later connect(netDev).
	std::vector<int> out;
	for (const NcclTopo &t : ranks)
		out.insert(out.end(), t.nets.begin(), t.nets.end());
	return out;
}

} // namespace tb5plugintest
