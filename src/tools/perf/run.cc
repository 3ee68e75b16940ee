// SPDX-License-Identifier: MIT
//
// run.cc - RUN and DONE messages.
#include "run.hpp"

#include <cstring>

#include "errors.hpp"

namespace tb5perf {

uint64_t buffer_bytes(const RunSpec &spec)
{
	switch (spec.test) {
	case Test::kLat:
	case Test::kJitter:
		return 2 * spec.size;
	case Test::kLatLoad:
		return bulk_base(spec.size) + spec.window * spec.load_size;
	case Test::kBw:
	case Test::kBibw:
	case Test::kStreams:
		break;
	}
	return static_cast<uint64_t>(spec.streams) * spec.window * spec.size;
}

CtlMsg to_ctl(const RunSpec &spec)
{
	CtlMsg msg = make_ctl(CtlType::kRun);

	msg.test = static_cast<uint32_t>(spec.test);
	msg.size = spec.size;
	msg.count = spec.count;
	msg.window = spec.window;
	msg.streams = spec.streams;
	msg.flags = spec.flags;
	msg.aux = spec.load_size;
	return msg;
}

RunSpec from_ctl(const CtlMsg &msg)
{
	const auto test = by_number(kTestNames, msg.test);

	if (!test)
		throw Error("RUN of unknown test " + std::to_string(msg.test));
	// to_ctl()'s fields back, in RunSpec's order.
	const RunSpec spec = {.test = *test, .size = msg.size, .count = msg.count,
			      .window = msg.window, .streams = msg.streams,
			      .flags = msg.flags, .load_size = msg.aux};
	if (!spec.size || !spec.count || !spec.window || !spec.streams ||
	    spec.window > 65536 || spec.streams > 1024 ||
	    spec.count > (1ull << 40) ||
	    (spec.test == Test::kLatLoad && !spec.load_size))
		throw Error("RUN out of range");
	return spec;
}

void check_done(const CtlMsg &done, const std::string &what)
{
	if (done.status < 0)
		throw Error(what + ": the server failed: " + text(done));
	if (done.v[kDoneErrors])
		throw Error(what + ": verification failed on the server (" +
			    std::to_string(done.v[kDoneErrors]) +
			    " bad messages): " + text(done));
}

} // namespace tb5perf
