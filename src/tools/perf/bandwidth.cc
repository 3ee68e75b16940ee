// SPDX-License-Identifier: MIT
//
// bandwidth.cc - bw, bibw, streams.
#include "bandwidth.h"

#include <memory>
#include <vector>

#include "clock.h"
#include "errors.h"
#include "pipe.h"
#include "units.h"

namespace tb5perf {
namespace {

// Direction numbers of the pattern.
constexpr uint32_t kToServer = 0;
constexpr uint32_t kToClient = 1;

class Pipes {
public:
	// Stream s uses slots [s * window, (s + 1) * window) of @region.
	void Add(Conn &conn, const RunSpec &spec, bool send, Region &region,
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

	void Start(bool send)
	{
		for (size_t i = 0; i < pipes_.size(); i++)
			if (is_send_[i] == send)
				pipes_[i]->Start();
	}

	void Dispatch(std::span<const tb5_wc> wcs)
	{
		for (const tb5_wc &wc : wcs) {
			const uint32_t id = UdOwner(wc.user_data);
			if (UdKindOf(wc.user_data) != kUdPipe || id >= pipes_.size())
				throw Error("protocol error: an unexpected "
					    "completion during a bandwidth test");
			pipes_[id]->Complete(wc);
		}
	}

	bool Done() const
	{
		for (const auto &p : pipes_)
			if (!p->done())
				return false;
		return true;
	}

	// Received bytes, messages and bad messages; the first error.
	uint64_t RecvBytes() const
	{
		uint64_t n = 0;
		for (size_t i = 0; i < pipes_.size(); i++)
			n += is_send_[i] ? 0 : pipes_[i]->bytes();
		return n;
	}
	uint64_t RecvMessages() const
	{
		uint64_t n = 0;
		for (size_t i = 0; i < pipes_.size(); i++)
			n += is_send_[i] ? 0 : pipes_[i]->completed();
		return n;
	}
	uint64_t Errors(std::string *first) const
	{
		uint64_t n = 0;
		for (const auto &p : pipes_) {
			if (p->errors() && first && first->empty())
				*first = p->first_error();
			n += p->errors();
		}
		return n;
	}
	uint64_t Span() const
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

void CheckFits(Conn &conn, const RunSpec &spec)
{
	if (BufferBytes(spec) > conn.region_size())
		throw Error(std::to_string(spec.streams) + " x " +
			    std::to_string(spec.window) + " x " +
			    FormatSize(spec.size) + " do not fit in the " +
			    FormatSize(conn.region_size()) + " buffers");
	for (uint32_t s = 0; s < spec.streams; s++)
		conn.data(s);
}

} // namespace

RunResult ClientBandwidth(Conn &conn, const RunSpec &spec)
{
	const bool bidir = spec.test == Test::kBibw;
	Pipes pipes;

	CheckFits(conn, spec);
	if (bidir)
		pipes.Add(conn, spec, false, conn.recv_region(), kToClient);
	pipes.Add(conn, spec, true, conn.send_region(), kToServer);

	// The server starts sending (bibw) as soon as it said READY.
	pipes.Start(false);
	conn.SendCtl(ToCtl(spec));
	while (!conn.TakeCtl(CtlType::kReady))
		pipes.Dispatch(conn.Poll());
	const uint64_t t0 = NowNs(), cpu0 = ProcessCpuNs();
	pipes.Start(true);
	while (!pipes.Done())
		pipes.Dispatch(conn.Poll());
	std::optional<CtlMsg> done;
	while (!(done = conn.TakeCtl(CtlType::kDone)))
		pipes.Dispatch(conn.Poll());
	const uint64_t t1 = NowNs(), cpu1 = ProcessCpuNs();

	std::string first;
	if (const uint64_t bad = pipes.Errors(&first))
		throw Error(conn.phase() + ": verification failed (" +
			    std::to_string(bad) +
			    " bad messages): " + first);
	CheckDone(*done, conn.phase());
	const uint64_t sent = spec.count * spec.streams * spec.size;
	if (done->v[kDoneBytes] != sent)
		throw Error(conn.phase() + ": the server received " +
			    std::to_string(done->v[kDoneBytes]) + " bytes of " +
			    std::to_string(sent));

	RunResult r;
	r.seconds = Seconds(t1 - t0);
	r.bytes = sent + pipes.RecvBytes();
	r.messages = spec.count * spec.streams * (bidir ? 2 : 1);
	r.cpu_ns = cpu1 - cpu0;
	r.peer_cpu_ns = done->aux;
	return r;
}

CtlMsg ServerBandwidth(Conn &conn, const RunSpec &spec)
{
	const bool bidir = spec.test == Test::kBibw;
	Pipes pipes;

	CheckFits(conn, spec);
	pipes.Add(conn, spec, false, conn.recv_region(), kToServer);
	if (bidir)
		pipes.Add(conn, spec, true, conn.send_region(), kToClient);
	pipes.Start(false);
	const uint64_t cpu0 = ProcessCpuNs();
	conn.SendCtl(MakeCtl(CtlType::kReady));
	pipes.Start(true);
	while (!pipes.Done())
		pipes.Dispatch(conn.Poll());

	CtlMsg done = MakeCtl(CtlType::kDone);
	done.aux = ProcessCpuNs() - cpu0;
	std::string first;
	done.v[kDoneBytes] = pipes.RecvBytes();
	done.v[kDoneMessages] = pipes.RecvMessages();
	done.v[kDoneErrors] = pipes.Errors(&first);
	done.v[kDoneNs] = pipes.Span();
	SetText(done, first);
	return done;
}

} // namespace tb5perf
