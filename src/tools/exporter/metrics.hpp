// SPDX-License-Identifier: MIT
//
// metrics.hpp - what tb5-exporter serves: a snapshot of the host's links
// (libtb5's view of the kernel's counters) and of the NCCL plugin's live
// counters, and its rendering in the Prometheus text format (0.0.4).
#ifndef TB5_EXPORTER_METRICS_HPP
#define TB5_EXPORTER_METRICS_HPP

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "live_counters.hpp"
#include "tb5/tb5.h"

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
	// tb5_get_counters(); none when tb5_open() failed (permissions).
	std::optional<tb5_counters> counters;
	// Received frames dropped or refused, by kind (tb5_get_drops()); none
	// for a module without drop counters.
	std::optional<tb5_drops> drops;
};

// One link's counters as the NCCL plugin's processes publish them.
using PluginSample = tb5::live::LinkCounters;

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

#endif // TB5_EXPORTER_METRICS_HPP
