// SPDX-License-Identifier: MIT
//
// nccl_proxy.cc - --nccl: a 2-rank ring all_reduce moved through the NCCL
// net plugin exactly as NCCL 2.28.3's proxy thread moves it
// (src/transport/net.cc, sendProxyProgress and recvProxyProgress), with
// the GPU's part done by the CPU at once:
//
// - two processes, two hosts of a simulated fabric of their own, each
//   loading the plugin with dlopen() and calling it through the
//   ncclNetPlugin_v11 table that NCCL 2.28 loads;
// - per channel a send comm and a receive comm (listen, connect and accept
//   without blocking, handles passed over a socket as NCCL's bootstrap
//   would);
// - each connection has NCCL_STEPS = 8 buffer slots; a message uses
//   sliceSteps of them, so up to 8 / sliceSteps are in flight; receives are
//   posted as soon as a slot is free, for a whole slot (stepSize x
//   sliceSteps, not the message's size), sends as soon as the "GPU" has
//   filled a slot; completions are found by test() on the oldest request,
//   one action per connection per pass, and an idle pass yields
//   (sched_yield), as NCCL's progress loop does;
// - the chunk and slice sizes of NCCL's kernel (enqueue.cc calcCollChunking,
//   primitives' slice sizing), empty slices included, and the dependency
//   of the ring: the reduced chunk of step 1 goes out only once the peer's
//   step-0 slice has arrived.
//
// It prints the time of one all_reduce against the time the modelled line
// needs for the bytes each rank sends (rate= of --sim-options).
#include "nccl_proxy.hpp"

#include <nlohmann/json.hpp>

#include <dlfcn.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "clock.hpp"
#include "errors.hpp"
#include "launch.hpp"
#include "nccl_net_abi.h"
#include "report.hpp"

namespace tb5perf {

namespace {

constexpr uint32_t kNcclSteps = 8;	// NCCL_STEPS

uint64_t div_up(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

const char *proto_name(NcclProto p)
{
	switch (p) {
	case NcclProto::kSimple: return "simple";
	case NcclProto::kLl: return "ll";
	case NcclProto::kLl128: return "ll128";
	}
	return "?";
}

} // namespace

NcclShape nccl_shape_of(NcclProto p)
{
	switch (p) {
	case NcclProto::kLl: {
		// 8 lines per thread x 512 threads x 8 steps x 16 B; a line
		// carries 8 bytes of data beside its flags.
		const uint64_t step = 8ull * 512 * 16;
		return {step, kNcclSteps, 1, step / 2, 2, 1};
	}
	case NcclProto::kLl128: {
		// 120 elements of 8 B per thread x 640 threads per step; a
		// 128-byte line carries 120 bytes of data.
		const uint64_t step = 120ull * 640 * 8;
		return {step, kNcclSteps, 1, step / 128 * 120, 128, 120};
	}
	case NcclProto::kSimple:
	default: {
		// NCCL_BUFFSIZE 4 MiB; all_reduce: sliceSteps 2, chunkSteps 4.
		const uint64_t step = (4ull << 20) / kNcclSteps;
		return {step * 2, kNcclSteps / 2, 2, step * 4, 1, 1};
	}
	}
}

std::vector<NcclMsg> nccl_messages(NcclProto p, uint64_t bytes, uint32_t nch,
				  uint32_t ch, uint32_t q0)
{
	const NcclShape s = nccl_shape_of(p);
	const uint64_t loop_size = uint64_t(nch) * 2 * s.chunk_data;
	std::vector<NcclMsg> out;
	const uint64_t loops = std::max<uint64_t>(1, div_up(bytes, loop_size));
	for (uint64_t l = 0; l < loops; l++) {
		const uint64_t grid = l * loop_size;
		// The kernel's realChunkSize: the loop's rest over every
		// channel's chunks, at most a chunk, in whole 128-byte units.
		uint64_t real = std::min(s.chunk_data, div_up(bytes - grid, uint64_t(nch) * 2));
		real = div_up(real, 128) * 128;
		for (uint32_t step = 0; step < 2; step++) {
			const uint32_t q = step == 0 ? q0 : 1 - q0;
			const uint64_t off = grid + (uint64_t(ch) * 2 + q) * real;
			const uint64_t nelem = off < bytes ? std::min(real, bytes - off) : 0;
			// primitives.h: slices of at least stepSize x sliceSteps / 32,
			// SlicePerChunk of them, the empty ones sent too.
			uint64_t slice = nelem;
			if (s.slices > 1)
				slice = std::max(div_up(nelem, 16ull * s.slices) * 16, s.slot_bytes / 32);
			uint64_t done = 0;
			for (uint32_t i = 0; i < s.slices; i++) {
				const uint64_t n = std::min(slice, nelem - done);
				NcclMsg m{};
				m.step = step;
				m.loop = (uint32_t)l;
				m.data_off = off + done;
				m.data_len = n;
				m.wire_len = div_up(n * s.wire_num, s.wire_den);
				if (p == NcclProto::kLl)
					m.wire_len = div_up(n, 8) * 16;
				else if (p == NcclProto::kLl128)
					m.wire_len = div_up(n, 120) * 128;
				out.push_back(m);
				done += n;
			}
		}
	}
	return out;
}

namespace {

// ---- a socket between the two ranks (NCCL's bootstrap) --------------------

void write_all(int fd, const void *p, size_t n)
{
	const char *c = static_cast<const char *>(p);
	while (n) {
		ssize_t r = write(fd, c, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			throw Error(std::string("--nccl: the other rank is gone (write: ") +
				    strerror(errno) + ")");
		c += r;
		n -= (size_t)r;
	}
}

void read_all(int fd, void *p, size_t n)
{
	char *c = static_cast<char *>(p);
	while (n) {
		ssize_t r = read(fd, c, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			throw Error("--nccl: the other rank is gone");
		c += r;
		n -= (size_t)r;
	}
}

template <typename T> void send(int fd, const T &v) { write_all(fd, &v, sizeof(v)); }
template <typename T> T recv(int fd)
{
	T v;
	read_all(fd, &v, sizeof(v));
	return v;
}

// ---- the plugin ------------------------------------------------------------

bool g_log_info = false;

__attribute__((format(printf, 5, 6))) void logger(ncclDebugLogLevel level,
						  unsigned long, const char *, int,
						  const char *fmt, ...)
{
	if (level != NCCL_LOG_WARN && level != NCCL_LOG_ABORT && !g_log_info)
		return;
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fprintf(stderr, "[nccl rank %d] %s\n", getpid(), buf);
}

void check_nccl(ncclResult_t r, const char *what)
{
	if (r != ncclSuccess)
		throw Error(std::string("--nccl: the plugin's ") + what + " failed (ncclResult " +
			    std::to_string((int)r) + ")");
}

struct Buffer {
	void *p = nullptr;
	size_t n = 0;
	explicit Buffer(size_t len) : n(std::max<size_t>(len, 4096))
	{
		p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			throw Error("--nccl: out of memory");
		memset(p, 0, n);
	}
	~Buffer() { munmap(p, n); }
	char *c() const { return static_cast<char *>(p); }
};

uint32_t pattern(uint32_t rank, uint64_t i)
{
	return (uint32_t)((i * 2654435761u) ^ ((rank + 1) * 0x9e3779b9u)) & 0x3fffffffu;
}

struct Channel {
	void *lc = nullptr, *sc = nullptr, *rc = nullptr;
	std::unique_ptr<Buffer> sbuf, rbuf;	// NCCL's host staging buffers
	void *smh = nullptr, *rmh = nullptr;
	// one all_reduce
	std::vector<NcclMsg> sends, recvs;
	size_t s_tx = 0, s_done = 0, r_posted = 0, r_recv = 0, r_free = 0;
	std::vector<char> consumed;
	void *sreq[kNcclSteps] = {}, *rreq[kNcclSteps] = {};
};

struct Counters {
	uint64_t tests = 0, isend_null = 0, irecv_null = 0, passes = 0, yields = 0;
};

class Rank {
public:
	Rank(const Options &opt, uint32_t rank, int fd) : opt_(opt), rank_(rank), fd_(fd) {}
	~Rank() { close(); }
	void setup(const std::string &plugin);
	// One size: returns the slower rank's mean and this rank's p50 (rank 0).
	void run_size(uint64_t bytes, nlohmann::json *row);
	const ncclNetProperties_v11_t &props() const { return props_; }

private:
	void run_ops(uint64_t ops, bool verify, std::vector<uint64_t> *ends);
	void prepare(Channel &c, size_t k, bool verify);
	bool check(Channel &c, size_t k);
	void close();

	const Options &opt_;
	uint32_t rank_;
	int fd_;
	void *so_ = nullptr;
	const ncclNet_v11_t *net_ = nullptr;
	void *ctx_ = nullptr;
	ncclNetProperties_v11_t props_{};
	std::vector<Channel> ch_;
	NcclShape shape_{};
	std::unique_ptr<Buffer> input_;
	uint64_t max_bytes_ = 0;
	Counters cnt_;
	bool bad_ = false;
};

void Rank::setup(const std::string &plugin)
{
	so_ = dlopen(plugin.c_str(), RTLD_NOW | RTLD_LOCAL);
	if (!so_)
		throw Error("--nccl: cannot load the plugin " + plugin + ": " + dlerror() +
			    " (--plugin PATH)");
	net_ = static_cast<const ncclNet_v11_t *>(dlsym(so_, "ncclNetPlugin_v11"));
	if (!net_)
		throw Error("--nccl: " + plugin + " has no ncclNetPlugin_v11");
	ncclNetCommConfig_v11_t cfg{-1};
	check_nccl(net_->init(&ctx_, 0x74623570, &cfg, logger, nullptr), "init");
	int ndev = 0;
	check_nccl(net_->devices(&ndev), "devices");
	if (ndev < 1)
		throw Error("--nccl: the plugin has no device");
	check_nccl(net_->getProperties(0, &props_), "getProperties");

	const uint32_t nch = opt_.nccl_channels;
	shape_ = nccl_shape_of(static_cast<NcclProto>(opt_.nccl_proto));
	ch_.resize(nch);
	std::vector<char> handles(nch * NCCL_NET_HANDLE_MAXSIZE), peer(handles.size());
	for (uint32_t c = 0; c < nch; c++)
		check_nccl(net_->listen(ctx_, 0, &handles[c * NCCL_NET_HANDLE_MAXSIZE], &ch_[c].lc),
			  "listen");
	write_all(fd_, handles.data(), handles.size());
	read_all(fd_, peer.data(), peer.size());
	const uint64_t t0 = now_ns();
	for (;;) {
		bool all = true;
		for (uint32_t c = 0; c < nch; c++) {
			ncclNetDeviceHandle_v11_t *dh = nullptr;
			if (!ch_[c].sc)
				check_nccl(net_->connect(ctx_, 0, &peer[c * NCCL_NET_HANDLE_MAXSIZE],
							&ch_[c].sc, &dh), "connect");
			if (!ch_[c].rc)
				check_nccl(net_->accept(ch_[c].lc, &ch_[c].rc, &dh), "accept");
			all &= ch_[c].sc && ch_[c].rc;
		}
		if (all)
			break;
		if (stop_requested())
			throw Interrupted();
		if (now_ns() - t0 > (uint64_t)(opt_.timeout_s * 1e9))
			throw Error("--nccl: no connection within --timeout");
		sched_yield();
	}
	const size_t buf = shape_.slot_bytes * shape_.depth;
	for (auto &c : ch_) {
		c.sbuf = std::make_unique<Buffer>(buf);
		c.rbuf = std::make_unique<Buffer>(buf);
		check_nccl(net_->regMr(c.sc, c.sbuf->p, c.sbuf->n, NCCL_PTR_HOST, &c.smh), "regMr");
		check_nccl(net_->regMr(c.rc, c.rbuf->p, c.rbuf->n, NCCL_PTR_HOST, &c.rmh), "regMr");
	}
	for (uint64_t s : opt_.bw_sizes)
		max_bytes_ = std::max(max_bytes_, s);
	if (opt_.verify) {
		input_ = std::make_unique<Buffer>(max_bytes_);
		auto *in = reinterpret_cast<uint32_t *>(input_->p);
		for (uint64_t i = 0; i < max_bytes_ / 4; i++)
			in[i] = pattern(rank_, i);
	}
}

void Rank::close()
{
	if (!net_)
		return;
	for (auto &c : ch_) {
		if (c.smh)
			net_->deregMr(c.sc, c.smh);
		if (c.rmh)
			net_->deregMr(c.rc, c.rmh);
		if (c.sc)
			net_->closeSend(c.sc);
		if (c.rc)
			net_->closeRecv(c.rc);
		if (c.lc)
			net_->closeListen(c.lc);
	}
	ch_.clear();
	net_->finalize(ctx_);
	net_ = nullptr;
	// The plugin stays loaded: its links are closed; NCCL may unload it.
}

// The "GPU" fills send slot k (k counts messages over the whole stream of
// all_reduces): own data (step 0) or own + the peer's step-0 slice just
// received (step 1, the reduction).
void Rank::prepare(Channel &c, size_t k, bool verify)
{
	const size_t per_op = c.sends.size();
	const NcclMsg &m = c.sends[k % per_op];
	char *slot = c.sbuf->c() + (k % shape_.depth) * shape_.slot_bytes;
	if (m.step == 1) {
		// The step-0 slice this one reduces: consumed now, its slot freed.
		const size_t j = k - shape_.slices;
		if (verify) {
			const char *in = c.rbuf->c() + (j % shape_.depth) * shape_.slot_bytes;
			auto *o = reinterpret_cast<uint32_t *>(slot);
			auto *a = reinterpret_cast<const uint32_t *>(input_->c() + m.data_off);
			auto *b = reinterpret_cast<const uint32_t *>(in);
			for (uint64_t i = 0; i < m.data_len / 4; i++)
				o[i] = a[i] + b[i];
		}
		c.consumed[j] = 1;
	} else if (verify) {
		memcpy(slot, input_->c() + m.data_off, m.data_len);
	}
	while (c.r_free < c.consumed.size() && c.consumed[c.r_free])
		c.r_free++;
}

// Received message k: the peer's own data (step 0) or the final sum.
bool Rank::check(Channel &c, size_t k)
{
	const NcclMsg &m = c.recvs[k % c.recvs.size()];
	auto *got = reinterpret_cast<const uint32_t *>(c.rbuf->c() + (k % shape_.depth) *
								   shape_.slot_bytes);
	const uint64_t e0 = m.data_off / 4;
	for (uint64_t i = 0; i < m.data_len / 4; i++) {
		uint32_t want = m.step == 0 ? pattern(1 - rank_, e0 + i) :
					      pattern(0, e0 + i) + pattern(1, e0 + i);
		if (got[i] != want) {
			fprintf(stderr, "tb5-perf --nccl: rank %u: wrong data at byte %" PRIu64
				" of the all_reduce (step %u): %#x, wanted %#x\n", rank_,
				m.data_off + i * 4, m.step, got[i], want);
			return false;
		}
	}
	return true;
}

// @ops all_reduces back to back, as an application enqueues them on one
// stream: the kernel of one starts when the one before has ended on this
// rank (its last receive consumed, its last send written), while the
// proxy's receives run ahead into the next one's slots as soon as they
// are free, as NCCL's step counters run on from op to op. @ends gets each
// op's end time.
void Rank::run_ops(uint64_t ops, bool verify, std::vector<uint64_t> *ends)
{
	const uint32_t depth = shape_.depth;
	const int peer_tag = (int)(1 - rank_), my_tag = (int)rank_;
	const size_t per_op = ch_[0].sends.size();
	const size_t total = per_op * ops;
	for (auto &c : ch_) {
		c.s_tx = c.s_done = c.r_posted = c.r_recv = c.r_free = 0;
		c.consumed.assign(total, 0);
	}
	ends->clear();
	uint64_t ended = 0;	// ops whose kernel has ended here
	const uint64_t t0 = now_ns();
	uint64_t last = t0;
	uint32_t append = 0;
	for (;;) {
		bool idle = true, all = true;
		// sendProxyProgress: one action per connection per pass.
		for (auto &c : ch_) {
			if (c.s_done == total)
				continue;
			all = false;
			const size_t k = c.s_tx;
			const NcclMsg *m = k < total ? &c.sends[k % per_op] : nullptr;
			if (m && k < c.s_done + depth && k / per_op <= ended &&
			    (m->step == 0 || c.r_recv > k - shape_.slices)) {
				// The GPU has filled slot k: post it.
				void *req = nullptr;
				char *slot = c.sbuf->c() + (k % depth) * shape_.slot_bytes;
				if (m->step == 0 || !c.consumed[k - shape_.slices])
					prepare(c, k, verify);
				check_nccl(net_->isend(c.sc, slot, m->wire_len, my_tag, c.smh,
						      nullptr, &req), "isend");
				if (req) {
					c.sreq[k % depth] = req;
					c.s_tx++;
					idle = false;
					continue;
				}
				cnt_.isend_null++;
			}
			if (c.s_done < c.s_tx) {
				int done = 0, size = 0;
				cnt_.tests++;
				check_nccl(net_->test(c.sreq[c.s_done % depth], &done, &size), "test");
				if (done) {
					c.s_done++;
					idle = false;
				}
			}
		}
		// recvProxyProgress: post what can be posted; else test.
		bool posted = false;
		for (auto &c : ch_) {
			if (c.r_recv < total)
				all = false;
			if (c.r_posted < total && c.r_posted < c.r_free + depth) {
				const size_t k = c.r_posted;
				void *data = c.rbuf->c() + (k % depth) * shape_.slot_bytes;
				size_t size = shape_.slot_bytes;
				int tag = peer_tag;
				void *req = nullptr;
				void *ph = nullptr;
				check_nccl(net_->irecv(c.rc, 1, &data, &size, &tag, &c.rmh, &ph, &req),
					  "irecv");
				if (req) {
					c.rreq[k % depth] = req;
					c.r_posted++;
					posted = true;
				} else {
					cnt_.irecv_null++;
				}
			}
		}
		if (posted) {
			idle = false;
		} else {
			for (auto &c : ch_) {
				if (c.r_recv >= c.r_posted)
					continue;
				const size_t k = c.r_recv;
				const NcclMsg &m = c.recvs[k % per_op];
				int done = 0, sizes[8] = {};
				cnt_.tests++;
				check_nccl(net_->test(c.rreq[k % depth], &done, sizes), "test");
				if (!done)
					continue;
				idle = false;
				if ((uint64_t)sizes[0] != m.wire_len) {
					fprintf(stderr, "tb5-perf --nccl: rank %u: received %d bytes, "
						"wanted %" PRIu64 "\n", rank_, sizes[0], m.wire_len);
					bad_ = true;
				}
				if (verify && !check(c, k))
					bad_ = true;
				c.r_recv++;
				check_nccl(net_->irecvConsumed(c.rc, 1, c.rreq[k % depth]),
					  "irecvConsumed");
				// The final slices are consumed at once (recvCopy).
				if (m.step == 1)
					c.consumed[k] = 1;
				while (c.r_free < total && c.consumed[c.r_free])
					c.r_free++;
			}
		}
		// The kernel of op `ended` ends once every channel has received
		// and written all of it.
		while (ended < ops) {
			const size_t end = (ended + 1) * per_op;
			bool done = true;
			for (auto &c : ch_)
				done &= c.r_recv >= end && c.s_tx >= end;
			if (!done)
				break;
			ended++;
			const uint64_t now = now_ns();
			ends->push_back(now - last);
			last = now;
		}
		if (all)
			break;
		cnt_.passes++;
		// progress(): an idle pass, and every 8th, look for new ops
		// and yield when none came (proxy.cc).
		if (idle || ++append == 8) {
			append = 0;
			cnt_.yields++;
			sched_yield();
		}
		if ((cnt_.passes & 0xfff) == 0) {
			if (stop_requested())
				throw Interrupted();
			if (now_ns() - last > (uint64_t)(opt_.timeout_s * 1e9))
				throw Error("--nccl: an all_reduce made no progress within --timeout");
		}
	}
}

void Rank::run_size(uint64_t bytes, nlohmann::json *row)
{
	const auto p = static_cast<NcclProto>(opt_.nccl_proto);
	const uint32_t nch = (uint32_t)ch_.size();
	for (uint32_t c = 0; c < nch; c++) {
		ch_[c].sends = nccl_messages(p, bytes, nch, c, rank_);
		ch_[c].recvs = nccl_messages(p, bytes, nch, c, 1 - rank_);
	}
	// Agree on the count: rank 0 times the warm-up.
	send(fd_, uint8_t{1});
	(void)recv<uint8_t>(fd_);
	const uint64_t warm = opt_.warmup >= 0 ? (uint64_t)opt_.warmup : 3;
	std::vector<uint64_t> t;
	const uint64_t w0 = now_ns();
	if (warm)
		run_ops(warm, opt_.verify, &t);
	uint64_t iters = opt_.iters;
	if (rank_ == 0) {
		if (!iters) {
			const double per = warm ? (double)(now_ns() - w0) / (double)warm : 1e5;
			iters = (uint64_t)std::clamp(opt_.duration_s * 1e9 / std::max(per, 1.0),
						     (double)opt_.min_iters, 1e6);
		}
		send(fd_, iters);
	} else {
		iters = recv<uint64_t>(fd_);
	}
	send(fd_, uint8_t{1});
	(void)recv<uint8_t>(fd_);
	cnt_ = Counters{};
	const uint64_t c0 = process_cpu_ns();
	const uint64_t s0 = now_ns();
	run_ops(iters, opt_.verify, &t);
	const uint64_t total = now_ns() - s0;
	const uint64_t cpu = process_cpu_ns() - c0;
	std::sort(t.begin(), t.end());
	const uint64_t p50 = t.empty() ? 0 : t[t.size() / 2];
	struct Result {
		uint64_t total, p50, cpu, tests, isend_null, irecv_null;
		uint8_t bad;
	} mine{total, p50, cpu, cnt_.tests, cnt_.isend_null, cnt_.irecv_null, bad_};
	if (rank_ == 1) {
		send(fd_, mine);
		bad_ = false;
		return;
	}
	const Result other = recv<Result>(fd_);
	const uint64_t slow = std::max(total, other.total);
	const double mean_us = (double)slow / (double)iters / 1e3;
	const double p50_us = (double)std::max(p50, other.p50) / 1e3;
	uint64_t wire = 0, max_msg = 0;
	for (auto &c : ch_)
		for (auto &m : c.sends) {
			wire += m.wire_len;
			max_msg = std::max(max_msg, m.wire_len);
		}
	size_t msgs = 0;
	for (auto &c : ch_)
		msgs += c.sends.size();
	auto &r = *row;
	r["test"] = "nccl-allreduce";
	r["size"] = bytes;
	r["proto"] = proto_name(p);
	r["channels"] = nch;
	r["msgs_per_op"] = msgs;
	r["msg_bytes_max"] = max_msg;
	r["wire_bytes_per_op"] = wire;
	r["iters"] = iters;
	r["time_us"] = mean_us;
	r["time_us_p50"] = p50_us;
	// nccl-tests' bus bandwidth: 2(n-1)/n x size / time, n = 2.
	r["busbw_gbps"] = (double)bytes / (mean_us * 1e3);
	r["tests_per_op"] = (double)(cnt_.tests + other.tests) / 2.0 / (double)iters;
	r["null_requests"] = cnt_.isend_null + cnt_.irecv_null + other.isend_null +
			     other.irecv_null;
	r["cpu_cores"] = (double)(cpu + other.cpu) / (double)slow;
	// CPU time both processes spent per all_reduce: on a machine shared
	// with other work, the figure that does not depend on the share.
	r["cpu_us_per_op"] = (double)(cpu + other.cpu) / (double)iters / 1e3;
	r["verified"] = opt_.verify && !bad_ && !other.bad;
	if (bad_ || other.bad)
		r["failed"] = true;
	bad_ = false;
}

double rate_gbps(const std::string &sim_options)
{
	size_t at = 0;
	while (at < sim_options.size()) {
		size_t end = sim_options.find(',', at);
		if (end == std::string::npos)
			end = sim_options.size();
		const std::string kv = sim_options.substr(at, end - at);
		if (kv.rfind("rate=", 0) == 0)
			return atof(kv.c_str() + 5);
		at = end + 1;
	}
	return 0;
}

// TB5_SIM for rank @host of the two.
void join_fabric(const std::string &fabric, const Options &opt, uint32_t host)
{
	set_sim(sim_spec(fabric, opt, "hosts=2,host=" + std::to_string(host) + ",loop=0"));
}

int run_rank1(const Options &opt, int fd)
{
	try {
		Rank r(opt, 1, fd);
		r.setup(opt.plugin);
		for (uint64_t s : opt.bw_sizes)
			r.run_size(s, nullptr);
		send(fd, uint8_t{2});
		(void)recv<uint8_t>(fd);
		return kExitOk;
	} catch (const Interrupted &) {
		return kExitFailed;
	} catch (const std::exception &e) {
		fprintf(stderr, "tb5-perf --nccl: rank 1: %s\n", e.what());
		return kExitFailed;
	}
}

std::string human(uint64_t n)
{
	char b[32];
	if (n >= (1ull << 30) && n % (1ull << 30) == 0)
		snprintf(b, sizeof(b), "%" PRIu64 "G", n >> 30);
	else if (n >= (1ull << 20) && n % (1ull << 20) == 0)
		snprintf(b, sizeof(b), "%" PRIu64 "M", n >> 20);
	else if (n >= 1024 && n % 1024 == 0)
		snprintf(b, sizeof(b), "%" PRIu64 "K", n >> 10);
	else
		snprintf(b, sizeof(b), "%" PRIu64, n);
	return b;
}

} // namespace

int run_nccl(const Options &opt)
{
	g_log_info = getenv("TB5_PERF_NCCL_LOG") != nullptr;
	const std::string fabric = unique_fabric("tb5nccl");
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		throw Error(std::string("socketpair: ") + strerror(errno));
	fflush(nullptr);
	const pid_t pid = fork_child();
	if (pid == 0) {
		close(sv[0]);
		join_fabric(fabric, opt, 1);
		// exit(), not _exit(): the plugin's trace is written at exit.
		exit(run_rank1(opt, sv[1]));
	}
	close(sv[1]);
	struct Reaper {
		pid_t pid;
		int fd;
		int status = -1;
		~Reaper()
		{
			close(fd);
			if (status >= 0)
				return;
			kill(pid, SIGTERM);
			int st;
			waitpid(pid, &st, 0);
		}
	} child{pid, sv[0]};

	join_fabric(fabric, opt, 0);
	const double rate = rate_gbps(opt.sim_options);
	nlohmann::json doc;
	doc["tool"] = "tb5-perf";
	doc["version"] = TB5_PERF_VERSION;
	doc["mode"] = "nccl";
	doc["command"] = opt.command;
	doc["plugin"] = opt.plugin;
	doc["sim"] = getenv("TB5_SIM");
	doc["rows"] = nlohmann::json::array();
	FILE *table = opt.format == Format::kJson && opt.output.empty() ? stderr : stdout;
	bool failed = false;
	{
		Rank r(opt, 0, sv[0]);
		r.setup(opt.plugin);
		const auto &pp = r.props();
		doc["properties"] = {{"name", pp.name ? pp.name : ""},
				     {"speed_mbps", pp.speed},
				     {"latency_us", pp.latency},
				     {"max_recvs", pp.maxRecvs},
				     {"max_p2p_bytes", pp.maxP2pBytes}};
		if (!opt.quiet) {
			fprintf(table, "# tb5-perf --nccl: 2-rank ring all_reduce as NCCL 2.28's "
				"proxy moves it, %u channel%s, %s protocol, plugin %s\n",
				opt.nccl_channels, opt.nccl_channels == 1 ? "" : "s",
				proto_name(static_cast<NcclProto>(opt.nccl_proto)),
				opt.plugin.c_str());
			fprintf(table, "# device %s: speed %d Mb/s, latency %.1f us, maxRecvs %d; "
				"line %s\n", pp.name ? pp.name : "?", pp.speed, pp.latency,
				pp.maxRecvs,
				rate > 0 ? (std::to_string(rate / 8).substr(0, 5) + " GB/s (rate=" +
					    std::to_string((int)rate) + ")").c_str() :
					   "- (no rate=)");
			fprintf(table, "%10s %6s %5s %9s %10s %10s %10s %9s %8s %8s %6s %10s %5s\n",
				"size", "msgs", "iters", "msg max", "time us", "p50 us",
				"busbw GB/s", "line us", "x line", "tests/op", "cores",
				"cpu us/op", "ok");
		}
		for (uint64_t s : opt.bw_sizes) {
			nlohmann::json row;
			r.run_size(s, &row);
			double line_us = 0;
			if (rate > 0) {
				// Each rank sends its wire bytes one way (2 ranks);
				// a DATA header per 64 KiB and a CTS are left out.
				line_us = (double)row["wire_bytes_per_op"].get<uint64_t>() * 8 /
					  (rate * 1e3);
				row["line_gbps"] = rate / 8;
				row["line_time_us"] = line_us;
				row["x_line"] = row["time_us"].get<double>() / line_us;
			}
			const bool ok = !row.contains("failed");
			failed |= !ok;
			if (!opt.quiet) {
				char lt[32] = "-", xl[32] = "-";
				if (line_us > 0) {
					snprintf(lt, sizeof(lt), "%.1f", line_us);
					snprintf(xl, sizeof(xl), "%.2f",
						 row["x_line"].get<double>());
				}
				fprintf(table, "%10s %6zu %5" PRIu64 " %9s %10.1f %10.1f %10.2f %9s "
					"%8s %8.1f %6.2f %10.1f %5s\n", human(s).c_str(),
					row["msgs_per_op"].get<size_t>(),
					row["iters"].get<uint64_t>(),
					human(row["msg_bytes_max"].get<uint64_t>()).c_str(),
					row["time_us"].get<double>(), row["time_us_p50"].get<double>(),
					row["busbw_gbps"].get<double>(), lt, xl,
					row["tests_per_op"].get<double>(),
					row["cpu_cores"].get<double>(),
					row["cpu_us_per_op"].get<double>(),
					!ok ? "FAIL" : opt.verify ? "yes" : "-");
				fflush(table);
			}
			doc["rows"].push_back(row);
		}
		(void)recv<uint8_t>(sv[0]);
		send(sv[0], uint8_t{2});
	}
	int st = 0;
	if (waitpid(pid, &st, 0) == pid)
		child.status = st;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		throw Error("--nccl: rank 1 failed");
	if (opt.format == Format::kJson)
		emit_document(opt.output, doc.dump(1) + "\n");
	if (failed) {
		fprintf(stderr, "tb5-perf --nccl: data verification failed\n");
		return kExitFailed;
	}
	return kExitOk;
}

} // namespace tb5perf
