// SPDX-License-Identifier: MIT
//
// bandwidth.cc - bw, bibw, streams.
#include "measure.hpp"

#include <memory>
#include <vector>

#include "clock.hpp"
#include "errors.hpp"
#include "pipe.hpp"
#include "units.hpp"

namespace tb5perf {
namespace {

// Direction numbers of the pattern.
constexpr uint32_t kToServer = 0;
constexpr uint32_t kToClient = 1;

class Pipes {
public:
	// Stream s uses slots [s * window, (s + 1) * window) of @region.
	void add(Conn &conn, const RunSpec &spec, bool send, Region &region,
		 uint32_t direction)
	{
		for (uint32_t s = 0; s < spec.streams; s++) {
			PipeConfig cfg;
			cfg.ep = conn.data(s);
			cfg.send = send;
			cfg.region = &region;
			cfg.base = static_cast<uint64_t>(s) * spec.window * spec.size;
			cfg.slots = spec.window;
			cfg.size = spec.size;
			cfg.count = spec.count;
			cfg.id = static_cast<uint32_t>(pipes_.size());
			cfg.stream = s;
			cfg.direction = direction;
			cfg.tag = kTagData;
			cfg.verify = spec.flags & kRunVerify;
			pipes_.push_back(std::make_unique<Pipe>(cfg));
			is_send_.push_back(send);
		}
	}

	void start(bool send)
	{
		for (size_t i = 0; i < pipes_.size(); i++)
			if (is_send_[i] == send)
				pipes_[i]->start();
	}

	void dispatch(std::span<const tb5_wc> wcs)
	{
		for (const tb5_wc &wc : wcs) {
			const uint32_t id = ud_owner(wc.user_data);
			if (ud_kind_of(wc.user_data) != kUdPipe || id >= pipes_.size())
				throw Error("protocol error: an unexpected "
					    "completion during a bandwidth test");
			pipes_[id]->complete(wc);
		}
	}

	bool done() const
	{
		for (const auto &p : pipes_)
			if (!p->done())
				return false;
		return true;
	}

	// Received bytes, messages and bad messages; the first error.
	uint64_t recv_bytes() const
	{
		uint64_t n = 0;
		for (size_t i = 0; i < pipes_.size(); i++)
			n += is_send_[i] ? 0 : pipes_[i]->bytes();
		return n;
	}
	uint64_t recv_messages() const
	{
		uint64_t n = 0;
		for (size_t i = 0; i < pipes_.size(); i++)
			n += is_send_[i] ? 0 : pipes_[i]->completed();
		return n;
	}
	uint64_t errors(std::string *first) const
	{
		uint64_t n = 0;
		for (const auto &p : pipes_) {
			if (p->errors() && first && first->empty())
				*first = p->first_error();
			n += p->errors();
		}
		return n;
	}
	uint64_t span() const
	{
		uint64_t first = 0, last = 0;
		for (size_t i = 0; i < pipes_.size(); i++) {
			const Pipe &p = *pipes_[i];
			if (is_send_[i] || !p.completed())
				continue;
			if (!first || p.first_ns() < first)
				first = p.first_ns();
			if (p.last_ns() > last)
				last = p.last_ns();
		}
		return last - first;
	}

private:
	std::vector<std::unique_ptr<Pipe>> pipes_;
	std::vector<bool> is_send_;
};

void check_fits(Conn &conn, const RunSpec &spec)
{
	if (buffer_bytes(spec) > conn.region_size())
		throw Error(std::to_string(spec.streams) + " x " +
			    std::to_string(spec.window) + " x " +
			    format_size(spec.size) + " do not fit in the " +
			    format_size(conn.region_size()) + " buffers");
	for (uint32_t s = 0; s < spec.streams; s++)
		conn.data(s);
}

} // namespace

RunResult client_bandwidth(Conn &conn, const RunSpec &spec)
{
	const bool bidir = spec.test == Test::kBibw;
	Pipes pipes;

	check_fits(conn, spec);
	if (bidir)
		pipes.add(conn, spec, false, conn.recv_region(), kToClient);
	pipes.add(conn, spec, true, conn.send_region(), kToServer);

	// The server starts sending (bibw) as soon as it said READY.
	pipes.start(false);
	conn.send_ctl(to_ctl(spec));
	while (!conn.take_ctl(CtlType::kReady))
		pipes.dispatch(conn.poll());
	const uint64_t t0 = now_ns(), cpu0 = process_cpu_ns();
	pipes.start(true);
	while (!pipes.done())
		pipes.dispatch(conn.poll());
	std::optional<CtlMsg> done;
	while (!(done = conn.take_ctl(CtlType::kDone)))
		pipes.dispatch(conn.poll());
	const uint64_t t1 = now_ns(), cpu1 = process_cpu_ns();

	std::string first;
	if (const uint64_t bad = pipes.errors(&first))
		throw Error(conn.phase() + ": verification failed (" +
			    std::to_string(bad) +
			    " bad messages): " + first);
	check_done(*done, conn.phase());
	const uint64_t sent = spec.count * spec.streams * spec.size;
	if (done->v[kDoneBytes] != sent)
		throw Error(conn.phase() + ": the server received " +
			    std::to_string(done->v[kDoneBytes]) + " bytes of " +
			    std::to_string(sent));

	RunResult r;
	r.seconds = seconds(t1 - t0);
	r.bytes = sent + pipes.recv_bytes();
	r.messages = spec.count * spec.streams * (bidir ? 2 : 1);
	r.cpu_ns = cpu1 - cpu0;
	r.peer_cpu_ns = done->aux;
	return r;
}

CtlMsg server_bandwidth(Conn &conn, const RunSpec &spec)
{
	const bool bidir = spec.test == Test::kBibw;
	Pipes pipes;

	check_fits(conn, spec);
	pipes.add(conn, spec, false, conn.recv_region(), kToServer);
	if (bidir)
		pipes.add(conn, spec, true, conn.send_region(), kToClient);
	pipes.start(false);
	const uint64_t cpu0 = process_cpu_ns();
	conn.send_ctl(make_ctl(CtlType::kReady));
	pipes.start(true);
	while (!pipes.done())
		pipes.dispatch(conn.poll());

	CtlMsg done = make_ctl(CtlType::kDone);
	done.aux = process_cpu_ns() - cpu0;
	std::string first;
	done.v[kDoneBytes] = pipes.recv_bytes();
	done.v[kDoneMessages] = pipes.recv_messages();
	done.v[kDoneErrors] = pipes.errors(&first);
	done.v[kDoneNs] = pipes.span();
	set_text(done, first);
	return done;
}

} // namespace tb5perf
