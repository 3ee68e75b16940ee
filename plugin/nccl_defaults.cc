// SPDX-License-Identifier: MIT
//
// nccl_defaults.cc - NCCL settings the plugin gives a job that leaves them
// unset.
//
// NCCL reads its tunables from the environment when a communicator first
// needs them, after it has initialised the net plugin (NVIDIA/nccl
// v2.28.3-1, src/init.cc: ncclNetInit before computeBuffSizes), and some of
// them no plugin property reaches. Network plugins set such variables in
// their init() for the platforms they know, never over the user's value
// (aws-ofi-nccl does so for EFA: NCCL_P2P_NET_CHUNKSIZE, NCCL_BUFFSIZE,
// ...). tb5 sets one:
//
//   NCCL_P2P_NET_CHUNKSIZE=524288 - send/recv and alltoall go over the
//   network in steps of this size (NCCL's default 128 KiB). Through tb5
//   every step is a message of its own, each copied whole by the proxy
//   thread (on a cable: a DMA and a receive copy), and 128 KiB steps kept
//   a 2-rank alltoall or send/recv at 6.2-6.8 GB/s on a modelled 80 Gb/s
//   cable where 512 KiB steps reach 7.8-9.1 (docs/performance.md). NCCL
//   caps it at an eighth of NCCL_BUFFSIZE (4 MiB: 512 KiB), so a larger
//   value buys nothing by default.
//
// Only when the job may use tb5: NCCL_NET unset or naming TB5 (another
// network's job keeps NCCL's defaults). TB5_NCCL_DEFAULTS=0 sets nothing.
// Each variable set is logged (NCCL_INIT).
#include "nccl_defaults.hpp"

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <strings.h>

#include "env.hpp"
#include "log.hpp"
#include "net.hpp"

namespace tb5net {

namespace {

struct Default {
	const char *name;
	const char *value;
	const char *why;
};

constexpr Default kDefaults[] = {
	{ "NCCL_P2P_NET_CHUNKSIZE", "524288",
	  "send/recv steps of 512 KiB: one tb5 message each" },
};

bool job_may_use_tb5()
{
	const char *net = std::getenv("NCCL_NET");
	return !net || !*net || !strcasecmp(net, kName);
}

} // namespace

void apply_nccl_defaults()
{
	static std::once_flag once;
	std::call_once(once, [] {
		if (!env_long("TB5_NCCL_DEFAULTS", 1, 0, 1))
			return;
		if (!job_may_use_tb5())
			return;
		for (const Default &d : kDefaults) {
			const char *v = std::getenv(d.name);
			if (v && *v) {
				TB5_INFO(NCCL_INIT, "%s=%s set by the job: kept (tb5 would set %s)",
					 d.name, v, d.value);
				continue;
			}
			// Unset or empty (NCCL reads an empty value as unset):
			// overwrite, so that an empty one does not stay.
			if (setenv(d.name, d.value, 1) == 0)
				TB5_INFO(NCCL_INIT, "setting %s=%s (%s; TB5_NCCL_DEFAULTS=0 "
					 "leaves NCCL's)", d.name, d.value, d.why);
		}
	});
}

} // namespace tb5net
