// SPDX-License-Identifier: MIT
//
// units.cc - parsing and printing sizes.
#include "units.hpp"

#include <algorithm>
#include <cctype>
#include <cinttypes>
#include <cstdio>
#include <string>

#include "errors.hpp"

namespace tb5perf {
namespace {

std::string lower(std::string_view s)
{
	std::string out(s);

	for (char &c : out)
		c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
	return out;
}

std::string_view trim(std::string_view s)
{
	while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
		s.remove_prefix(1);
	while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
		s.remove_suffix(1);
	return s;
}

void add_range(std::string_view part, std::vector<uint64_t> &out)
{
	const size_t c1 = part.find(':');

	if (c1 == std::string_view::npos) {
		auto n = parse_size(part);
		if (!n || !*n)
			throw UsageError("bad size \"" + std::string(part) + "\"");
		out.push_back(*n);
		return;
	}
	const std::string_view lo_s = part.substr(0, c1);
	std::string_view hi_s = part.substr(c1 + 1);
	uint64_t factor = 2;
	const size_t c2 = hi_s.find(':');

	if (c2 != std::string_view::npos) {
		auto f = parse_size(hi_s.substr(c2 + 1));
		if (!f || *f < 2)
			throw UsageError("bad step in size range \"" +
					 std::string(part) +
					 "\": a factor of at least 2");
		factor = *f;
		hi_s = hi_s.substr(0, c2);
	}
	auto lo = parse_size(lo_s), hi = parse_size(hi_s);
	if (!lo || !hi || !*lo)
		throw UsageError("bad size range \"" + std::string(part) +
				 "\": FROM:TO[:FACTOR], e.g. 256:256M");
	if (*lo > *hi)
		throw UsageError("bad size range \"" + std::string(part) +
				 "\": " + format_size(*lo) + " is more than " +
				 format_size(*hi));
	for (uint64_t n = *lo; n <= *hi; n *= factor) {
		out.push_back(n);
		if (n > UINT64_MAX / factor)
			break;
	}
}

} // namespace

std::optional<uint64_t> parse_size(std::string_view text)
{
	const std::string s = lower(trim(text));
	size_t i = 0;
	uint64_t n = 0;

	if (s.empty() || !std::isdigit(static_cast<unsigned char>(s[0])))
		return std::nullopt;
	while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
		const uint64_t d = static_cast<uint64_t>(s[i] - '0');
		if (n > (UINT64_MAX - d) / 10)
			return std::nullopt;
		n = n * 10 + d;
		i++;
	}
	std::string unit = s.substr(i);
	if (!unit.empty() && unit.front() == ' ')
		unit.erase(0, 1);
	unsigned shift;
	if (unit.empty() || unit == "b")
		shift = 0;
	else if (unit == "k" || unit == "kb" || unit == "kib")
		shift = 10;
	else if (unit == "m" || unit == "mb" || unit == "mib")
		shift = 20;
	else if (unit == "g" || unit == "gb" || unit == "gib")
		shift = 30;
	else
		return std::nullopt;
	if (shift && n > (UINT64_MAX >> shift))
		return std::nullopt;
	return n << shift;
}

std::vector<uint64_t> parse_size_list(std::string_view text)
{
	std::vector<uint64_t> out;
	std::string_view rest = text;

	if (trim(text).empty())
		throw UsageError("empty size list");
	while (!rest.empty()) {
		const size_t comma = rest.find(',');
		const std::string_view part = trim(rest.substr(0, comma));

		if (part.empty())
			throw UsageError("empty entry in size list \"" +
					 std::string(text) + "\"");
		add_range(part, out);
		if (comma == std::string_view::npos)
			break;
		rest = rest.substr(comma + 1);
	}
	std::sort(out.begin(), out.end());
	out.erase(std::unique(out.begin(), out.end()), out.end());
	return out;
}

std::string format_size(uint64_t bytes)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	char buf[48];
	unsigned u = 0;
	uint64_t whole = bytes;

	while (u < 4 && whole >= 1024 && !(whole % 1024)) {
		whole /= 1024;
		u++;
	}
	if (whole < 1024 || u == 4) {
		snprintf(buf, sizeof(buf), "%" PRIu64 " %s", whole, units[u]);
		return buf;
	}
	double v = static_cast<double>(bytes);
	u = 0;
	while (u < 4 && v >= 1024) {
		v /= 1024;
		u++;
	}
	snprintf(buf, sizeof(buf), "%.3g %s", v, units[u]);
	return buf;
}

std::string format_count(double n)
{
	char buf[32];

	if (n >= 1e9)
		snprintf(buf, sizeof(buf), "%.3gG", n / 1e9);
	else if (n >= 1e6)
		snprintf(buf, sizeof(buf), "%.3gM", n / 1e6);
	else if (n >= 1e4)
		snprintf(buf, sizeof(buf), "%.3gk", n / 1e3);
	else
		snprintf(buf, sizeof(buf), "%.0f", n);
	return buf;
}

} // namespace tb5perf
