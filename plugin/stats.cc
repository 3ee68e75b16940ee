// SPDX-License-Identifier: MIT
//
// stats.cc - where the plugin's time and bytes go: the data path's
// timeline (TB5_NCCL_TRACE), timed polls, sends and posts
// (TB5_NCCL_STATS), and each link's totals when it closes.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <unistd.h>

#include "log.hpp"
#include "state.hpp"

namespace tb5net {

std::atomic<bool> g_trace_on{false};

namespace {

// TB5_NCCL_TRACE=<prefix>: a timeline of the data path (requests posted,
// completions reaped, requests handed back to NCCL, polls that found
// something), written to <prefix>.<pid> when the process exits.
struct TraceEvent {
	uint64_t ns;
	const void *comm;
	const void *req;
	uint64_t bytes;
	char kind;	// S isend, R irecv, s/r completion, T test done, P poll
};

struct Trace {
	std::atomic<size_t> n{0};
	std::vector<TraceEvent> ev;
	std::string path;
	Trace()
	{
		const char *p = std::getenv("TB5_NCCL_TRACE");
		if (!p || !*p)
			return;
		path = std::string(p) + "." + std::to_string(getpid());
		ev.resize(1u << 20);
		g_trace_on.store(true, std::memory_order_relaxed);
	}
	~Trace() { dump(); }
	void dump()
	{
		if (!g_trace_on.exchange(false))
			return;
		FILE *f = std::fopen(path.c_str(), "w");
		if (!f)
			return;
		size_t cnt = std::min(n.load(), ev.size());
		std::fprintf(f, "# t_ns kind comm req bytes (S isend, R irecv, s send done, "
			     "r recv done, T test done, P poll: bytes = completions)\n");
		for (size_t i = 0; i < cnt; i++)
			std::fprintf(f, "%llu %c %p %p %llu\n", (unsigned long long)ev[i].ns,
				     ev[i].kind, ev[i].comm, ev[i].req,
				     (unsigned long long)ev[i].bytes);
		std::fclose(f);
	}
};

Trace g_trace;

} // namespace

void trace_record(char kind, const void *comm, const void *req, uint64_t bytes)
{
	size_t i = g_trace.n.fetch_add(1, std::memory_order_relaxed);
	if (i < g_trace.ev.size())
		g_trace.ev[i] = TraceEvent{now_ns(), comm, req, bytes, kind};
}

uint64_t now_ns()
{
	return (uint64_t)std::chrono::duration_cast<std::chrono::nanoseconds>(
		       std::chrono::steady_clock::now().time_since_epoch()).count();
}

bool stats_on()
{
	static const bool on = [] {
		const char *v = std::getenv("TB5_NCCL_STATS");
		return v && *v && *v != '0';
	}();
	return on;
}

int poll(Device *d, tb5_wc *wc, int max)
{
	if (!stats_on())
		return tb5_poll(d->dev.get(), wc, max);
	auto t0 = std::chrono::steady_clock::now();
	int n = tb5_poll(d->dev.get(), wc, max);
	uint64_t ns = (uint64_t)std::chrono::duration_cast<std::chrono::nanoseconds>(
			      std::chrono::steady_clock::now() - t0).count();
	d->polls++;
	d->poll_ns += ns;
	if (n > 0) {
		d->busy_polls++;
		d->busy_ns += ns;
		d->completions += (uint64_t)n;
	}
	return n;
}

// The link's live counters when it closes, one line, so that a job's
// bytes per cable outlive the live-counter file (tests/gpu reads them).
void log_totals(Device *d)
{
	if (!d->live)
		return;
	TB5_INFO(NCCL_NET, "link %s closed: %llu B sent in %llu ops, %llu B received in %llu ops, "
		 "%llu errors", d->name.c_str(), (unsigned long long)d->live->tx_bytes,
		 (unsigned long long)d->live->tx_ops, (unsigned long long)d->live->rx_bytes,
		 (unsigned long long)d->live->rx_ops, (unsigned long long)d->live->errors);
}

void log_stats(Device *d)
{
	if (!stats_on() || !d->polls)
		return;
	double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() -
						    d->opened).count();
	TB5_INFO(NCCL_NET, "stats %s: %.3f s open, %llu polls took %.3f s (%.0f ns each); "
		 "%llu returned %llu completions and took %.3f s; %llu sends took %.3f s, "
		 "%llu receive posts %.3f s; %llu B sent, %llu B received", d->name.c_str(),
		 wall, (unsigned long long)d->polls, d->poll_ns / 1e9,
		 (double)d->poll_ns / (double)d->polls, (unsigned long long)d->busy_polls,
		 (unsigned long long)d->completions, d->busy_ns / 1e9,
		 (unsigned long long)d->sends.load(), d->send_ns.load() / 1e9,
		 (unsigned long long)d->posts.load(), d->post_ns.load() / 1e9,
		 (unsigned long long)(d->live ? d->live->tx_bytes : 0),
		 (unsigned long long)(d->live ? d->live->rx_bytes : 0));
}

} // namespace tb5net
