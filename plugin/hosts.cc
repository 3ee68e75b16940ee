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
// all-gather) and again as its links come up (listen), and the failing
// call reads the others'. A process that reported a missing cable leaves
// its file when it exits, for the other end of the pair, which may fail a
// moment later: a file of a process that is gone counts for a minute, and
// one older than ten minutes is removed by the next process that writes.
#include <algorithm>
#include <chrono>
#include <thread>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include <sys/stat.h>
#include <unistd.h>

#include "links.hpp"
#include "state.hpp"

namespace tb5net {

namespace {

constexpr char kPrefix[] = "tb5hosts.";
// A file of a process that is gone: still read for this long (the other
// end of a missing cable may fail a moment after this one exits), and
// removed once this old.
constexpr time_t kGoneReadS = 60, kGoneRemoveS = 600;

std::vector<uint64_t> g_published;	// the peers last written (g.mu)
std::vector<uint64_t> g_missing;	// hosts found to have no cable here (g.mu)
bool g_written = false;			// (g.mu)
bool g_keep = false;			// a missing cable was reported here

std::string own_path()
{
	return live::directory() + "/" + kPrefix + std::to_string(getpid());
}

// This host's id and its cables' peers as they are now (a link's peer is
// known once it is ready); *@unknown: the links that are not ready yet.
uint64_t own_cables(std::vector<uint64_t> *peers, std::string *unknown)
{
	std::vector<tb5_link_info> links;
	uint64_t self = 0;
	peers->clear();
	if (unknown)
		unknown->clear();
	if (tb5::tools::list_links(&links) < 0)
		return 0;
	for (const tb5_link_info &l : links) {
		if (l.caps & TB5_CAP_LOOP)
			continue;
		self = self ? self : l.local_host;
		if (l.peer_host)
			peers->push_back(l.peer_host);
		else if (unknown)
			*unknown += (unknown->empty() ? "" : ", ") + std::string(l.name);
	}
	std::sort(peers->begin(), peers->end());
	return self;
}

// Another process's file: whether that process still runs, and how old
// the file is (seconds).
struct HostFile {
	std::string path;
	bool alive;
	time_t age;
};

std::vector<HostFile> host_files()
{
	const std::string dir = live::directory(), prefix = dir + "/" + kPrefix;
	std::vector<HostFile> out;
	const time_t now = time(nullptr);
	for (const std::string &path : live::files_named(dir, kPrefix)) {
		char *end = nullptr;
		long pid = std::strtol(path.c_str() + prefix.size(), &end, 10);
		struct stat st;
		if (!end || *end || pid == (long)getpid() || stat(path.c_str(), &st) != 0)
			continue;	// ours, or not one (a .tmp)
		out.push_back({path, live::process_alive((pid_t)pid), now - st.st_mtime});
	}
	return out;
}

} // namespace

void publish_host_locked()
{
	std::vector<uint64_t> peers;
	const uint64_t self = own_cables(&peers, nullptr);
	if (!self || (g_written && peers == g_published))
		return;
	if (!g_written)
		for (const HostFile &f : host_files())
			if (!f.alive && f.age > kGoneRemoveS)
				std::remove(f.path.c_str());
	const std::string path = own_path(), tmp = path + ".tmp";
	FILE *f = std::fopen(tmp.c_str(), "w");
	if (!f)
		return;	// only messages are the poorer for it
	std::fprintf(f, "host %#llx\n", (unsigned long long)self);
	for (uint64_t p : peers)
		std::fprintf(f, "peer %#llx\n", (unsigned long long)p);
	for (uint64_t m : g_missing)
		std::fprintf(f, "missing %#llx\n", (unsigned long long)m);
	bool ok = std::fclose(f) == 0;
	if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
		std::remove(tmp.c_str());
		return;
	}
	g_written = true;
	g_published = peers;
}

void unpublish_host(bool exiting)
{
	if (exiting && g_keep)
		return;
	std::remove(own_path().c_str());
	g_written = false;
	g_published.clear();
	g_missing.clear();
}

namespace {

// The hosts of the other processes' files that this host (@self, cabled
// to @peers) has no cable to, as far as is known; *@confirmed: those whose
// process found the same missing cable from its end ("missing <self>").
std::vector<uint64_t> candidates(uint64_t self, const std::vector<uint64_t> &peers,
				 const std::vector<HostFile> &files,
				 std::vector<uint64_t> *confirmed)
{
	struct Record {
		uint64_t host = 0;
		std::vector<uint64_t> peers, missing;
		bool alive = false;
	};
	std::vector<Record> records;
	std::vector<uint64_t> related = peers;	// hosts of this job, as far as seen
	for (const HostFile &f : files) {
		Record r;
		r.alive = f.alive;
		std::ifstream in(f.path);
		for (std::string line; std::getline(in, line);) {
			std::istringstream words(line);
			std::string key;
			unsigned long long id = 0;
			if (!(words >> key >> std::hex >> id))
				continue;
			if (key == "host")
				r.host = id;
			else if (key == "peer")
				r.peers.push_back(id);
			else if (key == "missing")
				r.missing.push_back(id);
		}
		if (!r.host)
			continue;
		if (r.alive) {
			related.push_back(r.host);
			related.insert(related.end(), r.peers.begin(), r.peers.end());
		}
		records.push_back(std::move(r));
	}
	auto in = [](const std::vector<uint64_t> &v, uint64_t h) {
		return std::find(v.begin(), v.end(), h) != v.end();
	};
	std::vector<uint64_t> out;
	confirmed->clear();
	for (const Record &r : records) {
		// A process that is gone counts when it was of this job: cabled
		// to a host of it (not one of an earlier job on this machine).
		bool of_job = r.alive || in(related, r.host) ||
			      std::any_of(r.peers.begin(), r.peers.end(),
					  [&](uint64_t h) { return in(related, h); });
		// One that names this host among its peers has a cable to it.
		if (!of_job || r.host == self || in(r.peers, self) || in(peers, r.host))
			continue;
		out.push_back(r.host);
		if (in(r.missing, self))
			confirmed->push_back(r.host);
	}
	for (auto *v : {&out, confirmed}) {
		std::sort(v->begin(), v->end());
		v->erase(std::unique(v->begin(), v->end()), v->end());
	}
	return out;
}

} // namespace

std::vector<uint64_t> hosts_without_cable_locked(std::string *unknown)
{
	auto recent = [] {
		std::vector<HostFile> v = host_files();
		v.erase(std::remove_if(v.begin(), v.end(),
				       [](const HostFile &f) { return !f.alive && f.age > kGoneReadS; }),
			v.end());
		return v;
	};
	std::vector<HostFile> files = recent();
	unknown->clear();
	if (files.empty())
		return {};	// no other tb5 host on this machine to name
	// A link of this host that is still coming up may reach a candidate:
	// give it a second (its peer answers from its own polls), or until the
	// other end of the missing cable has said so from its side.
	std::vector<uint64_t> peers, out, confirmed;
	for (int i = 0; i < 100; i++) {
		const uint64_t self = own_cables(&peers, unknown);
		out = candidates(self, peers, files, &confirmed);
		if (unknown->empty() || out.empty())
			break;
		if (!confirmed.empty()) {
			out = confirmed;
			unknown->clear();
			break;
		}
		for (auto &[name, d] : g.open)
			progress(d.get());
		std::this_thread::sleep_for(std::chrono::milliseconds(10));
		files = recent();
	}
	if (unknown->empty() && !out.empty()) {
		// Exact: tell the other end.
		g_missing = out;
		g_written = false;
	}
	publish_host_locked();
	g_keep = g_keep || !out.empty();
	return out;
}

} // namespace tb5net
