// SPDX-License-Identifier: MIT
//
// The exporter's text format: families with HELP and TYPE, label escaping,
// counters only where a link could be opened, the plugin's counters.
#include "metrics.hpp"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

using tb5exporter::escape_label;
using tb5exporter::format;
using tb5exporter::LinkSample;
using tb5exporter::PluginSample;
using tb5exporter::Snapshot;

namespace {

bool has(const std::string &text, const std::string &line)
{
	std::istringstream in(text);
	for (std::string l; std::getline(in, l);)
		if (l == line)
			return true;
	return false;
}

Snapshot two_links()
{
	Snapshot s;
	s.version = "9.8.7";
	s.links_ok = true;
	// tb5_0: ready, opened; tb5_1: down, not opened (no counters).
	LinkSample a{"tb5_0", "kernel", 2, 0x10, 0x11, 4096, 80000, std::nullopt, std::nullopt};
	a.counters = tb5_counters{};
	a.counters->tx_frames = 3;
	a.counters->tx_bytes = 12288;
	a.counters->rx_frames = 4;
	a.counters->rx_bytes = 16384;
	a.counters->errors = 1;
	a.drops = tb5_drops{};
	a.drops->sequence_gap = 7;
	a.drops->malformed = 2;
	LinkSample b{"tb5_1", "kernel", 0, 0, 0, 1024, 0, std::nullopt, std::nullopt};
	s.links = {a, b};
	return s;
}

} // namespace

TEST(ExporterFormat, EscapesLabelValues)
{
	EXPECT_EQ(escape_label("plain"), "plain");
	EXPECT_EQ(escape_label("a\"b"), "a\\\"b");
	EXPECT_EQ(escape_label("a\\b"), "a\\\\b");
	EXPECT_EQ(escape_label("a\nb"), "a\\nb");
}

TEST(ExporterFormat, EveryFamilyHasHelpAndTypeOnce)
{
	const std::string text = format(two_links());
	std::istringstream in(text);
	int help = 0, type = 0;
	std::string last_family;
	for (std::string l; std::getline(in, l);) {
		ASSERT_FALSE(l.empty());
		if (l.rfind("# HELP ", 0) == 0) {
			help++;
			last_family = l.substr(7, l.find(' ', 7) - 7);
		} else if (l.rfind("# TYPE ", 0) == 0) {
			type++;
			EXPECT_EQ(l.substr(7, l.find(' ', 7) - 7), last_family);
		} else {
			// A sample of the family announced last.
			EXPECT_EQ(l.rfind(last_family, 0), 0u) << l;
		}
	}
	EXPECT_EQ(help, type);
	EXPECT_GT(help, 10);
	EXPECT_EQ(text.back(), '\n');
}

TEST(ExporterFormat, LinksAndCounters)
{
	const std::string text = format(two_links());
	const char *const kLines[] = {
		"tb5_exporter_build_info{version=\"9.8.7\"} 1",
		"tb5_up 1",
		"tb5_link_info{link=\"tb5_0\",backend=\"kernel\",state=\"ready\","
			"host=\"0x0000000000000010\",peer_host=\"0x0000000000000011\"} 1",
		"tb5_link_info{link=\"tb5_1\",backend=\"kernel\",state=\"down\","
			"host=\"0x0000000000000000\",peer_host=\"\"} 1",
		"# TYPE tb5_link_tx_bytes_total counter",
		"tb5_link_state{link=\"tb5_0\"} 2",
		"tb5_link_ring_size{link=\"tb5_1\"} 1024",
		// Base units: 80 Gbit/s is 10 GB/s.
		"tb5_link_speed_bytes_per_second{link=\"tb5_0\"} 10000000000",
		"tb5_link_tx_bytes_total{link=\"tb5_0\"} 12288",
		"tb5_link_rx_frames_total{link=\"tb5_0\"} 4",
		"tb5_link_errors_total{link=\"tb5_0\"} 1",
		"tb5_link_counters_available{link=\"tb5_1\"} 0",
		"# TYPE tb5_link_rx_drops_total counter",
		"tb5_link_rx_drops_total{link=\"tb5_0\",kind=\"sequence_gap\"} 7",
		"tb5_link_rx_drops_total{link=\"tb5_0\",kind=\"malformed\"} 2",
		"tb5_link_rx_drops_total{link=\"tb5_0\",kind=\"ring_overflow\"} 0",
	};
	for (const char *line : kLines)
		EXPECT_TRUE(has(text, line)) << line;
	EXPECT_EQ(text.find("tb5_link_rx_drops_total{link=\"tb5_1\""), std::string::npos);
	// No counters for a link that could not be opened: no fake zeros.
	EXPECT_EQ(text.find("tb5_link_tx_bytes_total{link=\"tb5_1\"}"), std::string::npos);
}

TEST(ExporterFormat, NoLinksStillNamesTheFamilies)
{
	Snapshot s;
	s.version = "1.0.0";
	const std::string text = format(s);
	EXPECT_TRUE(has(text, "tb5_up 0"));
	EXPECT_TRUE(has(text, "tb5_plugin_up 0"));
	EXPECT_TRUE(has(text, "# TYPE tb5_link_rx_bytes_total counter"));
	EXPECT_TRUE(has(text, "# TYPE tb5_plugin_tx_ops_total counter"));
}

TEST(ExporterFormat, PluginCounters)
{
	Snapshot s;
	s.version = "1.0.0";
	s.plugin_ok = true;
	PluginSample p;
	p.link = "tb5_0";
	p.tx_bytes = 1ull << 40;
	p.rx_bytes = 5;
	p.tx_ops = 6;
	p.rx_ops = 7;
	p.errors = 0;
	p.processes = 2;
	s.plugin = {p};
	const std::string text = format(s);
	EXPECT_TRUE(has(text, "tb5_plugin_up 1"));
	EXPECT_TRUE(has(text, "tb5_plugin_tx_bytes_total{link=\"tb5_0\"} 1099511627776"));
	EXPECT_TRUE(has(text, "tb5_plugin_rx_ops_total{link=\"tb5_0\"} 7"));
	EXPECT_TRUE(has(text, "tb5_plugin_processes{link=\"tb5_0\"} 2"));
	EXPECT_TRUE(has(text, "# TYPE tb5_plugin_processes gauge"));
}
