// SPDX-License-Identifier: MIT
//
// units.hpp - message sizes in and out: "4K", "1MiB", "256:256M", "8,64,4K";
// 1024-based for sizes, 1e9-based for rates (GB/s).
#ifndef TB5_PERF_UNITS_HPP
#define TB5_PERF_UNITS_HPP

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tb5perf {

// "256", "4K", "4k", "4KiB", "4KB", "1M", "2G": bytes, 1024-based.
std::optional<uint64_t> parse_size(std::string_view text);

// A size list: "a:b" (a, 2a, 4a, ... up to b), "a:b:f" (times f each
// step), or a comma-separated list of sizes and ranges. Sorted, unique.
// Throws UsageError with a message that names the bad part.
std::vector<uint64_t> parse_size_list(std::string_view text);

// "256 B", "4 KiB", "1 MiB", "1.5 KiB".
std::string format_size(uint64_t bytes);
// "123", "4.56k", "1.23M".
std::string format_count(double n);

} // namespace tb5perf

#endif // TB5_PERF_UNITS_HPP
