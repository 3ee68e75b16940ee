// SPDX-License-Identifier: MIT
//
// metrics.hpp - what tb5-exporter serves: a snapshot of the host's links
// (libtb5's view of the kernel's counters) and of the NCCL plugin's live
// counters, and its rendering in the Prometheus text format (0.0.4).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tb5exporter {

// One link as libtb5 lists it, with its counters when it could be opened.
struct LinkSample {
	std::string name;		// "tb5_0"
	std::string backend;		// tb5_backend_str(): "kernel", "simulator"
	uint32_t state = 0;		// TB5_LINK_STATE_*: 0 down, 1 up, 2 ready
	uint64_t local_host = 0;
	uint64_t peer_host = 0;
	uint32_t ring_size = 0;
	uint32_t speed_mbps = 0;
	bool have_counters = false;	// false: tb5_open() failed (permissions)
	uint64_t tx_frames = 0, tx_bytes = 0, rx_frames = 0, rx_bytes = 0, errors = 0;
	bool have_drops = false;	// false: a module without drop counters
	// Received frames dropped or refused, by kind (tb5_get_drops()).
	uint64_t drop_malformed = 0, drop_unknown_connection = 0, drop_out_of_window = 0,
		 drop_ring_overflow = 0, drop_sequence_gap = 0;
};

// One link's counters as the NCCL plugin's processes publish them.
struct PluginSample {
	std::string link;
	uint64_t tx_bytes = 0, rx_bytes = 0, tx_ops = 0, rx_ops = 0, errors = 0;
	uint32_t processes = 0;
};

struct Snapshot {
	std::string version;		// the exporter's (and libtb5's) version
	bool links_ok = false;		// tb5_list_links() succeeded
	std::string links_error;	// its message otherwise
	std::vector<LinkSample> links;
	bool plugin_ok = false;		// the plugin's counters could be read
	std::vector<PluginSample> plugin;
	double scrape_seconds = 0;
};

// A label value escaped as the text format wants: \ " and newline.
std::string escape_label(std::string_view value);

// The whole /metrics body: HELP and TYPE lines, one family after another.
std::string format(const Snapshot &snap);

} // namespace tb5exporter
