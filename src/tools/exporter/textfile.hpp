// SPDX-License-Identifier: MIT
//
// textfile.hpp - the exporter's metrics for a node exporter that already
// runs: written as <dir>/tb5.prom for prometheus-node-exporter's textfile
// collector, atomically (a temporary file in the same directory, renamed
// over the old one), so that it never reads half a scrape.
#pragma once

#include <string>

namespace tb5exporter {

// The name in the directory.
inline constexpr const char *kTextfileName = "tb5.prom";

// Writes @body as @dir/tb5.prom, mode 0644. False with *error otherwise
// (nothing left behind).
bool write_textfile(const std::string &dir, const std::string &body, std::string *error);

} // namespace tb5exporter
