// SPDX-License-Identifier: MIT
//
// hosts.cc - which tb5 host each process on this machine is, and which
// hosts it has cables to, so that a missing cable can be named where NCCL
// trips over it without a peer in hand.
//
// NCCL fuses the topologies of the ranks that share a machine (NVIDIA/nccl
// v2.28.3-1, src/graph/topo.cc:1478-1515, ncclTopoGetSystem: an intra-node
// all-gather of every rank's XML, then ncclTopoFuseXml) and then hands a
// rank net devices from that fused topology (search.cc:1252-1270,
// ncclTopoGetNetDev; transport/net.cc:300 sendSetup, :343 recvSetup).
// Where the ranks are different tb5 hosts (simulated hosts on one machine)
// and one host lacks a cable the others have, it lists fewer devices, and
// its proxy is asked for a device index another rank listed
// (transport/net.cc:727 sendProxySetup, :766 recvProxySetup:
// getProperties(netDev)). The plugin cannot learn that rank's host from
// NCCL; so each process writes its host and its cables' peers to
// <live dir>/tb5hosts.<pid> at init (every rank's init comes before that
// all-gather), and the failing call reads the others'.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "links.hpp"
#include "state.hpp"

namespace tb5net {

namespace {

constexpr char kPrefix[] = "tb5hosts.";

std::string own_path()
{
	return live::directory() + "/" + kPrefix + std::to_string(getpid());
}

// This host's id and its cables' peers, from the listing. g.mu held.
uint64_t own_host_locked(std::vector<uint64_t> *peers)
{
	uint64_t self = 0;
	for (const tb5_link_info &l : g.links) {
		if (l.caps & TB5_CAP_LOOP)
			continue;
		if (!self)
			self = l.local_host;
		if (peers && l.peer_host)
			peers->push_back(l.peer_host);
	}
	return self;
}

} // namespace

void publish_host_locked()
{
	std::vector<uint64_t> peers;
	uint64_t self = own_host_locked(&peers);
	if (!self)
		return;
	const std::string path = own_path(), tmp = path + ".tmp";
	FILE *f = std::fopen(tmp.c_str(), "w");
	if (!f)
		return;	// only messages are the poorer for it
	std::fprintf(f, "host %#llx\n", (unsigned long long)self);
	for (uint64_t p : peers)
		std::fprintf(f, "peer %#llx\n", (unsigned long long)p);
	bool ok = std::fclose(f) == 0;
	if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0)
		std::remove(tmp.c_str());
}

void unpublish_host()
{
	std::remove(own_path().c_str());
}

std::vector<uint64_t> hosts_without_cable(std::string *unknown)
{
	// This host's cables as they are now: a link's peer is known once the
	// link is ready.
	std::vector<tb5_link_info> links;
	uint64_t self = 0;
	std::vector<uint64_t> peers;
	unknown->clear();
	if (tb5::tools::list_links(&links) == 0)
		for (const tb5_link_info &l : links) {
			if (l.caps & TB5_CAP_LOOP)
				continue;
			self = self ? self : l.local_host;
			if (l.peer_host)
				peers.push_back(l.peer_host);
			else
				*unknown += (unknown->empty() ? "" : ", ") + std::string(l.name);
		}
	// The other processes' hosts; one that names this host among its
	// peers has a cable to it.
	const std::string prefix = live::directory() + "/" + kPrefix;
	std::vector<uint64_t> out;
	for (const std::string &path : live::files_named(live::directory(), kPrefix)) {
		char *end = nullptr;
		long pid = std::strtol(path.c_str() + prefix.size(), &end, 10);
		if (!end || *end || pid == (long)getpid() || !live::process_alive((pid_t)pid))
			continue;	// ours, not one, or left by a process that is gone
		std::ifstream in(path);
		uint64_t host = 0;
		bool cabled = false;
		for (std::string line; std::getline(in, line);) {
			std::istringstream words(line);
			std::string key;
			unsigned long long id = 0;
			if (!(words >> key >> std::hex >> id))
				continue;
			if (key == "host")
				host = id;
			else if (key == "peer" && id == self)
				cabled = true;
		}
		if (host && host != self && !cabled &&
		    std::find(peers.begin(), peers.end(), host) == peers.end())
			out.push_back(host);
	}
	std::sort(out.begin(), out.end());
	out.erase(std::unique(out.begin(), out.end()), out.end());
	return out;
}

} // namespace tb5net
