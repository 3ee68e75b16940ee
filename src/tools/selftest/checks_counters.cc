// SPDX-License-Identifier: MIT
//
// checks_counters.cc - counters: the live per-link counters that running
// NCCL jobs publish through the plugin (src/common/live_counters.hpp).
// Nothing running is not a failure (SKIP); a damaged counter file is.
#include "checks.hpp"

#include <cinttypes>
#include <cstdio>

#include "live_counters.hpp"

namespace tb5selftest {

void run_counters_check(Report &report)
{
	const tb5::live::Snapshot snap = tb5::live::read_snapshot();
	const std::string dir = tb5::live::directory();

	if (snap.invalid) {
		report.add(fail("counters", std::to_string(snap.invalid) + " file(s) tb5live.* in " +
					    dir + " are not tb5 counter files, or are damaged",
				"remove them; a plugin of another release may have written them"));
		return;
	}
	if (!snap.publishers) {
		report.add(skip("counters", "", "no NCCL job is using the plugin now" +
					(snap.stale ? " (" + std::to_string(snap.stale) +
						      " stale file(s) of exited jobs)" : std::string())));
		return;
	}
	std::string what = std::to_string(snap.publishers) + " NCCL process(es) publishing:";
	uint64_t errors = 0;
	for (const auto &l : snap.links) {
		char buf[160];
		snprintf(buf, sizeof(buf), " %s tx %" PRIu64 " B / %" PRIu64 " ops, rx %" PRIu64
			 " B / %" PRIu64 " ops, %" PRIu64 " errors;", l.link.c_str(), l.tx_bytes,
			 l.tx_ops, l.rx_bytes, l.rx_ops, l.errors);
		what += buf;
		errors += l.errors;
	}
	what.pop_back();
	Result r = errors ? fail("counters", what, "operations failed: read the job's NCCL log "
						   "(NCCL_DEBUG=WARN) for NET/TB5 lines")
			  : pass("counters", what);
	r.data["publishers"] = snap.publishers;
	r.data["stale"] = snap.stale;
	report.add(std::move(r));
}

} // namespace tb5selftest
