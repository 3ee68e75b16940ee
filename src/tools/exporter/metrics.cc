// SPDX-License-Identifier: MIT
//
// metrics.cc - the Prometheus text format of a Snapshot. Every family has
// its HELP and TYPE lines, even without samples, so that a dashboard sees
// the same names on a host without links.
#include "metrics.hpp"

#include <cinttypes>
#include <cstdio>

#include "tb5/tb5.h"

namespace tb5exporter {

namespace {

class Writer {
public:
	void family(const char *name, const char *type, const char *help)
	{
		out_ += "# HELP ";
		out_ += name;
		out_ += ' ';
		out_ += help;
		out_ += "\n# TYPE ";
		out_ += name;
		out_ += ' ';
		out_ += type;
		out_ += '\n';
	}

	void sample(const char *name, std::string_view labels, uint64_t value)
	{
		char buf[32];
		std::snprintf(buf, sizeof(buf), "%" PRIu64, value);
		line(name, labels, buf);
	}

	void sample(const char *name, std::string_view labels, double value)
	{
		char buf[64];
		std::snprintf(buf, sizeof(buf), "%.9g", value);
		line(name, labels, buf);
	}

	std::string take() { return std::move(out_); }

private:
	void line(const char *name, std::string_view labels, const char *value)
	{
		out_ += name;
		if (!labels.empty()) {
			out_ += '{';
			out_ += labels;
			out_ += '}';
		}
		out_ += ' ';
		out_ += value;
		out_ += '\n';
	}

	std::string out_;
};

std::string label(const char *key, std::string_view value)
{
	return std::string(key) + "=\"" + escape_label(value) + '"';
}

std::string hex(uint64_t v)
{
	char buf[24];
	std::snprintf(buf, sizeof(buf), "0x%016" PRIx64, v);
	return buf;
}

// "2 ready": a state's number and tb5_link_state_str()'s name for it.
std::string state_number(uint32_t state)
{
	return std::to_string(state) + " " + tb5_link_state_str(state);
}

} // namespace

std::string escape_label(std::string_view value)
{
	std::string out;
	out.reserve(value.size());
	for (char c : value) {
		switch (c) {
		case '\\': out += "\\\\"; break;
		case '"': out += "\\\""; break;
		case '\n': out += "\\n"; break;
		default: out += c;
		}
	}
	return out;
}

std::string format(const Snapshot &snap)
{
	Writer w;

	w.family("tb5_exporter_build_info", "gauge", "The exporter's version (always 1).");
	w.sample("tb5_exporter_build_info", label("version", snap.version), uint64_t{1});
	w.family("tb5_exporter_scrape_duration_seconds", "gauge",
		 "Seconds it took to collect this scrape.");
	w.sample("tb5_exporter_scrape_duration_seconds", "", snap.scrape_seconds);

	w.family("tb5_up", "gauge",
		 "1 when the links of this host could be listed (module loaded or simulator), else 0.");
	w.sample("tb5_up", "", uint64_t{snap.links_ok ? 1u : 0u});

	w.family("tb5_link_info", "gauge",
		 "One per link (always 1): backend, state, this end's and the peer's host ids.");
	for (const LinkSample &l : snap.links)
		w.sample("tb5_link_info",
			 label("link", l.name) + ',' + label("backend", l.backend) + ',' +
				 label("state", tb5_link_state_str(l.state)) + ',' +
				 label("host", hex(l.local_host)) + ',' +
				 label("peer_host", l.peer_host ? hex(l.peer_host) : std::string()),
			 uint64_t{1});

	struct Gauge {
		const char *name, *help;
		uint64_t (*get)(const LinkSample &);
	};
	// The states' names are libtb5's, as in tb5_link_info's label.
	static const std::string kStateHelp =
		"Link state: " + state_number(TB5_LINK_STATE_DOWN) + ", " +
		state_number(TB5_LINK_STATE_UP) + " (no peer yet), " +
		state_number(TB5_LINK_STATE_READY) + ".";
	static const Gauge kGauges[] = {
		{"tb5_link_state", kStateHelp.c_str(),
		 [](const LinkSample &l) -> uint64_t { return l.state; }},
		{"tb5_link_ring_size", "Descriptors per TX and per RX ring (a count).",
		 [](const LinkSample &l) -> uint64_t { return l.ring_size; }},
		{"tb5_link_speed_bytes_per_second",
		 "Link rate in bytes per second (the kernel's Mbit/s times 125000); 0 when "
		 "unknown or unlimited.",
		 [](const LinkSample &l) -> uint64_t { return uint64_t{l.speed_mbps} * 125000u; }},
		{"tb5_link_counters_available",
		 "1 when the link could be opened to read its counters (0: no permission; "
		 "add the exporter to group tb5).",
		 [](const LinkSample &l) -> uint64_t { return l.counters ? 1 : 0; }},
	};
	for (const Gauge &g : kGauges) {
		w.family(g.name, "gauge", g.help);
		for (const LinkSample &l : snap.links)
			w.sample(g.name, label("link", l.name), g.get(l));
	}

	static const Gauge kCounters[] = {
		{"tb5_link_tx_frames_total", "Frames sent on the link.",
		 [](const LinkSample &l) { return l.counters->tx_frames; }},
		{"tb5_link_tx_bytes_total", "Frame bytes sent on the link, headers included.",
		 [](const LinkSample &l) { return l.counters->tx_bytes; }},
		{"tb5_link_rx_frames_total", "Frames received on the link.",
		 [](const LinkSample &l) { return l.counters->rx_frames; }},
		{"tb5_link_rx_bytes_total", "Frame bytes received on the link, headers included.",
		 [](const LinkSample &l) { return l.counters->rx_bytes; }},
		{"tb5_link_errors_total", "Malformed frames, drops and link resets.",
		 [](const LinkSample &l) { return l.counters->errors; }},
	};
	for (const Gauge &g : kCounters) {
		w.family(g.name, "counter", g.help);
		for (const LinkSample &l : snap.links)
			if (l.counters)
				w.sample(g.name, label("link", l.name), g.get(l));
	}

	// One family, a label per kind, so that sum() gives every drop.
	static const struct {
		const char *kind;
		uint64_t tb5_drops::*field;
	} kDrops[] = {
		{"malformed", &tb5_drops::malformed},
		{"unknown_connection", &tb5_drops::unknown_connection},
		{"out_of_window", &tb5_drops::out_of_window},
		{"ring_overflow", &tb5_drops::ring_overflow},
		{"sequence_gap", &tb5_drops::sequence_gap},
	};
	w.family("tb5_link_rx_drops_total", "counter",
		 "Received frames the link dropped or refused, by kind: malformed, "
		 "unknown_connection, out_of_window, ring_overflow, sequence_gap.");
	for (const LinkSample &l : snap.links)
		if (l.drops)
			for (const auto &k : kDrops)
				w.sample("tb5_link_rx_drops_total",
					 label("link", l.name) + ',' + label("kind", k.kind),
					 (*l.drops).*k.field);

	w.family("tb5_plugin_up", "gauge",
		 "1 when the NCCL plugin's live counters could be read (0: none published).");
	w.sample("tb5_plugin_up", "", uint64_t{snap.plugin_ok ? 1u : 0u});
	struct PluginMetric {
		const char *name, *type, *help;
		uint64_t (*get)(const PluginSample &);
	};
	static const PluginMetric kPlugin[] = {
		{"tb5_plugin_tx_bytes_total", "counter", "Message bytes the NCCL plugin sent.",
		 [](const PluginSample &p) { return p.tx_bytes; }},
		{"tb5_plugin_rx_bytes_total", "counter", "Message bytes the NCCL plugin received.",
		 [](const PluginSample &p) { return p.rx_bytes; }},
		{"tb5_plugin_tx_ops_total", "counter", "Sends the NCCL plugin completed.",
		 [](const PluginSample &p) { return p.tx_ops; }},
		{"tb5_plugin_rx_ops_total", "counter", "Receives the NCCL plugin completed.",
		 [](const PluginSample &p) { return p.rx_ops; }},
		{"tb5_plugin_errors_total", "counter", "Operations the NCCL plugin saw fail.",
		 [](const PluginSample &p) { return p.errors; }},
		{"tb5_plugin_processes", "gauge", "Processes with the plugin using the link now.",
		 [](const PluginSample &p) -> uint64_t { return p.processes; }},
	};
	for (const PluginMetric &m : kPlugin) {
		w.family(m.name, m.type, m.help);
		for (const PluginSample &p : snap.plugin)
			w.sample(m.name, label("link", p.link), m.get(p));
	}
	return w.take();
}

} // namespace tb5exporter
