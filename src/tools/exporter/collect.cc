// SPDX-License-Identifier: MIT
//
// collect.cc - a Snapshot from libtb5 (tb5_list_links, then tb5_open and
// tb5_get_counters per link) and from the plugin's live counters in shared
// memory (tb5::live::read_all).
#include "collect.hpp"

#include "tb5/tb5.h"

#include <chrono>
#include <exception>
#include <vector>

#include "handles.hpp"
#include "links.hpp"
#include "live_counters.hpp"

#ifndef TB5_EXPORTER_VERSION
#define TB5_EXPORTER_VERSION "unknown"
#endif

namespace tb5exporter {

namespace {

void collect_links(Snapshot &snap)
{
	std::vector<tb5_link_info> links;

	if (const int rc = tb5::tools::list_links(&links); rc < 0) {
		snap.links_error = tb5_strerror(rc);
		return;
	}
	snap.links_ok = true;
	for (const tb5_link_info &info : links) {
		LinkSample s;
		s.name = info.name;
		s.backend = tb5_backend_str(info.backend);
		s.state = info.state;
		s.local_host = info.local_host;
		s.peer_host = info.peer_host;
		s.ring_size = info.ring_size;
		s.speed_mbps = info.speed_mbps;

		tb5_device *raw = nullptr;
		if (tb5_open(info.name, &raw) == 0) {
			const tb5::tools::DevicePtr dev(raw);
			struct tb5_counters c {};
			if (tb5_get_counters(dev.get(), &c) == 0)
				s.counters = c;
			struct tb5_drops d {};
			if (tb5_get_drops(dev.get(), &d) == 0)
				s.drops = d;
		}
		snap.links.push_back(std::move(s));
	}
}

void collect_plugin(Snapshot &snap)
{
	try {
		snap.plugin = tb5::live::read_all();
		snap.plugin_ok = true;
	} catch (const std::exception &) {
		snap.plugin_ok = false;
	}
}

} // namespace

Snapshot collect()
{
	const auto start = std::chrono::steady_clock::now();
	Snapshot snap;

	snap.version = TB5_EXPORTER_VERSION;
	collect_links(snap);
	collect_plugin(snap);
	snap.scrape_seconds =
		std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
	return snap;
}

} // namespace tb5exporter
