// SPDX-License-Identifier: MIT
//
// environment.hpp - what a result depends on, for the JSON document and the
// lines above the table: tool and library versions, the link and the
// server's link, the machine, the settings.
#ifndef TB5_PERF_ENVIRONMENT_HPP
#define TB5_PERF_ENVIRONMENT_HPP

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "options.hpp"
#include "tb5/tb5.h"

namespace tb5perf {

// What the server said about itself in WELCOME.
struct PeerInfo {
	uint64_t host = 0;
	uint32_t max_ops = 0;
	uint32_t ring_size = 0;
	uint32_t speed_mbps = 0;
	uint32_t backend = 0;
	std::string memory;	// its data buffers: memory_name(), or "unknown"
	std::string version;
};

std::string hex(uint64_t v);
nlohmann::json link_json(const tb5_link_info &link);
nlohmann::json make_environment(const Options &opt, const std::string &mode,
			       const tb5_link_info &link, const PeerInfo &peer);

} // namespace tb5perf

#endif // TB5_PERF_ENVIRONMENT_HPP
