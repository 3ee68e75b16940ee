// SPDX-License-Identifier: MIT
//
// latency.cc - ping-pong, with or without a bulk load beside it.
#include "measure.hpp"

#include <algorithm>
#include <deque>
#include <memory>
#include <optional>

#include "clock.hpp"
#include "errors.hpp"
#include "pattern.hpp"
#include "pipe.hpp"
#include "units.hpp"

namespace tb5perf {
namespace {

constexpr uint32_t kAhead = 2;		// receives posted ahead, slots
constexpr uint32_t kPingDir = 0;
constexpr uint32_t kPongDir = 1;

void check_fits(Conn &conn, const RunSpec &spec)
{
	if (buffer_bytes(spec) > conn.region_size())
		throw Error("the " + format_size(conn.region_size()) +
			    " buffers are too small for " + format_size(spec.size) +
			    " ping-pongs");
	conn.data(0);
	if (spec.test == Test::kLatLoad)
		conn.data(1);
}

// The bulk stream of lat-load, on data endpoint 1, slots after the ping's.
std::unique_ptr<Pipe> make_bulk(Conn &conn, const RunSpec &spec, bool send)
{
	if (spec.test != Test::kLatLoad)
		return nullptr;
	PipeConfig cfg;
	cfg.ep = conn.data(1);
	cfg.send = send;
	cfg.region = send ? &conn.send_region() : &conn.recv_region();
	cfg.base = bulk_base(spec.size);
	cfg.slots = spec.window;
	cfg.size = spec.load_size;
	cfg.count = kUnbounded;
	cfg.id = 0;
	cfg.stream = 1;
	cfg.direction = kPingDir;
	cfg.tag = kTagData;
	cfg.verify = spec.flags & kRunVerify;
	return std::make_unique<Pipe>(cfg);
}

// What each end of a ping-pong works with: data endpoint 0, the buffers,
// and the bulk stream of lat-load (which the client sends).
struct End {
	End(Conn &conn, const RunSpec &spec, bool client)
		: ep((check_fits(conn, spec), conn.data(0))), tx(conn.send_region()),
		  rx(conn.recv_region()), verify(spec.flags & kRunVerify),
		  bulk(make_bulk(conn, spec, client))
	{
	}

	tb5_endpoint *ep;
	Region &tx;
	Region &rx;
	const bool verify;
	std::unique_ptr<Pipe> bulk;
};

void post(tb5_endpoint *ep, Region &region, bool send, uint32_t slot,
	  uint64_t size, uint32_t tag, UdKind kind)
{
	const int ret = send ? tb5_send(ep, region.mr(), slot * size, size, tag,
					make_ud(kind, 0, slot))
			     : tb5_recv(ep, region.mr(), slot * size, size, tag,
					make_ud(kind, 0, slot));
	if (ret < 0)
		throw_api(send ? "tb5_send" : "tb5_recv", ret);
}

// The receives posted ahead before the first message: how many.
uint64_t post_first_receives(tb5_endpoint *ep, Region &rx, const RunSpec &spec,
			     uint32_t tag, UdKind kind)
{
	const uint64_t n = std::min<uint64_t>(kAhead, spec.count);

	for (uint64_t i = 0; i < n; i++)
		post(ep, rx, false, i % kAhead, spec.size, tag, kind);
	return n;
}

// A completion that is neither a ping nor a pong, on either end: the bulk
// load's, else a protocol error.
void complete_bulk(const tb5_wc &wc, Pipe *bulk)
{
	if (ud_kind_of(wc.user_data) != kUdPipe)
		throw Error("protocol error: an unexpected completion during "
			    "ping-pong");
	if (!bulk)
		throw Error("protocol error: bulk data without load");
	bulk->complete(wc);
}

// Checks a received ping or pong; "" when good.
std::string check_message(const tb5_wc &wc, const RunSpec &spec,
			 const uint8_t *buf, uint64_t seq, uint32_t dir)
{
	if (wc.bytes != spec.size)
		return "message " + std::to_string(seq) + ": " +
		       std::to_string(wc.bytes) + " bytes, not " +
		       std::to_string(spec.size);
	if (!(spec.flags & kRunVerify))
		return "";
	std::string bad = check_pattern(buf, spec.size,
				       pattern_seed(spec.size, seq, 0, dir));
	return bad.empty() ? "" : "message " + std::to_string(seq) + ": " + bad;
}

} // namespace

RunResult client_ping_pong(Conn &conn, const RunSpec &spec)
{
	End e(conn, spec, true);
	bool ping_busy[kAhead] = {};
	uint64_t pongs = 0;		// received so far
	uint64_t pong_bytes = 0;
	uint64_t pong_posted = 0;
	RunResult r;

	auto dispatch = [&](std::span<const tb5_wc> wcs) {
		for (const tb5_wc &wc : wcs) {
			const uint32_t slot = ud_slot(wc.user_data);
			switch (ud_kind_of(wc.user_data)) {
			case kUdPing:
				ping_busy[slot % kAhead] = false;
				break;
			case kUdPong:
				if (slot != pongs % kAhead)
					throw Error("pong " + std::to_string(pongs) +
						    " completed out of order");
				pong_bytes = wc.bytes;
				pongs++;
				break;
			default:
				complete_bulk(wc, e.bulk.get());
			}
		}
	};

	pong_posted = post_first_receives(e.ep, e.rx, spec, kTagPong, kUdPong);
	conn.send_ctl(to_ctl(spec));
	while (!conn.take_ctl(CtlType::kReady))
		dispatch(conn.poll());
	const uint64_t start = now_ns();
	if (e.bulk)
		e.bulk->start();
	r.samples_ns.resize(spec.count);
	for (uint64_t i = 0; i < spec.count; i++) {
		const uint32_t slot = i % kAhead;

		while (ping_busy[slot])
			dispatch(conn.poll());
		if (e.verify)
			fill_pattern(e.tx.data() + slot * spec.size, spec.size,
				    pattern_seed(spec.size, i, 0, kPingDir));
		const uint64_t t0 = now_ns();
		post(e.ep, e.tx, true, slot, spec.size, kTagPing, kUdPing);
		ping_busy[slot] = true;
		while (pongs <= i)
			dispatch(conn.poll());
		const uint64_t t1 = now_ns();
		r.samples_ns[i] = static_cast<double>(t1 - t0) / 2;

		tb5_wc got = {};
		got.bytes = pong_bytes;
		const std::string bad = check_message(
			got, spec, e.rx.data() + slot * spec.size, i, kPongDir);
		if (!bad.empty())
			throw Error(conn.phase() + ": verification failed: pong " +
				    bad);
		if (pong_posted < spec.count) {
			post(e.ep, e.rx, false, pong_posted % kAhead, spec.size,
			     kTagPong, kUdPong);
			pong_posted++;
		}
	}
	if (e.bulk) {
		e.bulk->finish();
		while (!e.bulk->done())
			dispatch(conn.poll());
	}
	const uint64_t end = now_ns();
	while (std::any_of(ping_busy, ping_busy + kAhead, [](bool b) { return b; }))
		dispatch(conn.poll());
	if (e.bulk) {
		CtlMsg msg = make_ctl(CtlType::kEnd);
		msg.count = e.bulk->completed();
		conn.send_ctl(msg);
	}
	std::optional<CtlMsg> done;
	while (!(done = conn.take_ctl(CtlType::kDone)))
		dispatch(conn.poll());
	check_done(*done, conn.phase());
	if (e.bulk && done->v[kDoneBulk] != e.bulk->bytes())
		throw Error(conn.phase() + ": the server received " +
			    std::to_string(done->v[kDoneBulk]) +
			    " bulk bytes of " + std::to_string(e.bulk->bytes()));

	r.seconds = seconds(end - start);
	r.messages = spec.count;
	r.bytes = 2 * spec.count * spec.size;
	if (e.bulk) {
		r.load_bytes = e.bulk->bytes();
		r.load_seconds = r.seconds;
	}
	return r;
}

CtlMsg server_ping_pong(Conn &conn, const RunSpec &spec)
{
	End e(conn, spec, false);
	bool pong_busy[kAhead] = {};
	std::deque<uint64_t> pong_due;	// pongs waiting for their slot
	uint64_t pings = 0, ping_posted = 0, pongs_done = 0, errors = 0;
	std::string first_error;
	std::optional<uint64_t> bulk_total;

	auto send_pong = [&](uint64_t seq) {
		const uint32_t slot = seq % kAhead;
		if (e.verify)
			fill_pattern(e.tx.data() + slot * spec.size, spec.size,
				    pattern_seed(spec.size, seq, 0, kPongDir));
		post(e.ep, e.tx, true, slot, spec.size, kTagPong, kUdPong);
		pong_busy[slot] = true;
	};
	auto dispatch = [&](std::span<const tb5_wc> wcs) {
		for (const tb5_wc &wc : wcs) {
			const uint32_t slot = ud_slot(wc.user_data) % kAhead;
			switch (ud_kind_of(wc.user_data)) {
			case kUdPing: {
				const uint64_t seq = pings++;
				const std::string bad = check_message(
					wc, spec, e.rx.data() + slot * spec.size,
					seq, kPingDir);
				if (!bad.empty() && !errors++)
					first_error = "ping " + bad;
				if (pong_busy[seq % kAhead] || !pong_due.empty())
					pong_due.push_back(seq);
				else
					send_pong(seq);
				if (ping_posted < spec.count) {
					post(e.ep, e.rx, false, slot, spec.size,
					     kTagPing, kUdPing);
					ping_posted++;
				}
				break;
			}
			case kUdPong:
				pong_busy[slot] = false;
				pongs_done++;
				if (!pong_due.empty() &&
				    !pong_busy[pong_due.front() % kAhead]) {
					send_pong(pong_due.front());
					pong_due.pop_front();
				}
				break;
			default:
				complete_bulk(wc, e.bulk.get());
			}
		}
	};

	ping_posted = post_first_receives(e.ep, e.rx, spec, kTagPing, kUdPing);
	if (e.bulk)
		e.bulk->start();
	conn.send_ctl(make_ctl(CtlType::kReady));
	while (pongs_done < spec.count)
		dispatch(conn.poll());
	if (e.bulk) {
		for (;;) {
			if (!bulk_total)
				if (auto end = conn.take_ctl(CtlType::kEnd))
					bulk_total = end->count;
			if (bulk_total && e.bulk->completed() >= *bulk_total)
				break;
			dispatch(conn.poll());
		}
		if (e.bulk->errors() && !errors)
			first_error = "bulk " + e.bulk->first_error();
		errors += e.bulk->errors();
	}

	CtlMsg done = make_ctl(CtlType::kDone);
	done.v[kDoneBytes] = pings * spec.size;
	done.v[kDoneMessages] = pings;
	done.v[kDoneErrors] = errors;
	done.v[kDoneBulk] = e.bulk ? e.bulk->bytes() : 0;
	set_text(done, first_error);
	return done;
}

} // namespace tb5perf
