// SPDX-License-Identifier: MIT
//
// test_plugin_abi.cc - the NCCL plugin's ABI harness: dlopen the built
// libnccl-net-tb5.so and drive every exported version (v7 .. v12) the way
// NCCL's proxy thread does: connect/accept called until they hand back a
// comm, isend/irecv retried while they return a NULL request, test() polled
// until done. Two ranks talk over the simulator (both in one process, each
// on a thread of its own, and in two processes) or, with
// TB5_PLUGIN_TEST_BACKEND=kernel, over the tb5 module's loop pairs (the VM).
//
// With TB5_PLUGIN_TEST_REMOTE=a|b and TB5_PLUGIN_TEST_OOB=<line> the same
// tests run split across two hosts (or two simulator hosts): each host runs
// the whole suite, holds one rank of every pair (a receives, b sends) and
// does only that rank's part of each test, the two meeting over the line
// where NCCL's bootstrap would carry a handle or a barrier. That is how the
// emulated fabric runs them over real tb links (tests/kernel/
// vm-tests-fabric.sh) and tests/plugin/run-split.sh over the simulator.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "live_counters.hpp"
#include "nccl_net_abi.h"
#include "nccl_topo_model.hpp"
#include "oob_channel.hpp"
#include "plugin_api.hpp"
#include "sim/standin_mem.hpp"

using namespace tb5plugintest;

namespace {

using Clock = std::chrono::steady_clock;

// This host's rank ('a' or 'b') when the tests run split across two hosts,
// 0 when both ranks are in this process.
char RemoteRole()
{
	const char *r = std::getenv("TB5_PLUGIN_TEST_REMOTE");
	return r && (std::string(r) == "a" || std::string(r) == "b") ? r[0] : 0;
}

// The line to the other host, opened and handshaken once (nullptr if not).
LineChannel *RemoteLine()
{
	static LineChannel *line = nullptr;
	static bool tried = false;
	if (!tried) {
		tried = true;
		const char *oob = std::getenv("TB5_PLUGIN_TEST_OOB");
		LineChannel *l = oob ? LineChannel::Get(oob, std::string(1, RemoteRole())) : nullptr;
		// The other host may still be booting or finishing its last step.
		if (l && l->Handshake(600))
			line = l;
	}
	return line;
}

// How long a step may take: the split hosts run under emulation, where a
// long wait is not a failure.
double TimeoutS() { return RemoteRole() ? 300 : 30; }

// TB5_PLUGIN_TEST_MAX_MIB caps message sizes (the VM has little memory and
// emulated CPUs), default @dflt MiB; in bytes.
size_t CapBytes(unsigned long dflt)
{
	const char *cap_mib = std::getenv("TB5_PLUGIN_TEST_MAX_MIB");
	return (size_t)(cap_mib ? std::strtoul(cap_mib, nullptr, 10) : dflt) << 20;
}

// How the plugin's messages name host @id called @name: "host 0x...
// (<name>)", the name's characters other than letters, digits and "-._"
// as '?'; "host 0x..." when it has none.
std::string HostLabel(uint64_t id, const std::string &name)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "host %#llx", (unsigned long long)id);
	std::string shown;
	for (char ch : name)
		shown += isalnum((unsigned char)ch) || ch == '-' || ch == '.' || ch == '_' ? ch : '?';
	return shown.empty() ? std::string(buf) : std::string(buf) + " (" + shown + ")";
}

// This machine's host name, "" when it has none.
std::string ThisHostName()
{
	char name[256] = {};
	return gethostname(name, sizeof(name) - 1) == 0 ? std::string(name) : std::string();
}

std::string TestName()
{
	const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
	return info ? std::string(info->test_suite_name()) + "." + info->name() : "?";
}

bool KernelBackend()
{
	const char *b = std::getenv("TB5_PLUGIN_TEST_BACKEND");
	return b && std::string(b) == "kernel";
}

// A fabric of this test's own (TB5_SIM), unless the kernel backend is asked
// for or the tests run split (then the fabric is the two hosts').
void UseFabric(const std::string &opts)
{
	if (KernelBackend() || RemoteRole())
		return;
	const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
	std::string name = "plg" + std::to_string(getpid()) + "-" +
			   (info ? std::string(info->name()) : std::string("x"));
	std::replace_if(name.begin(), name.end(),
			[](char c) { return !isalnum((unsigned char)c) && c != '-'; }, '-');
	name.resize(std::min<size_t>(name.size(), 60));
	setenv("TB5_SIM", (name + ":" + opts).c_str(), 1);
}

// Live-counter files go to a directory of the test's own.
std::string UseLiveDir()
{
	char tmpl[] = "/tmp/tb5-plugin-live-XXXXXX";
	const char *dir = mkdtemp(tmpl);
	if (!dir)
		return {};
	setenv("TB5_LIVE_DIR", dir, 1);
	return dir;
}

void Fill(uint8_t *p, size_t n, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 1;
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		p[i] = (uint8_t)x;
	}
}

// Index of the first byte off the pattern, or -1.
long long Check(const uint8_t *p, size_t n, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 1;
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		if (p[i] != (uint8_t)x)
			return (long long)i;
	}
	return -1;
}

// Host memory as NCCL has it: page-aligned, registered once.
struct Buffer {
	uint8_t *p = nullptr;
	size_t len = 0;
	explicit Buffer(size_t n) : len(n)
	{
		p = static_cast<uint8_t *>(mmap(nullptr, n, PROT_READ | PROT_WRITE,
						MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
		if (p == MAP_FAILED)
			p = nullptr;
	}
	~Buffer()
	{
		if (p)
			munmap(p, len);
	}
};

// Stand-in "device memory" (sim/standin_mem.hpp), with its dma-buf.
struct DevMem {
	uint8_t *p = nullptr;
	size_t len = 0;
	int fd = -1;
	explicit DevMem(size_t n) : len(n)
	{
		p = static_cast<uint8_t *>(tb5::sim::standin_alloc(n, &fd));
	}
	~DevMem()
	{
		if (p)
			tb5::sim::standin_free(p, len, fd);
	}
};

// One rank's side of a connection pair.
struct Rank {
	char side = 0;		// 'a' or 'b' when split across hosts
	Api *api = nullptr;
	void *ctx = nullptr;
	void *lc = nullptr;
	void *sc = nullptr;
	void *rc = nullptr;
	// This rank lives in this process (always, unless split).
	bool here() const { return !RemoteRole() || side == RemoteRole(); }
};

bool Expired(Clock::time_point t0) { return Clock::now() - t0 > std::chrono::duration<double>(TimeoutS()); }

// connect() and accept() until both hand back comms, as NCCL's proxy does
// (each rank that is here).
// The plugin's last log lines, for a failure's message.
std::string LastLog(size_t n = 6)
{
	auto lines = LogLines();
	std::string out;
	for (size_t i = lines.size() > n ? lines.size() - n : 0; i < lines.size(); i++)
		out += "\n  plugin: " + lines[i];
	return out;
}

::testing::AssertionResult Establish(Rank &sender, int send_dev, void *handle, Rank &receiver)
{
	auto t0 = Clock::now();
	while ((sender.here() && !sender.sc) || (receiver.here() && !receiver.rc)) {
		if (sender.here() && !sender.sc) {
			ncclResult_t r = sender.api->Connect(sender.ctx, send_dev, handle, &sender.sc);
			if (r != ncclSuccess)
				return ::testing::AssertionFailure() << "connect: " << r << LastLog();
		}
		if (receiver.here() && !receiver.rc) {
			ncclResult_t r = receiver.api->Accept(receiver.lc, &receiver.rc);
			if (r != ncclSuccess)
				return ::testing::AssertionFailure() << "accept: " << r << LastLog();
		}
		if (Expired(t0))
			return ::testing::AssertionFailure() << "no connection in " << TimeoutS() << " s"
							     << LastLog();
	}
	return ::testing::AssertionSuccess();
}

// isend/irecv until the plugin takes it.
void *Post(const std::function<ncclResult_t(void **)> &post)
{
	void *req = nullptr;
	auto t0 = Clock::now();
	while (!req) {
		ncclResult_t r = post(&req);
		EXPECT_EQ(r, ncclSuccess);
		if (r != ncclSuccess || Expired(t0))
			return nullptr;
	}
	return req;
}

// test() until done; the result of the final call.
ncclResult_t Wait(Api *api, void *req, int *sizes, const std::function<void()> &also = {})
{
	int done = 0;
	auto t0 = Clock::now();
	for (;;) {
		ncclResult_t r = api->Test(req, &done, sizes);
		if (r != ncclSuccess || done)
			return r;
		if (also)
			also();
		if (Expired(t0)) {
			ADD_FAILURE() << "request not done in " << TimeoutS() << " s";
			return ncclInternalError;
		}
	}
}

class PluginVersion : public ::testing::TestWithParam<int> {
protected:
	std::unique_ptr<Library> lib;
	std::unique_ptr<Api> api;
	void *ctx = nullptr;
	int ndev = 0;
	std::string live_dir;
	LineChannel *line = nullptr;	// to the other host, when split

	void Load()
	{
		std::string why;
		lib = Library::Open(PluginPath(), &why);
		ASSERT_TRUE(lib) << PluginPath() << ": " << why;
		api = lib->Get(GetParam());
		ASSERT_TRUE(api) << "ncclNetPlugin_v" << GetParam() << " missing";
		ASSERT_EQ(api->Init(&ctx), ncclSuccess);
		ASSERT_EQ(api->Devices(&ndev), ncclSuccess);
		// Split, one device is enough: a link to the other host.
		ASSERT_GE(ndev, RemoteRole() ? 1 : 2) << "expected the two ends of a loop pair";
	}

	void Unload()
	{
		if (api) {
			EXPECT_EQ(api->Finalize(ctx), ncclSuccess);
		}
		api.reset();
		lib.reset();
	}

	void SetUp() override
	{
		// Host memory only, with or without CUDA on the machine
		// (PluginGpu below has the stand-in engine).
		UseFabric("hosts=1,loop=1,dma=off");
		live_dir = UseLiveDir();
		ClearLog();
		if (RemoteRole()) {
			line = RemoteLine();
			ASSERT_TRUE(line) << "no answer from the other host over TB5_PLUGIN_TEST_OOB";
			ASSERT_TRUE(line->Sync("begin " + TestName(), true, 600))
				<< "the other host did not begin " << TestName();
		}
		Load();
	}

	void TearDown() override
	{
		// The other host is done with this test (or gave up) before
		// this one finalizes: no connection is torn down under it.
		if (line) {
			EXPECT_TRUE(line->Sync("end " + TestName(), true, 600))
				<< "the other host did not end " << TestName();
		}
		Unload();
		if (!live_dir.empty())
			(void)!system(("rm -rf '" + live_dir + "'").c_str());
	}

	// Split: both hosts reach the point named @what of this test.
	void Meet(const std::string &what)
	{
		if (line) {
			ASSERT_TRUE(line->Sync(what + " " + TestName(), false, TimeoutS()))
				<< "the other host did not reach '" << what << "'";
		}
	}

	// Split: the handle from the rank that listened to the one that
	// connects (NCCL's bootstrap).
	void PassHandle(bool from_here, char *handle)
	{
		if (!line)
			return;
		if (from_here) {
			ASSERT_TRUE(line->Send(handle, NCCL_NET_HANDLE_MAXSIZE));
		} else {
			ASSERT_TRUE(line->Recv(handle, NCCL_NET_HANDLE_MAXSIZE, TimeoutS()))
				<< "no handle from the other host";
		}
	}

	// Rank a listens on device 0; rank b connects through device 1 (any
	// device would do: the plugin takes the link that reaches the host),
	// or, split across hosts, through its own device 0.
	void Pair(Rank &a, Rank &b)
	{
		a.side = 'a';
		b.side = 'b';
		a.api = b.api = api.get();
		a.ctx = b.ctx = ctx;
		char handle[NCCL_NET_HANDLE_MAXSIZE] = {};
		if (a.here()) {
			ASSERT_EQ(api->Listen(ctx, 0, handle, &a.lc), ncclSuccess);
			ASSERT_TRUE(a.lc);
			// Nothing has connected: accept hands back no comm, at once.
			ASSERT_EQ(api->Accept(a.lc, &a.rc), ncclSuccess);
			ASSERT_EQ(a.rc, nullptr);
		}
		ASSERT_NO_FATAL_FAILURE(PassHandle(a.here(), handle));
		ASSERT_TRUE(Establish(b, line ? 0 : 1, handle, a));
		// Split: both ends are connected before either goes on (a
		// receiver that closed at once would fail the sender's connect).
		ASSERT_NO_FATAL_FAILURE(Meet("connected"));
	}

	void ClosePair(Rank &a, Rank &b)
	{
		// Split: neither host closes while the other still works.
		Meet("close");
		if (b.sc) {
			EXPECT_EQ(api->CloseSend(b.sc), ncclSuccess);
		}
		if (a.rc) {
			EXPECT_EQ(api->CloseRecv(a.rc), ncclSuccess);
		}
		if (a.lc) {
			EXPECT_EQ(api->CloseListen(a.lc), ncclSuccess);
		}
		a = b = Rank{};
	}

	// One message of each size from b to a, every byte checked, and the
	// bytes after it in the receive buffer left alone.
	void Transfer(Rank &a, Rank &b, const std::vector<size_t> &sizes)
	{
		size_t max = *std::max_element(sizes.begin(), sizes.end());
		Buffer sbuf(b.here() ? max + 4096 : 4096), rbuf(a.here() ? max + 4096 : 4096);
		ASSERT_TRUE(sbuf.p && rbuf.p);
		void *smh = nullptr, *rmh = nullptr;
		if (b.here()) {
			ASSERT_EQ(api->RegMr(b.sc, sbuf.p, sbuf.len, &smh), ncclSuccess);
		}
		if (a.here()) {
			ASSERT_EQ(api->RegMr(a.rc, rbuf.p, rbuf.len, &rmh), ncclSuccess);
		}
		uint32_t seed = 1;
		for (size_t n : sizes) {
			SCOPED_TRACE("size " + std::to_string(n));
			size_t rsize = n;
			int tag = (int)seed;
			void *rreq = nullptr, *sreq = nullptr;
			if (a.here()) {
				std::memset(rbuf.p, 0xa5, n + 4096);
				rreq = Post([&](void **req) {
					void *d = rbuf.p;
					return api->Irecv(a.rc, 1, &d, &rsize, &tag, &rmh, req);
				});
				ASSERT_TRUE(rreq);
			}
			if (b.here()) {
				Fill(sbuf.p, n, seed);
				sreq = Post([&](void **req) {
					return api->Isend(b.sc, sbuf.p, n, tag, smh, req);
				});
				ASSERT_TRUE(sreq);
				int ssize = -1;
				ASSERT_EQ(Wait(api.get(), sreq, &ssize), ncclSuccess);
			}
			if (a.here()) {
				int rsz = -1;
				ASSERT_EQ(Wait(api.get(), rreq, &rsz), ncclSuccess);
				EXPECT_EQ((size_t)rsz, n);
				EXPECT_EQ(Check(rbuf.p, n, seed), -1);
				for (size_t i = n; i < n + 4096; i++)
					ASSERT_EQ(rbuf.p[i], 0xa5) << "byte " << i << " past the message written";
			}
			seed++;
		}
		if (b.here()) {
			EXPECT_EQ(api->DeregMr(b.sc, smh), ncclSuccess);
		}
		if (a.here()) {
			EXPECT_EQ(api->DeregMr(a.rc, rmh), ncclSuccess);
		}
	}

	// As NCCL with two GPUs in one process: one proxy thread per rank,
	// each rank sending to and receiving from the other at once, @window
	// messages in flight each way (NCCL keeps up to 8 steps), in host
	// memory or (@gpu) the stand-in engine's device memory. Split, one
	// rank (and thread) per host, both on their device 0.
	void TwoRanksOnThreads(bool gpu, int window)
	{
		Rank r0, r1;
		r0.side = 'a';
		r1.side = 'b';
		r0.api = r1.api = api.get();
		r0.ctx = r1.ctx = ctx;
		const int dev0 = 0, dev1 = line ? 0 : 1;
		char h0[NCCL_NET_HANDLE_MAXSIZE] = {}, h1[NCCL_NET_HANDLE_MAXSIZE] = {};
		if (r0.here()) {
			ASSERT_EQ(api->Listen(ctx, dev0, h0, &r0.lc), ncclSuccess);
		}
		if (r1.here()) {
			ASSERT_EQ(api->Listen(ctx, dev1, h1, &r1.lc), ncclSuccess);
		}
		// Split: a's handle to b, then b's to a.
		ASSERT_NO_FATAL_FAILURE(PassHandle(r0.here(), h0));
		ASSERT_NO_FATAL_FAILURE(PassHandle(r1.here(), h1));
		constexpr int kMaxWindow = 8;
		ASSERT_LE(window, kMaxWindow);
		const size_t kMsg = std::min(CapBytes(8), (size_t)8 << 20) / window;
		const size_t kBytes = kMsg * window;
		auto run = [&](Rank &me, int my_dev, char *peer_handle, uint32_t seed_out,
			       uint32_t seed_in, bool *ok) {
			auto t0 = Clock::now();
			while (!me.sc || !me.rc) {
				if (!me.sc && api->Connect(ctx, my_dev, peer_handle, &me.sc) != ncclSuccess)
					return;
				if (!me.rc && api->Accept(me.lc, &me.rc) != ncclSuccess)
					return;
				if (Expired(t0))
					return;
			}
			// Each message in its own slot of the buffers, as NCCL's steps.
			Buffer hs(gpu ? 0 : kBytes), hr(gpu ? 0 : kBytes);
			DevMem gs(gpu ? kBytes : 0), gr(gpu ? kBytes : 0);
			uint8_t *sbuf = gpu ? gs.p : hs.p, *rbuf = gpu ? gr.p : hr.p;
			const int type = gpu ? NCCL_PTR_CUDA : NCCL_PTR_HOST;
			void *smh, *rmh;
			if (!sbuf || !rbuf || api->RegMrType(me.sc, sbuf, kBytes, type, &smh) ||
			    api->RegMrType(me.rc, rbuf, kBytes, type, &rmh))
				return;
			bool good = true;
			for (int it = 0; it < 8 * window && good; it += window) {
				void *rreq[kMaxWindow] = {}, *sreq[kMaxWindow] = {};
				int sdone[kMaxWindow] = {}, rdone[kMaxWindow] = {}, n[kMaxWindow] = {};
				for (int w = 0; w < window; w++) {
					size_t sz = kMsg;
					int tag = it + w;
					void *d = rbuf + w * kMsg;
					while (!rreq[w])
						if (api->Irecv(me.rc, 1, &d, &sz, &tag, &rmh, &rreq[w]))
							return;
				}
				for (int w = 0; w < window; w++) {
					Fill(sbuf + w * kMsg, kMsg, seed_out + it + w);
					while (!sreq[w])
						if (api->Isend(me.sc, sbuf + w * kMsg, kMsg, it + w, smh,
							       &sreq[w]))
							return;
				}
				for (int left = 2 * window; left;) {
					left = 0;
					for (int w = 0; w < window; w++) {
						if (!sdone[w] && api->Test(sreq[w], &sdone[w], nullptr))
							return;
						if (!rdone[w] && api->Test(rreq[w], &rdone[w], &n[w]))
							return;
						left += !sdone[w] + !rdone[w];
					}
					if (Expired(t0))
						return;
				}
				for (int w = 0; w < window; w++)
					good = good && n[w] == (int)kMsg &&
					       Check(rbuf + w * kMsg, kMsg, seed_in + it + w) == -1;
			}
			api->DeregMr(me.sc, smh);
			api->DeregMr(me.rc, rmh);
			*ok = good;
		};
		bool ok0 = false, ok1 = false;
		std::vector<std::thread> threads;
		if (r0.here())
			threads.emplace_back(run, std::ref(r0), dev0, h1, 10, 20, &ok0);
		if (r1.here())
			threads.emplace_back(run, std::ref(r1), dev1, h0, 20, 10, &ok1);
		for (auto &t : threads)
			t.join();
		if (r0.here()) {
			EXPECT_TRUE(ok0);
		}
		if (r1.here()) {
			EXPECT_TRUE(ok1);
		}
		Meet("close");
		for (Rank *r : {&r0, &r1}) {
			if (!r->here())
				continue;
			if (r->sc) {
				EXPECT_EQ(api->CloseSend(r->sc), ncclSuccess);
			}
			if (r->rc) {
				EXPECT_EQ(api->CloseRecv(r->rc), ncclSuccess);
			}
			EXPECT_EQ(api->CloseListen(r->lc), ncclSuccess);
		}
	}
};

// GPU memory as the simulator's stand-in engine has it (TB5_SIM dma=standin:
// memfd-backed "device memory", the memfd playing the dma-buf), or no
// engine at all (dma=off): the simulator's alone.
class PluginGpu : public PluginVersion {
protected:
	virtual const char *Dma() const { return "standin"; }
	void SetUp() override
	{
		if (KernelBackend() || RemoteRole())
			GTEST_SKIP() << "the simulator's stand-in DMA engine";
		UseFabric(std::string("hosts=1,loop=1,dma=") + Dma());
		live_dir = UseLiveDir();
		ClearLog();
		Load();
	}

	// One message of @n bytes from @s (of @smh) on b to @r (of @rmh) on a,
	// both requests tested until done (a send by reference completes only
	// after the receive it feeds), then iflush as NCCL's proxy calls it.
	void Exchange(Rank &a, Rank &b, uint8_t *s, void *smh, uint8_t *r, void *rmh, size_t n,
		      uint32_t seed)
	{
		Fill(s, n, seed);
		std::memset(r, 0xa5, n + 64);
		size_t rsize = n + 64;
		int tag = 7;
		void *data = r;
		void *rreq = Post([&](void **req) {
			return api->Irecv(a.rc, 1, &data, &rsize, &tag, &rmh, req);
		});
		ASSERT_TRUE(rreq);
		void *sreq = Post([&](void **req) { return api->Isend(b.sc, s, n, tag, smh, req); });
		ASSERT_TRUE(sreq);
		int sdone = 0, rdone = 0, ssize = -1, rsz = -1;
		auto t0 = Clock::now();
		while (!sdone || !rdone) {
			if (!sdone) {
				ASSERT_EQ(api->Test(sreq, &sdone, &ssize), ncclSuccess);
			}
			if (!rdone) {
				ASSERT_EQ(api->Test(rreq, &rdone, &rsz), ncclSuccess);
			}
			ASSERT_FALSE(Expired(t0)) << n << " bytes not done" << LastLog();
		}
		EXPECT_EQ((size_t)rsz, n);
		EXPECT_EQ(Check(r, n, seed), -1) << n << " bytes";
		for (size_t i = n; i < n + 64; i++)
			ASSERT_EQ(r[i], 0xa5) << "byte " << i << " past the message written";
		void *freq = &freq;	// iflush: the receive's bytes are in place
		int isz = (int)n;
		ASSERT_EQ(api->Iflush(a.rc, r, isz, rmh, &freq), ncclSuccess);
		EXPECT_EQ(freq, nullptr) << "the simulator has nothing to flush";
	}
};

class PluginNoGpu : public PluginGpu {
protected:
	const char *Dma() const override { return "off"; }
};

bool Logged(const std::string &what)
{
	for (auto &l : LogLines())
		if (l.find(what) != std::string::npos)
			return true;
	return false;
}

std::string VersionName(const ::testing::TestParamInfo<int> &info)
{
	// (snprintf: gcc 12 at -O3 warns falsely about "v" + std::string.)
	char name[16];
	snprintf(name, sizeof(name), "v%d", info.param);
	return name;
}

} // namespace

TEST(PluginExports, EveryVersionAndNothingElse)
{
	std::string why;
	auto lib = Library::Open(PluginPath(), &why);
	ASSERT_TRUE(lib) << why;
	for (int v = 7; v <= 12; v++) {
		auto api = lib->Get(v);
		ASSERT_TRUE(api) << "ncclNetPlugin_v" << v;
		EXPECT_EQ(api->Name(), "TB5");
	}
	// Older and unknown versions are not exported.
	EXPECT_FALSE(lib->Get(6));
	EXPECT_EQ(dlsym(lib->handle(), "ncclNetPlugin_v13"), nullptr);
	// The implementation stays hidden (tb5net::Test(void*, int*, int*)).
	EXPECT_EQ(dlsym(lib->handle(), "_ZN6tb5net4TestEPvPiS1_"), nullptr);
}

TEST_P(PluginVersion, PropertiesDescribeEachLink)
{
	std::vector<std::string> names;
	for (int d = 0; d < ndev; d++) {
		Props p;
		ASSERT_EQ(api->GetProps(d, &p), ncclSuccess);
		EXPECT_FALSE(p.name.empty());
		EXPECT_EQ(std::count(names.begin(), names.end(), p.name), 0) << p.name;
		names.push_back(p.name);
		EXPECT_TRUE(p.ptr_support & NCCL_PTR_HOST);
		EXPECT_FALSE(p.ptr_support & NCCL_PTR_CUDA);
		EXPECT_GT(p.speed, 0);
		EXPECT_GT(p.max_comms, 0);
		EXPECT_GE(p.max_recvs, 1);
		if (GetParam() >= 9) {
			EXPECT_EQ(p.vdevs, 1);
			EXPECT_GT(p.max_p2p, 0u);
		}
	}
	Props p;
	EXPECT_NE(api->GetProps(ndev, &p), ncclSuccess);
	EXPECT_NE(api->GetProps(-1, &p), ncclSuccess);
	bool prefixed = false;
	for (auto &l : LogLines())
		prefixed |= l.rfind("NET/TB5 : ", 0) == 0;
	EXPECT_TRUE(prefixed) << "the plugin logs through NCCL's logger with NET/TB5";
}

TEST_P(PluginVersion, SizesFromZeroTo256MiBEveryByteChecked)
{
	Rank a, b;
	ASSERT_NO_FATAL_FAILURE(Pair(a, b));
	const size_t cap = CapBytes(256);
	std::vector<size_t> sizes;
	for (size_t n : {(size_t)0, (size_t)1, (size_t)7, (size_t)4095, (size_t)4096,
			 (size_t)4097, (size_t)65539, (size_t)(1 << 20) + 1, (size_t)16 << 20,
			 (size_t)256 << 20})
		if (n <= cap)
			sizes.push_back(n);
	ASSERT_NO_FATAL_FAILURE(Transfer(a, b, sizes));
	ClosePair(a, b);
}

TEST_P(PluginVersion, ThirtyTwoRequestsInFlight)
{
	Rank a, b;
	ASSERT_NO_FATAL_FAILURE(Pair(a, b));
	constexpr size_t kMsg = 64 << 10;
	constexpr int kN = NCCL_NET_MAX_REQUESTS;
	Buffer sbuf(kMsg * (kN + 1)), rbuf(kMsg * kN);
	void *smh = nullptr, *rmh = nullptr;
	if (b.here()) {
		ASSERT_EQ(api->RegMr(b.sc, sbuf.p, sbuf.len, &smh), ncclSuccess);
	}
	if (a.here()) {
		ASSERT_EQ(api->RegMr(a.rc, rbuf.p, rbuf.len, &rmh), ncclSuccess);
	}
	std::vector<void *> rreq(kN), sreq(kN);
	for (int i = 0; i < kN; i++) {
		if (a.here()) {
			size_t sz = kMsg;
			int tag = i;	// distinct tags, as NCCL's steps have
			void *d = rbuf.p + i * kMsg;
			ASSERT_EQ(api->Irecv(a.rc, 1, &d, &sz, &tag, &rmh, &rreq[i]), ncclSuccess);
			ASSERT_TRUE(rreq[i]) << "receive " << i << " of " << kN << " refused";
		}
		if (b.here()) {
			Fill(sbuf.p + i * kMsg, kMsg, 100 + i);
			ASSERT_EQ(api->Isend(b.sc, sbuf.p + i * kMsg, kMsg, i, smh, &sreq[i]), ncclSuccess);
			ASSERT_TRUE(sreq[i]) << "send " << i << " of " << kN << " refused";
		}
	}
	if (b.here()) {
		// A 33rd is refused with a NULL request and no side effect.
		void *extra = reinterpret_cast<void *>(1);
		ASSERT_EQ(api->Isend(b.sc, sbuf.p + kN * kMsg, kMsg, kN, smh, &extra), ncclSuccess);
		EXPECT_EQ(extra, nullptr);
	}
	for (int i = 0; i < kN; i++) {
		int n = -1;
		if (b.here()) {
			ASSERT_EQ(Wait(api.get(), sreq[i], &n), ncclSuccess);
		}
		if (a.here()) {
			ASSERT_EQ(Wait(api.get(), rreq[i], &n), ncclSuccess);
			EXPECT_EQ(n, (int)kMsg);
			EXPECT_EQ(Check(rbuf.p + i * kMsg, kMsg, 100 + i), -1) << "message " << i;
		}
	}
	if (b.here()) {
		EXPECT_EQ(api->DeregMr(b.sc, smh), ncclSuccess);
	}
	if (a.here()) {
		EXPECT_EQ(api->DeregMr(a.rc, rmh), ncclSuccess);
	}
	ClosePair(a, b);
}

TEST_P(PluginVersion, GroupedReceivesReportEachSize)
{
	Rank a, b;
	ASSERT_NO_FATAL_FAILURE(Pair(a, b));
	Props p;
	ASSERT_EQ(api->GetProps(0, &p), ncclSuccess);
	const int n = std::min(p.max_recvs, 8);
	constexpr size_t kSlot = 1 << 20;
	auto len = [](int i) { return (size_t)(1000 * (i + 1) + i); };	// each its own size
	Buffer sbuf(kSlot * n), rbuf(kSlot * n);
	void *smh = nullptr, *rmh = nullptr;
	if (b.here()) {
		ASSERT_EQ(api->RegMr(b.sc, sbuf.p, sbuf.len, &smh), ncclSuccess);
	}
	if (a.here()) {
		ASSERT_EQ(api->RegMr(a.rc, rbuf.p, rbuf.len, &rmh), ncclSuccess);
	}
	void *rreq = nullptr;
	if (a.here()) {
		std::vector<void *> data(n), mhs(n, rmh);
		std::vector<size_t> sizes(n, kSlot);
		std::vector<int> tags(n);
		for (int i = 0; i < n; i++) {
			data[i] = rbuf.p + i * kSlot;
			tags[i] = 1000 + i;
		}
		rreq = Post([&](void **req) {
			return api->Irecv(a.rc, n, data.data(), sizes.data(), tags.data(), mhs.data(), req);
		});
		ASSERT_TRUE(rreq);
	}
	if (b.here()) {
		std::vector<void *> sreq(n);
		// Sent in reverse order: tags, not order, pair them.
		for (int j = n - 1; j >= 0; j--) {
			Fill(sbuf.p + j * kSlot, len(j), 7 + j);
			sreq[j] = Post([&](void **req) {
				return api->Isend(b.sc, sbuf.p + j * kSlot, len(j), 1000 + j, smh, req);
			});
			ASSERT_TRUE(sreq[j]);
		}
		for (int i = 0; i < n; i++)
			ASSERT_EQ(Wait(api.get(), sreq[i], nullptr), ncclSuccess);
	}
	if (a.here()) {
		std::vector<int> got(n, -1);
		ASSERT_EQ(Wait(api.get(), rreq, got.data()), ncclSuccess);
		for (int i = 0; i < n; i++) {
			EXPECT_EQ(got[i], (int)len(i)) << "receive " << i;
			EXPECT_EQ(Check(rbuf.p + i * kSlot, len(i), 7 + i), -1) << "receive " << i;
		}
	}
	if (b.here()) {
		EXPECT_EQ(api->DeregMr(b.sc, smh), ncclSuccess);
	}
	if (a.here()) {
		EXPECT_EQ(api->DeregMr(a.rc, rmh), ncclSuccess);
	}
	ClosePair(a, b);
}

TEST_P(PluginVersion, TruncationIsAnErrorOnBothSides)
{
	Rank a, b;
	ASSERT_NO_FATAL_FAILURE(Pair(a, b));
	Buffer sbuf(8192), rbuf(8192);
	void *smh = nullptr, *rmh = nullptr;
	if (b.here()) {
		ASSERT_EQ(api->RegMr(b.sc, sbuf.p, sbuf.len, &smh), ncclSuccess);
	}
	if (a.here()) {
		ASSERT_EQ(api->RegMr(a.rc, rbuf.p, rbuf.len, &rmh), ncclSuccess);
	}
	std::memset(rbuf.p, 0x5a, rbuf.len);
	Fill(sbuf.p, 5000, 3);
	size_t rsize = 100;
	int tag = 9;
	void *d = rbuf.p, *rreq = nullptr, *sreq = nullptr;
	if (a.here()) {
		rreq = Post([&](void **req) { return api->Irecv(a.rc, 1, &d, &rsize, &tag, &rmh, req); });
		ASSERT_TRUE(rreq);
	}
	if (b.here()) {
		sreq = Post([&](void **req) { return api->Isend(b.sc, sbuf.p, 5000, 9, smh, req); });
		ASSERT_TRUE(sreq);
		EXPECT_NE(Wait(api.get(), sreq, nullptr), ncclSuccess);
	}
	if (a.here()) {
		EXPECT_NE(Wait(api.get(), rreq, nullptr), ncclSuccess);
		// Nothing was written into the too-small buffer, nor past it.
		for (size_t i = 0; i < rbuf.len; i++)
			ASSERT_EQ(rbuf.p[i], 0x5a) << "byte " << i;
	}
	if (b.here()) {
		EXPECT_EQ(api->DeregMr(b.sc, smh), ncclSuccess);
	}
	if (a.here()) {
		EXPECT_EQ(api->DeregMr(a.rc, rmh), ncclSuccess);
	}
	ClosePair(a, b);
}

TEST_P(PluginVersion, CloseWithRequestsInFlight)
{
	Rank a, b;
	ASSERT_NO_FATAL_FAILURE(Pair(a, b));
	constexpr size_t kMsg = 16 << 20;
	Buffer sbuf(kMsg), rbuf(kMsg);
	void *smh = nullptr, *rmh = nullptr;
	if (b.here()) {
		ASSERT_EQ(api->RegMr(b.sc, sbuf.p, sbuf.len, &smh), ncclSuccess);
	}
	if (a.here()) {
		ASSERT_EQ(api->RegMr(a.rc, rbuf.p, rbuf.len, &rmh), ncclSuccess);
	}
	for (int i = 0; i < 4; i++) {
		size_t sz = kMsg / 4;
		int tag = i;
		void *d = rbuf.p + i * sz;
		if (a.here()) {
			ASSERT_TRUE(Post([&](void **r) { return api->Irecv(a.rc, 1, &d, &sz, &tag, &rmh, r); }));
		}
		if (b.here()) {
			ASSERT_TRUE(Post([&](void **r) { return api->Isend(b.sc, sbuf.p + i * sz, sz, i, smh, r); }));
		}
	}
	// NCCL's teardown order: deregister, then close; nothing waited for.
	if (b.here()) {
		EXPECT_EQ(api->DeregMr(b.sc, smh), ncclSuccess);
	}
	if (a.here()) {
		EXPECT_EQ(api->DeregMr(a.rc, rmh), ncclSuccess);
	}
	ClosePair(a, b);
	// The links still work for a new pair.
	Rank c, e;
	ASSERT_NO_FATAL_FAILURE(Pair(c, e));
	ASSERT_NO_FATAL_FAILURE(Transfer(c, e, {12345}));
	ClosePair(c, e);
}

TEST_P(PluginVersion, PeerClosedFirst)
{
	Rank a, b;
	ASSERT_NO_FATAL_FAILURE(Pair(a, b));
	Buffer sbuf(1 << 20);
	void *smh = nullptr;
	if (b.here()) {
		ASSERT_EQ(api->RegMr(b.sc, sbuf.p, sbuf.len, &smh), ncclSuccess);
	}
	// The receiver goes away with nothing posted; the sender's send is
	// refused or fails or never starts, and closing the sender is fine.
	if (a.here()) {
		ASSERT_EQ(api->CloseRecv(a.rc), ncclSuccess);
		a.rc = nullptr;
	}
	ASSERT_NO_FATAL_FAILURE(Meet("receiver closed"));
	if (b.here()) {
		void *sreq = nullptr;
		// Refused at once once the close has reached this side (a
		// remote error), or taken and failed (or never matched) later.
		ncclResult_t r = api->Isend(b.sc, sbuf.p, 1 << 20, 1, smh, &sreq);
		EXPECT_TRUE(r == ncclSuccess || r == ncclRemoteError) << r;
		if (r != ncclSuccess) {
			EXPECT_EQ(sreq, nullptr);
		}
		if (sreq) {
			int done = 0;
			for (int i = 0; i < 1000 && !done; i++)
				if (api->Test(sreq, &done, nullptr) != ncclSuccess)
					break;
		}
		EXPECT_EQ(api->DeregMr(b.sc, smh), ncclSuccess);
	}
	ClosePair(a, b);
}

TEST_P(PluginVersion, ConnectWithoutACableNamesIt)
{
	setenv("TB5_NCCL_CONNECT_TIMEOUT_MS", "0", 1);
	char handle[NCCL_NET_HANDLE_MAXSIZE] = {};
	void *lc = nullptr;
	ASSERT_EQ(api->Listen(ctx, 0, handle, &lc), ncclSuccess);
	// The same listener's handle, but for a host nobody is cabled to.
	uint64_t nowhere = 0x7e57de4d0000beefull;
	std::memcpy(handle + 8, &nowhere, sizeof(nowhere));
	void *sc = nullptr;
	ncclResult_t r = ncclSuccess;
	auto t0 = Clock::now();
	while (r == ncclSuccess && !sc && !Expired(t0))
		r = api->Connect(ctx, 0, handle, &sc);
	EXPECT_NE(r, ncclSuccess);
	EXPECT_EQ(sc, nullptr);
	bool named = false;
	for (auto &l : LogLines())
		named |= l.find("has no cable to host 0x7e57de4d0000beef") != std::string::npos;
	EXPECT_TRUE(named) << "the error names the host no cable reaches";
	EXPECT_EQ(api->CloseListen(lc), ncclSuccess);
	unsetenv("TB5_NCCL_CONNECT_TIMEOUT_MS");
}

TEST_P(PluginVersion, ForeignHandleRefused)
{
	char handle[NCCL_NET_HANDLE_MAXSIZE];
	std::memset(handle, 0x42, sizeof(handle));	// stage too: never trusted
	void *sc = nullptr;
	EXPECT_EQ(api->Connect(ctx, 0, handle, &sc), ncclInvalidArgument);
	EXPECT_EQ(sc, nullptr);
}

TEST_P(PluginVersion, TwoRanksOnThreadsOfOneProcess)
{
	TwoRanksOnThreads(false, 1);
}

TEST_P(PluginVersion, LiveCountersArePublished)
{
	Rank a, b;
	ASSERT_NO_FATAL_FAILURE(Pair(a, b));
	ASSERT_NO_FATAL_FAILURE(Transfer(a, b, {1000, 2000}));
	tb5::live::Snapshot s = tb5::live::read_snapshot(live_dir);
	EXPECT_EQ(s.publishers, 1u);
	uint64_t tx = 0, rx = 0, txo = 0, rxo = 0;
	for (auto &l : s.links) {
		tx += l.tx_bytes;
		rx += l.rx_bytes;
		txo += l.tx_ops;
		rxo += l.rx_ops;
	}
	// Payload only, counted where each rank is.
	EXPECT_EQ(tx, b.here() ? 3000u : 0u);
	EXPECT_EQ(rx, a.here() ? 3000u : 0u);
	EXPECT_EQ(txo, b.here() ? 2u : 0u);
	EXPECT_EQ(rxo, a.here() ? 2u : 0u);
	ClosePair(a, b);
}

TEST_P(PluginVersion, DlcloseThenDlopenAgain)
{
	Rank a, b;
	ASSERT_NO_FATAL_FAILURE(Pair(a, b));
	ASSERT_NO_FATAL_FAILURE(Transfer(a, b, {4096}));
	ClosePair(a, b);
	Unload();
	// Split over the simulator, a host lives as long as its process has
	// libtb5 loaded: both unload before either loads again, as between
	// two tests (SetUp). Otherwise one host may come back beside the
	// other's old self, and its link goes down when that one leaves.
	ASSERT_NO_FATAL_FAILURE(Meet("unloaded"));
	ASSERT_NO_FATAL_FAILURE(Load());
	ASSERT_NO_FATAL_FAILURE(Pair(a, b));
	ASSERT_NO_FATAL_FAILURE(Transfer(a, b, {1 << 20}));
	ClosePair(a, b);
}

// One rank of two, each in a process of its own (and, over the fabric, on a
// host of its own), loading the plugin itself. On each device in turn (on
// device 0 only unless @every_device): both ranks listen, swap handles
// through @ch, connect through that device to the other's listener and
// accept its connection, then send each other every size while receiving,
// every byte checked. Returns 0, or the step that failed.
int PeerRank(int version, bool first, Channel &ch, const std::vector<size_t> &sizes,
	     bool every_device, double timeout_s)
{
	std::string why;
	auto l = Library::Open(PluginPath(), &why);
	if (!l)
		return 10;
	auto x = l->Get(version);
	void *c = nullptr;
	int nd = 0, their_nd = 0;
	if (!x || x->Init(&c) || x->Devices(&nd) || nd < 1)
		return 11;
	// Both see as many devices (one per cable between them).
	if (!ch.Send(&nd, sizeof(nd)) || !ch.Recv(&their_nd, sizeof(their_nd), timeout_s))
		return 27;
	if (nd != their_nd)
		return 28;
	size_t max = *std::max_element(sizes.begin(), sizes.end());
	Buffer sbuf(max), rbuf(max);
	if (!sbuf.p || !rbuf.p)
		return 29;
	for (int dev = 0; dev < (every_device ? nd : 1); dev++) {
		Rank me;
		me.api = x.get();
		me.ctx = c;
		char mine[NCCL_NET_HANDLE_MAXSIZE] = {}, theirs[NCCL_NET_HANDLE_MAXSIZE] = {};
		if (x->Listen(c, dev, mine, &me.lc))
			return 12;
		if (!ch.Send(mine, sizeof(mine)) || !ch.Recv(theirs, sizeof(theirs), timeout_s))
			return 13;
		auto t0 = Clock::now();
		auto late = [&] { return Clock::now() - t0 > std::chrono::duration<double>(timeout_s); };
		while (!me.sc || !me.rc) {
			if (!me.sc && x->Connect(c, dev, theirs, &me.sc))
				return 14;
			if (!me.rc && x->Accept(me.lc, &me.rc))
				return 15;
			if (late())
				return 16;
		}
		void *smh, *rmh;
		if (x->RegMr(me.sc, sbuf.p, max, &smh) || x->RegMr(me.rc, rbuf.p, max, &rmh))
			return 17;
		uint32_t out = first ? 1000 : 2000, in = first ? 2000 : 1000;
		out += 100 * (uint32_t)dev;
		in += 100 * (uint32_t)dev;
		for (size_t i = 0; i < sizes.size(); i++) {
			size_t n = sizes[i], rs = n;
			Fill(sbuf.p, n, out + (uint32_t)i);
			int tag = (int)i;
			void *d = rbuf.p, *rreq = nullptr, *sreq = nullptr;
			while (!rreq)
				if (x->Irecv(me.rc, 1, &d, &rs, &tag, &rmh, &rreq))
					return 18;
			while (!sreq)
				if (x->Isend(me.sc, sbuf.p, n, tag, smh, &sreq))
					return 19;
			int sd = 0, rd = 0, got = -1;
			while (!sd || !rd) {
				if (!sd && x->Test(sreq, &sd, nullptr))
					return 20;
				if (!rd && x->Test(rreq, &rd, &got))
					return 21;
				if (late())
					return 22;
			}
			if (got != (int)n || Check(rbuf.p, n, in + (uint32_t)i) != -1)
				return 23;
		}
		x->DeregMr(me.sc, smh);
		x->DeregMr(me.rc, rmh);
		// Both sides are done before either closes (a barrier).
		char byte = 1;
		if (!ch.Send(&byte, 1) || !ch.Recv(&byte, 1, timeout_s))
			return 24;
		if (x->CloseSend(me.sc) || x->CloseRecv(me.rc) || x->CloseListen(me.lc))
			return 25;
	}
	if (x->Finalize(c))
		return 26;
	return 0;
}

// Two processes, each a host of the fabric (or each holding one end of a
// kernel loop pair): both listen, swap handles through pipes, connect and
// accept, then send each other every size while receiving.
class PluginProcesses : public ::testing::TestWithParam<int> {};

TEST_P(PluginProcesses, TwoProcesses)
{
	if (RemoteRole())
		GTEST_SKIP() << "split across hosts, both ranks would be on this one (PluginRemote is this test there)";
	// The fork comes first: each process loads the plugin itself.
	UseFabric("hosts=2,loop=0");
	std::string live_dir = UseLiveDir();
	int to_child[2], to_parent[2];
	ASSERT_EQ(pipe(to_child), 0);
	ASSERT_EQ(pipe(to_parent), 0);
	const std::vector<size_t> sizes = {0, 1, 4097, 1 << 20, (64u << 20) + 3};
	pid_t child = fork();
	ASSERT_GE(child, 0);
	if (child == 0) {
		PipeChannel ch(to_parent[1], to_child[0]);
		_exit(PeerRank(GetParam(), false, ch, sizes, false, TimeoutS()));
	}
	PipeChannel ch(to_child[1], to_parent[0]);
	int mine = PeerRank(GetParam(), true, ch, sizes, false, TimeoutS());
	int status = 0;
	ASSERT_EQ(waitpid(child, &status, 0), child);
	EXPECT_EQ(mine, 0) << "this process's step that failed (see PeerRank)";
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(WEXITSTATUS(status), 0) << "the child's step that failed (see PeerRank)";
	(void)!system(("rm -rf '" + live_dir + "'").c_str());
}

// @n processes, one per host of a fabric of @opts, each running @rank_fn
// with a pipe to every other (defined below, with the NCCL replays).
void RunRanks(int n, const std::string &opts,
	      const std::function<int(int, const std::vector<Channel *> &)> &rank_fn);

// One rank of a mesh of @n processes, rank r in slot r of a fabric of n
// hosts: a listener per peer, handles swapped over @ch[peer] (as NCCL's
// bootstrap would), a connection to and from every peer (each connect
// through device 0: the plugin takes the link that reaches the peer, and
// its log must say sim_h<peer>), then every size to every peer at once
// while receiving every size from each, every byte checked. @missing is
// the peer with no cable to this rank (-1: none): connecting to it must
// fail, at once and not by a timeout, with the plugin's message naming
// both hosts, while the rest of the mesh carries its data all the same.
// Returns 0, or the step that failed.
int MeshRank(int version, int rank, int n, const std::vector<Channel *> &ch,
	     const std::vector<size_t> &sizes, int missing, double timeout_s)
{
	ClearLog();
	std::string why;
	auto l = Library::Open(PluginPath(), &why);
	if (!l)
		return 10;
	auto x = l->Get(version);
	void *c = nullptr;
	int nd = 0;
	if (!x || x->Init(&c) || x->Devices(&nd))
		return 11;
	// A device per cable: one to every other host but the missing one.
	if (nd != n - 1 - (missing >= 0))
		return 12;
	auto t0 = Clock::now();
	auto late = [&] { return Clock::now() - t0 > std::chrono::duration<double>(timeout_s); };
	std::vector<void *> lc(n), sc(n), rc(n), smh(n), rmh(n);
	std::vector<std::array<char, NCCL_NET_HANDLE_MAXSIZE>> mine(n), theirs(n);
	for (int p = 0; p < n; p++) {
		if (p == rank)
			continue;
		mine[p] = {};
		if (x->Listen(c, 0, mine[p].data(), &lc[p]) || !ch[p]->Send(mine[p].data(), mine[p].size()))
			return 13;
	}
	for (int p = 0; p < n; p++)
		if (p != rank && !ch[p]->Recv(theirs[p].data(), theirs[p].size(), timeout_s))
			return 14;
	auto host_of = [&](int p) {
		uint64_t h = 0;
		std::memcpy(&h, theirs[p].data() + 8, sizeof(h));	// the handle's host id
		char buf[32];
		snprintf(buf, sizeof(buf), "%#llx", (unsigned long long)h);
		return std::string(buf);
	};
	auto logged = [](const std::string &what) {
		for (auto &line : LogLines())
			if (line.find(what) != std::string::npos)
				return true;
		return false;
	};
	if (missing >= 0) {
		ncclResult_t r = ncclSuccess;
		void *none = nullptr;
		auto t1 = Clock::now();
		while (r == ncclSuccess && !none && !late())
			r = x->Connect(c, 0, theirs[missing].data(), &none);
		if (r == ncclSuccess || none)
			return 30;
		// Once every link is up: not after the plugin's connect
		// timeout (20 s), which is for links still coming up.
		if (Clock::now() - t1 > std::chrono::seconds(10))
			return 32;
		uint64_t self = 0, them = 0;
		std::memcpy(&self, mine[missing].data() + 8, sizeof(self));	// ours
		std::memcpy(&them, theirs[missing].data() + 8, sizeof(them));
		// Every rank here runs on this machine: one host name for all.
		if (!logged("connect: " + HostLabel(self, ThisHostName()) + " has no cable to " +
			    HostLabel(them, ThisHostName()) + " (this host's links: "))
			return 31;
	}
	bool all = false;
	while (!all) {
		all = true;
		for (int p = 0; p < n; p++) {
			if (p == rank || p == missing)
				continue;
			if (!sc[p] && x->Connect(c, 0, theirs[p].data(), &sc[p]))
				return 15;
			if (!rc[p] && x->Accept(lc[p], &rc[p]))
				return 16;
			all = all && sc[p] && rc[p];
		}
		if (late())
			return 17;
	}
	size_t max = *std::max_element(sizes.begin(), sizes.end());
	std::vector<std::unique_ptr<Buffer>> sbuf(n), rbuf(n);
	for (int p = 0; p < n; p++) {
		if (p == rank || p == missing)
			continue;
		// Over the cable to that peer, whatever device was asked for.
		const std::string via = " over sim_h" + std::to_string(p);
		bool routed = false;
		for (auto &line : LogLines())
			routed |= line.find("connecting to host " + host_of(p)) != std::string::npos &&
				  line.size() >= via.size() &&
				  line.compare(line.size() - via.size(), via.size(), via) == 0;
		if (!routed)
			return 42;
		sbuf[p] = std::make_unique<Buffer>(max + 1);
		rbuf[p] = std::make_unique<Buffer>(max + 1);
		if (!sbuf[p]->p || !rbuf[p]->p)
			return 18;
		if (x->RegMr(sc[p], sbuf[p]->p, max + 1, &smh[p]) ||
		    x->RegMr(rc[p], rbuf[p]->p, max + 1, &rmh[p]))
			return 19;
	}
	auto seed = [n](int from, int to, size_t i) { return (uint32_t)((from * n + to) * 100 + i + 1); };
	for (size_t i = 0; i < sizes.size(); i++) {
		const size_t len = sizes[i];
		std::vector<void *> sreq(n), rreq(n);
		std::vector<size_t> rs(n, len);
		for (int p = 0; p < n; p++) {
			if (p == rank || p == missing)
				continue;
			Fill(sbuf[p]->p, len, seed(rank, p, i));
			int tag = (int)i;
			void *d = rbuf[p]->p;
			while (!rreq[p])
				if (x->Irecv(rc[p], 1, &d, &rs[p], &tag, &rmh[p], &rreq[p]) || late())
					return 20;
			while (!sreq[p])
				if (x->Isend(sc[p], sbuf[p]->p, len, tag, smh[p], &sreq[p]) || late())
					return 21;
		}
		for (bool done = false; !done;) {
			done = true;
			for (int p = 0; p < n; p++) {
				if (p == rank || p == missing)
					continue;
				int got = -1;
				if (sreq[p]) {
					int d = 0;
					if (x->Test(sreq[p], &d, nullptr))
						return 22;
					if (d)
						sreq[p] = nullptr;
				}
				if (rreq[p]) {
					int d = 0;
					if (x->Test(rreq[p], &d, &got))
						return 23;
					if (d) {
						rreq[p] = nullptr;
						if ((size_t)got != len ||
						    Check(rbuf[p]->p, len, seed(p, rank, i)) != -1)
							return 24;
					}
				}
				done = done && !sreq[p] && !rreq[p];
			}
			if (late())
				return 25;
		}
	}
	// Everyone is done before anyone closes (a barrier).
	char byte = 1;
	for (int p = 0; p < n; p++)
		if (p != rank && !ch[p]->Send(&byte, 1))
			return 26;
	for (int p = 0; p < n; p++)
		if (p != rank && !ch[p]->Recv(&byte, 1, timeout_s))
			return 27;
	for (int p = 0; p < n; p++) {
		if (p == rank)
			continue;
		if (sc[p] && (x->DeregMr(sc[p], smh[p]) || x->CloseSend(sc[p])))
			return 28;
		if (rc[p] && (x->DeregMr(rc[p], rmh[p]) || x->CloseRecv(rc[p])))
			return 28;
		if (x->CloseListen(lc[p]))
			return 28;
	}
	if (x->Finalize(c))
		return 29;
	return 0;
}

// Four processes, each a host of a four-host fabric (one per slot), in a
// full mesh or with the cable between slots 0 and 3 missing (uncabled=0-3:
// ranks 0 and 3 see that connect fail, the other five pairs carry data).
// Every rank is a child; this process only waits, and kills what has not
// ended in time, so that nothing can hang the run.
class PluginMesh : public ::testing::TestWithParam<int> {
protected:
	void RunMesh(const std::string &opts, int cut_a, int cut_b)
	{
		if (RemoteRole() || KernelBackend())
			GTEST_SKIP() << "four simulator hosts in this process's children";
		constexpr int n = 4;
		const std::vector<size_t> sizes = {0, 1, 4097, (1 << 20) + 3, (4 << 20) + 1};
		RunRanks(n, opts, [&](int r, const std::vector<Channel *> &ch) {
			int missing = r == cut_a ? cut_b : r == cut_b ? cut_a : -1;
			return MeshRank(GetParam(), r, n, ch, sizes, missing, 30);
		});
	}
};

TEST_P(PluginMesh, FourProcessesFullMesh)
{
	RunMesh("hosts=4,loop=0", -1, -1);
}

TEST_P(PluginMesh, FourProcessesOneCableMissingFailsAtConnect)
{
	RunMesh("hosts=4,loop=0,uncabled=0-3", 0, 3);
}

// One rank of a job NCCL 2.28.3 runs with its defaults (or with
// NCCL_NET_MERGE_LEVEL=@level), one rank per host of an @n-host fabric:
// the rank builds its host's topology as NCCL does (ModelNcclTopo: the
// devices, their properties, makeVDevice and which NETs the host then
// has), then for each of @nch channels listens and connects on the NET
// device that NCCL gives that channel, to and from every peer. Every
// connection must be on a cable that reaches its peer (the plugin's log:
// "connecting to host <peer> ... over sim_h<peer>[c<k>]"), the @cables
// cables to each peer must all carry a connection when there are enough
// channels, and each connection carries a message, every byte checked.
// Then every cable this rank sends on must have sent at least a quarter
// of the mean (the plugin's live counters, in this rank's TB5_LIVE_DIR).
// Returns 0, or the step that failed (its reason on stderr).
int NcclRank(int version, int rank, int n, const std::vector<Channel *> &ch,
	     const std::string &level, int nch, int cables, double timeout_s)
{
	ClearLog();
	std::string why;
	auto l = Library::Open(PluginPath(), &why);
	if (!l)
		return 10;
	auto x = l->Get(version);
	void *c = nullptr;
	if (!x || x->Init(&c))
		return 11;
	NcclTopo topo = ModelNcclTopo(*x, NcclMergeLevel(level));
	if (!topo.ok) {
		std::string log;
		for (auto &s : topo.log)
			log += "; " + s;
		fprintf(stderr, "rank %d (NCCL_NET_MERGE_LEVEL=%s): NCCL would fail: %s%s\n", rank,
			level.empty() ? "(unset)" : level.c_str(), topo.error.c_str(), log.c_str());
		return 40;
	}
	auto t0 = Clock::now();
	auto late = [&] { return Clock::now() - t0 > std::chrono::duration<double>(timeout_s); };
	using H = std::array<char, NCCL_NET_HANDLE_MAXSIZE>;
	// [channel][peer]
	std::vector<std::vector<void *>> lc(nch, std::vector<void *>(n)), sc = lc, rc = lc,
					 smh = lc, rmh = lc;
	std::vector<std::vector<H>> mine(nch, std::vector<H>(n)), theirs = mine;
	for (int k = 0; k < nch; k++)
		for (int p = 0; p < n; p++) {
			if (p == rank)
				continue;
			mine[k][p] = {};
			if (x->Listen(c, NcclChannelNet(topo, k), mine[k][p].data(), &lc[k][p]) ||
			    !ch[p]->Send(mine[k][p].data(), mine[k][p].size()))
				return 13;
		}
	for (int k = 0; k < nch; k++)
		for (int p = 0; p < n; p++)
			if (p != rank && !ch[p]->Recv(theirs[k][p].data(), sizeof(H), timeout_s))
				return 14;
	for (bool all = false; !all;) {
		all = true;
		for (int k = 0; k < nch; k++)
			for (int p = 0; p < n; p++) {
				if (p == rank)
					continue;
				int dev = NcclChannelNet(topo, k);
				if (!sc[k][p] && x->Connect(c, dev, theirs[k][p].data(), &sc[k][p])) {
					fprintf(stderr, "rank %d: connect to rank %d on device %d failed%s\n",
						rank, p, dev, LastLog().c_str());
					return 15;
				}
				if (!rc[k][p] && x->Accept(lc[k][p], &rc[k][p]))
					return 16;
				all = all && sc[k][p] && rc[k][p];
			}
		if (late())
			return 17;
	}
	// Which cable each connection took, from the plugin's own log.
	auto u64_at = [](const H &h, size_t off) {
		uint64_t v = 0;
		std::memcpy(&v, h.data() + off, sizeof(v));
		return v;
	};
	std::vector<std::set<std::string>> used(n);
	for (int k = 0; k < nch; k++)
		for (int p = 0; p < n; p++) {
			if (p == rank)
				continue;
			char key[96];
			snprintf(key, sizeof(key), "connecting to host %#llx service %#llx over ",
				 (unsigned long long)u64_at(theirs[k][p], 8),
				 (unsigned long long)u64_at(theirs[k][p], 16));
			std::string link;
			for (auto &line : LogLines())
				if (line.find(key) != std::string::npos)
					link = line.substr(line.find(key) + strlen(key));
			const std::string want = "sim_h" + std::to_string(p);
			bool ok = link == want || (link.rfind(want + "c", 0) == 0 &&
						   link.size() > want.size() + 1 &&
						   isdigit((unsigned char)link[want.size() + 1]));
			if (!ok) {
				fprintf(stderr, "rank %d: channel %d's connection to rank %d went over "
					"'%s', not a cable to that host\n", rank, k, p, link.c_str());
				return 42;
			}
			used[p].insert(link);
		}
	for (int p = 0; p < n; p++)
		if (p != rank && (int)used[p].size() < std::min(cables, nch)) {
			fprintf(stderr, "rank %d: %zu of the %d cables to rank %d carry a connection\n",
				rank, used[p].size(), cables, p);
			return 43;
		}
	const size_t len = 256 << 10;
	std::vector<std::unique_ptr<Buffer>> bufs;
	auto seed = [n, nch](int from, int to, int k) { return (uint32_t)(((from * n + to) * nch + k) + 7); };
	std::vector<void *> sreq, rreq;
	std::vector<std::tuple<int, int, Buffer *>> checks;
	for (int k = 0; k < nch; k++)
		for (int p = 0; p < n; p++) {
			if (p == rank)
				continue;
			bufs.push_back(std::make_unique<Buffer>(len));
			Buffer *sb = bufs.back().get();
			bufs.push_back(std::make_unique<Buffer>(len));
			Buffer *rb = bufs.back().get();
			if (!sb->p || !rb->p || x->RegMr(sc[k][p], sb->p, len, &smh[k][p]) ||
			    x->RegMr(rc[k][p], rb->p, len, &rmh[k][p]))
				return 18;
			Fill(sb->p, len, seed(rank, p, k));
			int tag = k;
			size_t rs = len;
			void *d = rb->p, *rq = nullptr, *sq = nullptr;
			while (!rq)
				if (x->Irecv(rc[k][p], 1, &d, &rs, &tag, &rmh[k][p], &rq) || late())
					return 20;
			while (!sq)
				if (x->Isend(sc[k][p], sb->p, len, tag, smh[k][p], &sq) || late())
					return 21;
			sreq.push_back(sq);
			rreq.push_back(rq);
			checks.emplace_back(p, k, rb);
		}
	for (bool done = false; !done;) {
		done = true;
		for (size_t i = 0; i < sreq.size(); i++) {
			int d = 0, got = -1;
			if (sreq[i] && x->Test(sreq[i], &d, nullptr))
				return 22;
			if (d)
				sreq[i] = nullptr;
			d = 0;
			if (rreq[i] && x->Test(rreq[i], &d, &got))
				return 23;
			if (d) {
				rreq[i] = nullptr;
				auto [p, k, rb] = checks[i];
				if ((size_t)got != len || Check(rb->p, len, seed(p, rank, k)) != -1)
					return 24;
			}
			done = done && !sreq[i] && !rreq[i];
		}
		if (late())
			return 25;
	}
	// Bytes per cable, from the plugin's live counters: every cable this
	// rank sent on carries at least a quarter of the mean.
	tb5::live::Snapshot snap = tb5::live::read_snapshot();
	uint64_t total = 0;
	int ncables = 0;
	for (auto &lk : snap.links) {
		total += lk.tx_bytes;
		ncables++;
	}
	if (ncables != (n - 1) * cables) {
		fprintf(stderr, "rank %d: live counters for %d links, expected %d\n", rank, ncables,
			(n - 1) * cables);
		return 44;
	}
	for (auto &lk : snap.links)
		if (lk.tx_bytes * 4 * (uint64_t)ncables < total) {
			fprintf(stderr, "rank %d: cable %s sent %llu B, under a quarter of the "
				"mean of %llu B\n", rank, lk.link.c_str(),
				(unsigned long long)lk.tx_bytes,
				(unsigned long long)(total / (uint64_t)ncables));
			return 45;
		}
	char byte = 1;
	for (int p = 0; p < n; p++)
		if (p != rank && !ch[p]->Send(&byte, 1))
			return 26;
	for (int p = 0; p < n; p++)
		if (p != rank && !ch[p]->Recv(&byte, 1, timeout_s))
			return 27;
	for (int k = 0; k < nch; k++)
		for (int p = 0; p < n; p++) {
			if (p == rank)
				continue;
			if (x->DeregMr(sc[k][p], smh[k][p]) || x->CloseSend(sc[k][p]) ||
			    x->DeregMr(rc[k][p], rmh[k][p]) || x->CloseRecv(rc[k][p]) ||
			    x->CloseListen(lc[k][p]))
				return 28;
		}
	if (x->Finalize(c))
		return 29;
	return 0;
}

// @n processes, one per host of a fabric of @opts, each running @rank_fn
// with a pipe to every other; this process only waits, and kills what has
// not ended in 60 s, so that nothing can hang the run. Each rank publishes
// its live counters in a directory of its own.
void RunRanks(int n, const std::string &opts,
	      const std::function<int(int, const std::vector<Channel *> &)> &rank_fn)
{
	UseFabric(opts);
	const std::string sim = std::getenv("TB5_SIM");
	std::string live_dir = UseLiveDir();
	std::vector<std::array<int, 2>> fds(n * n);	// [i * n + j], i < j
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
					     fds[i * n + j].data()), 0);
	std::vector<pid_t> kids;
	for (int r = 0; r < n; r++) {
		pid_t pid = fork();
		ASSERT_GE(pid, 0);
		if (pid == 0) {
			setenv("TB5_SIM", (sim + ",host=" + std::to_string(r)).c_str(), 1);
			const std::string dir = live_dir + "/rank" + std::to_string(r);
			if (mkdir(dir.c_str(), 0700))
				_exit(9);
			setenv("TB5_LIVE_DIR", dir.c_str(), 1);
			std::vector<std::unique_ptr<PipeChannel>> own(n);
			std::vector<Channel *> ch(n);
			for (int p = 0; p < n; p++) {
				if (p == r)
					continue;
				int fd = r < p ? fds[r * n + p][0] : fds[p * n + r][1];
				own[p] = std::make_unique<PipeChannel>(fd, fd);
				ch[p] = own[p].get();
			}
			_exit(rank_fn(r, ch));
		}
		kids.push_back(pid);
	}
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++) {
			close(fds[i * n + j][0]);
			close(fds[i * n + j][1]);
		}
	auto t0 = Clock::now();
	std::vector<int> status(n, -1);
	for (int left = n; left > 0;) {
		for (int r = 0; r < n; r++) {
			int st = 0;
			if (kids[r] > 0 && waitpid(kids[r], &st, WNOHANG) == kids[r]) {
				status[r] = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
				kids[r] = 0;
				left--;
			}
		}
		if (left && Clock::now() - t0 > std::chrono::seconds(60)) {
			for (int r = 0; r < n; r++)
				if (kids[r] > 0) {
					kill(kids[r], SIGKILL);
					waitpid(kids[r], nullptr, 0);
					ADD_FAILURE() << "rank " << r << " still running after 60 s: killed";
				}
			break;
		}
		usleep(10000);
	}
	for (int r = 0; r < n; r++)
		EXPECT_EQ(status[r], 0) << "rank " << r << ": the step that failed (see its rank function)";
	(void)!system(("rm -rf '" + live_dir + "'").c_str());
}

// Issue 25: NCCL 2.28.3 with its defaults on a mesh of 3 and 4 hosts, and
// with each NCCL_NET_MERGE_LEVEL an operator may set; with cables=2, both
// cables to each peer carry connections. Versions v9+ (those with
// makeVDevice in their table) are where NCCL fuses devices; v7 and v8 run
// the same replay.
class PluginNccl : public ::testing::TestWithParam<int> {
protected:
	void Run(int n, const std::string &opts, const std::string &level, int nch, int cables)
	{
		if (RemoteRole() || KernelBackend())
			GTEST_SKIP() << "simulator hosts in this process's children";
		SCOPED_TRACE("hosts " + std::to_string(n) + ", " + opts + ", NCCL_NET_MERGE_LEVEL=" +
			     (level.empty() ? "(unset)" : level));
		RunRanks(n, "hosts=" + std::to_string(n) + ",loop=0" + opts,
			 [&](int r, const std::vector<Channel *> &ch) {
				 return NcclRank(GetParam(), r, n, ch, level, nch, cables, 30);
			 });
	}
};

TEST_P(PluginNccl, ThreeHostsNcclDefaults)
{
	Run(3, "", "", 4, 1);
}

TEST_P(PluginNccl, FourHostsNcclDefaults)
{
	Run(4, "", "", 4, 1);
}

TEST_P(PluginNccl, FourHostsEveryMergeLevel)
{
	for (const char *level : {"LOC", "PORT", "PIX", "PXB", "PHB", "SYS"})
		Run(4, "", level, 3, 1);
}

TEST_P(PluginNccl, TwoCablesToEachPeerBothCarry)
{
	Run(2, ",cables=2", "", 4, 2);
	Run(3, ",cables=2", "", 4, 2);
}

// One rank of a job of @n ranks on one machine, each rank a simulated host
// of its own (as tests/gpu runs them), replaying what NCCL 2.28.3 asks of
// the plugin once it has fused the ranks' topologies (NcclMachineNets):
// for every NET of the machine, one channel, the proxy's set-up of a send
// (getProperties) and of a receive (getProperties, listen) on that NET's
// device number. @cut_a and @cut_b are the slots with no cable between
// them: they list a device fewer than the others, and must fail at the
// first device they lack, within seconds, with an error NCCL stops on and
// a WARN that names their own host and the other's; every other rank must
// pass every call. The ranks publish their hosts in one directory (one
// machine), all-gather their device counts and host ids as NCCL's
// intra-node all-gather would, and meet once more before finalize.
// Returns 0, or the step that failed (its reason on stderr).
int MachineRank(int version, int rank, int n, const std::vector<Channel *> &ch, int cut_a,
		int cut_b, double timeout_s)
{
	const std::string own_dir = std::getenv("TB5_LIVE_DIR");
	setenv("TB5_LIVE_DIR", own_dir.substr(0, own_dir.rfind('/')).c_str(), 1);
	ClearLog();
	std::string why;
	auto l = Library::Open(PluginPath(), &why);
	if (!l)
		return 10;
	auto x = l->Get(version);
	void *c = nullptr;
	if (!x || x->Init(&c))
		return 11;
	NcclTopo topo = ModelNcclTopo(*x, NcclMergeLevel(""));
	if (!topo.ok || topo.nets.empty())
		return 40;
	// This host's id, from a handle of its own device 0.
	std::array<char, NCCL_NET_HANDLE_MAXSIZE> h0{};
	void *lc0 = nullptr;
	if (x->Listen(c, 0, h0.data(), &lc0) || x->CloseListen(lc0))
		return 13;
	uint64_t self = 0;
	std::memcpy(&self, h0.data() + 8, sizeof(self));
	std::vector<NcclTopo> all(n);
	std::vector<uint64_t> host(n);
	all[rank] = topo;
	host[rank] = self;
	const int mine = (int)topo.nets.size();
	for (int p = 0; p < n; p++)
		if (p != rank && (!ch[p]->Send(&mine, sizeof(mine)) ||
				  !ch[p]->Send(&self, sizeof(self))))
			return 14;
	for (int p = 0; p < n; p++) {
		if (p == rank)
			continue;
		int count = 0;
		if (!ch[p]->Recv(&count, sizeof(count), timeout_s) ||
		    !ch[p]->Recv(&host[p], sizeof(host[p]), timeout_s) || count < 1 || count > 64)
			return 14;
		for (int d = 0; d < count; d++)
			all[p].nets.push_back(d);
	}
	const std::vector<int> nets = NcclMachineNets(all);
	const int other = rank == cut_a ? cut_b : rank == cut_b ? cut_a : -1;
	auto t0 = Clock::now();
	ncclResult_t failed = ncclSuccess;
	int failed_dev = -1;
	std::vector<void *> lcs;
	for (int dev : nets) {
		Props p;
		std::array<char, NCCL_NET_HANDLE_MAXSIZE> h{};
		void *lc = nullptr;
		// sendProxySetup, then recvProxySetup.
		ncclResult_t r = x->GetProps(dev, &p);
		if (r == ncclSuccess)
			r = x->GetProps(dev, &p);
		if (r == ncclSuccess)
			r = x->Listen(c, dev, h.data(), &lc);
		if (r != ncclSuccess) {
			failed = r;
			failed_dev = dev;
			break;
		}
		lcs.push_back(lc);
	}
	const double took = std::chrono::duration<double>(Clock::now() - t0).count();
	int ret = 0;
	if (other < 0) {
		if (failed != ncclSuccess) {
			fprintf(stderr, "rank %d: device %d failed (%d) on a fully cabled host%s\n",
				rank, failed_dev, (int)failed, LastLog().c_str());
			ret = 50;
		}
	} else {
		// "host <self> (<name>) has no cable to host <other> (this host's
		// links:", where a link not up yet may add candidates, said so.
		char want[160], them[32];
		snprintf(want, sizeof(want), "getProperties: no device %d (there are %d): %s has no "
			 "cable to ", mine, mine, HostLabel(self, ThisHostName()).c_str());
		snprintf(them, sizeof(them), "host %#llx", (unsigned long long)host[other]);
		bool named = false;
		for (auto &line : LogLines()) {
			size_t at = line.find(want), links = line.find(" (this host's links: ");
			if (at == std::string::npos || links == std::string::npos)
				continue;
			std::string to = line.substr(at + strlen(want), links - at - strlen(want));
			named |= to == them || (to.find(them) != std::string::npos &&
						line.find("(not up yet here, so not ruled out: ") !=
							std::string::npos);
		}
		if (failed == ncclSuccess || failed_dev != mine) {
			fprintf(stderr, "rank %d: expected a failure at device %d, got %d at %d\n",
				rank, mine, (int)failed, failed_dev);
			ret = 51;
		} else if (took > 5) {
			fprintf(stderr, "rank %d: the failure took %.1f s\n", rank, took);
			ret = 52;
		} else if (!named) {
			fprintf(stderr, "rank %d: no WARN '%s...'%s\n", rank, want, LastLog().c_str());
			ret = 53;
		}
	}
	// Everyone is done before anyone finalizes (and takes its host out of
	// the directory).
	char byte = 1;
	for (int p = 0; p < n; p++)
		if (p != rank && !ch[p]->Send(&byte, 1))
			return 26;
	for (int p = 0; p < n; p++)
		if (p != rank && !ch[p]->Recv(&byte, 1, timeout_s))
			return 27;
	for (void *lc : lcs)
		if (x->CloseListen(lc))
			return 28;
	if (x->Finalize(c))
		return 29;
	return ret;
}

// Issue 34: four simulated hosts on one machine with the cable between
// slots 0 and 3 missing, as an operator ran NCCL over them and saw
// "getProperties: no device 2 (there are 2)" and nothing else.
TEST_P(PluginNccl, FourHostsOnOneMachineCableMissingNamesBoth)
{
	if (RemoteRole() || KernelBackend())
		GTEST_SKIP() << "simulator hosts in this process's children";
	RunRanks(4, "hosts=4,loop=0,uncabled=0-3", [&](int r, const std::vector<Channel *> &ch) {
		return MachineRank(GetParam(), r, 4, ch, 0, 3, 30);
	});
}

// One rank on each of two hosts of the emulated fabric, over the kernel's
// tb links (tests/kernel/vm-tests-fabric.sh runs it on both):
// TB5_PLUGIN_TEST_REMOTE (a or b) is this host's role and
// TB5_PLUGIN_TEST_OOB a character device that reaches the other host, a
// serial line between the VMs standing in for the network NCCL bootstraps
// over. On every device in turn, so that each cable between the hosts
// carries verified data: the plugin connects through the device it is
// given when that device's link reaches the listener's host.
class PluginRemote : public ::testing::TestWithParam<int> {};

TEST_P(PluginRemote, TwoHosts)
{
	if (!RemoteRole() || !std::getenv("TB5_PLUGIN_TEST_OOB"))
		GTEST_SKIP() << "set TB5_PLUGIN_TEST_REMOTE=a|b and TB5_PLUGIN_TEST_OOB to run";
	LineChannel *line = RemoteLine();
	ASSERT_TRUE(line) << "no answer from the other host over " << std::getenv("TB5_PLUGIN_TEST_OOB");
	ASSERT_TRUE(line->Sync("begin " + TestName(), true, 600));
	const size_t cap = CapBytes(64);
	std::vector<size_t> sizes;
	for (size_t n : {(size_t)0, (size_t)1, (size_t)4097, (size_t)(1 << 20) + 3,
			 (size_t)(4 << 20) + 1, (size_t)(64 << 20) + 3})
		if (n <= cap)
			sizes.push_back(n);
	EXPECT_EQ(PeerRank(GetParam(), RemoteRole() == 'a', *line, sizes, true, TimeoutS()), 0)
		<< "the step that failed (see PeerRank)";
	EXPECT_TRUE(line->Sync("end " + TestName(), true, 600));
}

// The first ready tb5 link of this host (sysfs, TB5_SYSFS_CLASS) whose
// peer is host @peer, "" when none is.
std::string ReadyLinkTo(uint64_t peer)
{
	const char *env = std::getenv("TB5_SYSFS_CLASS");
	const std::string dir = env ? env : "/sys/class/tb5";
	char want[32];
	snprintf(want, sizeof(want), "%#llx", (unsigned long long)peer);
	auto first_line = [](const std::string &path) {
		std::string line;
		FILE *f = std::fopen(path.c_str(), "r");
		if (!f)
			return line;
		char buf[64] = {};
		if (std::fgets(buf, sizeof(buf), f))
			line = buf;
		std::fclose(f);
		line.erase(line.find_last_not_of("\n") + 1);
		return line;
	};
	for (int i = 0; i < 64; i++) {
		const std::string link = "tb5_" + std::to_string(i), at = dir + "/" + link;
		if (first_line(at + "/state") == "ready" && first_line(at + "/peer_id") == want)
			return link;
	}
	return {};
}

// Issue 34: two hosts of the emulated fabric whose cable is pulled (the
// triangle's a and c, tests/kernel/vm-tests-fabric.sh), each with a cable
// to a third host: NCCL's connect fails on both, within seconds, and the
// plugin's message names both hosts (id and name) and the missing cable.
// TB5_PLUGIN_TEST_PULL is a command that pulls the cable under the tb5
// link named as its argument; rank a runs it (the first version to run
// does; the others find the cable gone).
TEST_P(PluginRemote, CableMissingNamesBothHosts)
{
	const char *pull = std::getenv("TB5_PLUGIN_TEST_PULL");
	if (!RemoteRole() || !std::getenv("TB5_PLUGIN_TEST_OOB") || !pull)
		GTEST_SKIP() << "set TB5_PLUGIN_TEST_REMOTE=a|b, TB5_PLUGIN_TEST_OOB and "
				"TB5_PLUGIN_TEST_PULL to run";
	LineChannel *line = RemoteLine();
	ASSERT_TRUE(line) << "no answer from the other host over " << std::getenv("TB5_PLUGIN_TEST_OOB");
	ASSERT_TRUE(line->Sync("begin " + TestName(), true, 600));
	std::string why;
	auto l = Library::Open(PluginPath(), &why);
	ASSERT_TRUE(l) << why;
	auto x = l->Get(GetParam());
	ASSERT_TRUE(x);
	void *c = nullptr;
	ASSERT_EQ(x->Init(&c), ncclSuccess) << LastLog();
	// Each side's listener on its device 0 and its host's name; the host
	// id is the handle's (offset 8, as MachineRank reads it).
	std::array<char, NCCL_NET_HANDLE_MAXSIZE> mine{}, theirs{};
	std::array<char, 64> my_name{}, their_name{};
	std::strncpy(my_name.data(), ThisHostName().c_str(), my_name.size() - 1);
	void *lc = nullptr;
	ASSERT_EQ(x->Listen(c, 0, mine.data(), &lc), ncclSuccess) << LastLog();
	ASSERT_TRUE(line->Send(mine.data(), mine.size()) && line->Send(my_name.data(), my_name.size()));
	ASSERT_TRUE(line->Recv(theirs.data(), theirs.size(), TimeoutS()) &&
		    line->Recv(their_name.data(), their_name.size(), TimeoutS()));
	their_name.back() = 0;
	uint64_t self = 0, peer = 0;
	std::memcpy(&self, mine.data() + 8, sizeof(self));
	std::memcpy(&peer, theirs.data() + 8, sizeof(peer));
	ASSERT_NE(self, peer);
	if (RemoteRole() == 'a') {
		const std::string link = ReadyLinkTo(peer);
		if (!link.empty()) {
			ASSERT_EQ(std::system((std::string(pull) + " " + link).c_str()), 0)
				<< "pulling the cable under " << link;
		}
	}
	// The link to the other host goes away on both ends (the unplug tests
	// of vm-tests-fabric.sh check how); the third host's stays.
	auto t0 = Clock::now();
	while (!ReadyLinkTo(peer).empty()) {
		ASSERT_FALSE(Expired(t0)) << "a link to host " << std::hex << peer << " is still ready";
		std::this_thread::sleep_for(std::chrono::milliseconds(200));
	}
	ASSERT_TRUE(line->Sync("pulled " + TestName(), false, 600));
	// As NCCL's proxy does: connect() until a comm comes back or an error.
	void *sc = nullptr;
	ncclResult_t r = ncclSuccess;
	t0 = Clock::now();
	while (!sc && r == ncclSuccess && !Expired(t0))
		r = x->Connect(c, 0, theirs.data(), &sc);
	const double took = std::chrono::duration<double>(Clock::now() - t0).count();
	EXPECT_NE(r, ncclSuccess) << "connected to a host without a cable to it";
	EXPECT_EQ(sc, nullptr);
	EXPECT_LT(took, 10.0) << "the failure took " << took << " s";
	const std::string want = HostLabel(self, my_name.data()) + " has no cable to " +
				 HostLabel(peer, their_name.data()) + " (this host's links: ";
	bool named = false;
	for (const std::string &log : LogLines()) {
		if (log.find("connect: " + want) == std::string::npos || named)
			continue;
		named = true;
		// For the record (the fabric's log): how long, and what NCCL shows.
		printf("connect failed after %.2f s: %s\n", took, log.c_str());
	}
	EXPECT_TRUE(named) << "no WARN 'connect: " << want << "...'" << LastLog();
	EXPECT_EQ(x->CloseListen(lc), ncclSuccess);
	EXPECT_EQ(x->Finalize(c), ncclSuccess);
	EXPECT_TRUE(line->Sync("end " + TestName(), true, 600));
}

TEST_P(PluginGpu, PropertiesAdvertiseGpuMemory)
{
	for (int d = 0; d < ndev; d++) {
		Props p;
		ASSERT_EQ(api->GetProps(d, &p), ncclSuccess);
		EXPECT_EQ(p.ptr_support, NCCL_PTR_HOST | NCCL_PTR_CUDA | NCCL_PTR_DMABUF) << p.name;
	}
}

TEST_P(PluginGpu, GpuBuffersEveryMixEveryByteChecked)
{
	Rank a, b;
	ASSERT_NO_FATAL_FAILURE(Pair(a, b));
	const size_t len = 2u << 20;
	DevMem sg(len), rg(len);
	Buffer sh(len), rh(len);
	ASSERT_TRUE(sg.p && rg.p && sh.p && rh.p);
	void *sgm = nullptr, *rgm = nullptr, *shm = nullptr, *rhm = nullptr, *offm = nullptr;
	// The send side as regMrDmaBuf, the receive side as regMr(NCCL_PTR_CUDA).
	ASSERT_EQ(api->RegMrDmaBuf(b.sc, sg.p, len, NCCL_PTR_CUDA, 0, sg.fd, &sgm), ncclSuccess)
		<< LastLog();
	ASSERT_EQ(api->RegMrType(a.rc, rg.p, len, NCCL_PTR_CUDA, &rgm), ncclSuccess) << LastLog();
	ASSERT_EQ(api->RegMr(b.sc, sh.p, len, &shm), ncclSuccess);
	ASSERT_EQ(api->RegMr(a.rc, rh.p, len, &rhm), ncclSuccess);
	ASSERT_TRUE(sgm && rgm && shm && rhm);
	uint32_t seed = 1;
	for (size_t n : {(size_t)0, (size_t)1, (size_t)4097, (size_t)(1 << 20) + 1}) {
		ASSERT_NO_FATAL_FAILURE(Exchange(a, b, sg.p, sgm, rg.p, rgm, n, seed++));
		ASSERT_NO_FATAL_FAILURE(Exchange(a, b, sh.p, shm, rg.p, rgm, n, seed++));
		ASSERT_NO_FATAL_FAILURE(Exchange(a, b, sg.p, sgm, rh.p, rhm, n, seed++));
	}
	// Part of the dma-buf, at an offset: bytes from inside that part.
	ASSERT_EQ(api->RegMrDmaBuf(b.sc, sg.p + 8192, len - 8192, NCCL_PTR_CUDA, 8192, sg.fd,
				   &offm), ncclSuccess) << LastLog();
	ASSERT_NO_FATAL_FAILURE(Exchange(a, b, sg.p + 8192 + 100, offm, rg.p, rgm, 70000, seed++));
	for (auto [comm, mh] : {std::pair{b.sc, sgm}, {b.sc, offm}, {b.sc, shm}, {a.rc, rgm},
				{a.rc, rhm}})
		EXPECT_EQ(api->DeregMr(comm, mh), ncclSuccess);
	ClosePair(a, b);
}

TEST_P(PluginGpu, TwoRanksOnThreadsGpuBuffersEightInFlight)
{
	// NCCL's sp mode with GPU buffers: both ranks of one process on the
	// two ends of a loop pair, every frame by reference.
	TwoRanksOnThreads(true, 8);
}

TEST_P(PluginGpu, BadGpuInputRegistersNothing)
{
	Rank a, b;
	ASSERT_NO_FATAL_FAILURE(Pair(a, b));
	DevMem g(64 << 10);
	Buffer h(64 << 10);
	ASSERT_TRUE(g.p && h.p);
	int pfd[2];
	ASSERT_EQ(pipe(pfd), 0);
	void *mh = &mh;
	// An fd that is not a dma-buf: the library refuses it, and says why.
	ClearLog();
	EXPECT_EQ(api->RegMrDmaBuf(b.sc, g.p, g.len, NCCL_PTR_CUDA, 0, pfd[0], &mh),
		  ncclSystemError);
	EXPECT_EQ(mh, nullptr);
	EXPECT_TRUE(Logged("cannot register")) << LastLog();
	close(pfd[0]);
	close(pfd[1]);
	// An offset past the dma-buf's end.
	mh = &mh;
	EXPECT_EQ(api->RegMrDmaBuf(b.sc, g.p, g.len, NCCL_PTR_CUDA, g.len, g.fd, &mh),
		  ncclSystemError);
	EXPECT_EQ(mh, nullptr);
	// Host memory named as CUDA memory.
	mh = &mh;
	EXPECT_EQ(api->RegMrType(a.rc, h.p, h.len, NCCL_PTR_CUDA, &mh), ncclSystemError);
	EXPECT_EQ(mh, nullptr);
	// Misuse: no fd, a memory type NCCL does not have.
	mh = &mh;
	EXPECT_EQ(api->RegMrDmaBuf(b.sc, g.p, g.len, NCCL_PTR_CUDA, 0, -1, &mh), ncclInvalidUsage);
	EXPECT_EQ(mh, nullptr);
	mh = &mh;
	EXPECT_EQ(api->RegMrType(a.rc, h.p, h.len, 0x40, &mh), ncclInvalidUsage);
	EXPECT_EQ(mh, nullptr);
	// Nothing was left behind: the same memory registers and carries bytes.
	void *gm = nullptr, *hm = nullptr;
	ASSERT_EQ(api->RegMrDmaBuf(b.sc, g.p, g.len, NCCL_PTR_CUDA, 0, g.fd, &gm), ncclSuccess);
	ASSERT_EQ(api->RegMr(a.rc, h.p, h.len, &hm), ncclSuccess);
	ASSERT_NO_FATAL_FAILURE(Exchange(a, b, g.p, gm, h.p, hm, 60000, 9));
	EXPECT_EQ(api->DeregMr(b.sc, gm), ncclSuccess);
	EXPECT_EQ(api->DeregMr(a.rc, hm), ncclSuccess);
	ClosePair(a, b);
}

TEST_P(PluginNoGpu, NoEngineNoGpuMemory)
{
	for (int d = 0; d < ndev; d++) {
		Props p;
		ASSERT_EQ(api->GetProps(d, &p), ncclSuccess);
		EXPECT_EQ(p.ptr_support, NCCL_PTR_HOST) << p.name;
	}
	Rank a, b;
	ASSERT_NO_FATAL_FAILURE(Pair(a, b));
	DevMem g(64 << 10);
	ASSERT_TRUE(g.p);
	void *mh = &mh;
	EXPECT_EQ(api->RegMrType(a.rc, g.p, g.len, NCCL_PTR_CUDA, &mh), ncclInvalidUsage);
	EXPECT_EQ(mh, nullptr);
	mh = &mh;
	EXPECT_EQ(api->RegMrDmaBuf(b.sc, g.p, g.len, NCCL_PTR_CUDA, 0, g.fd, &mh),
		  ncclInvalidUsage);
	EXPECT_EQ(mh, nullptr);
	EXPECT_TRUE(Logged("ptrSupport has no")) << LastLog();
	ClosePair(a, b);
}

INSTANTIATE_TEST_SUITE_P(Abi, PluginVersion, ::testing::Range(7, 13), VersionName);
INSTANTIATE_TEST_SUITE_P(Abi, PluginProcesses, ::testing::Range(7, 13), VersionName);
INSTANTIATE_TEST_SUITE_P(Abi, PluginMesh, ::testing::Range(7, 13), VersionName);
INSTANTIATE_TEST_SUITE_P(Abi, PluginNccl, ::testing::Range(7, 13), VersionName);
INSTANTIATE_TEST_SUITE_P(Abi, PluginRemote, ::testing::Range(7, 13), VersionName);
INSTANTIATE_TEST_SUITE_P(Abi, PluginGpu, ::testing::Range(7, 13), VersionName);
INSTANTIATE_TEST_SUITE_P(Abi, PluginNoGpu, ::testing::Range(7, 13), VersionName);
