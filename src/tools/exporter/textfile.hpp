// SPDX-License-Identifier: MIT
//
// textfile.hpp - the exporter's metrics for a node exporter that already
// runs: written as <dir>/tb5.prom for prometheus-node-exporter's textfile
// collector, atomically (a temporary file in the same directory, renamed
// over the old one), so that it never reads half a scrape.
#ifndef TB5_EXPORTER_TEXTFILE_HPP
#define TB5_EXPORTER_TEXTFILE_HPP

#include <string>

namespace tb5exporter {

// The name in the directory.
inline constexpr const char *kTextfileName = "tb5.prom";

// Writes @body as @dir/tb5.prom, mode 0644. Throws tb5::tools::Error
// otherwise (nothing left behind).
void write_textfile(const std::string &dir, const std::string &body);

} // namespace tb5exporter

#endif // TB5_EXPORTER_TEXTFILE_HPP
