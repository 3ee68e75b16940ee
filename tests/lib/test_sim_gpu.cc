// SPDX-License-Identifier: MIT
//
// test_sim_gpu.cc - GPU memory over the simulator, through the stand-in
// DMA engine (TB5_SIM dma=standin: "device memory" is memfds it allocates,
// sim/standin_mem.hpp; copies are plain): tb5_reg_gpu() by address and by
// dma-buf, bad input, transfers between every mix of host and GPU ends,
// by reference (an exported allocation) and through the ring (one that
// cannot be exported), offsets, receives larger than the send, two
// processes, deregistration with transfers in flight, and the link model
// pacing GPU frames as host frames. The CUDA engine shares every line but
// its copy, pointer and IPC calls (sim/cuda_dma.cc), which need a GPU.
#include <gtest/gtest.h>

#include <dirent.h>
#include <dlfcn.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "gpu_echo.hpp"
#include "lib_harness.hpp"
#include "sim/standin_mem.hpp"

namespace {

using namespace tb5libtest;
using tb5::sim::standin_alloc;
using tb5::sim::standin_free;

constexpr uint64_t kEchoService = 0x67707565;	// "gpue"

// Stand-in device memory for one test.
struct DevBuf {
	uint8_t *p = nullptr;
	size_t len = 0;
	int fd = -1;

	// @priv: memory the engine never exports (as a cuMem allocation
	// made without a POSIX fd handle type).
	explicit DevBuf(size_t n, bool priv = false) : len(n)
	{
		p = static_cast<uint8_t *>(standin_alloc(n, &fd, priv));
		EXPECT_NE(p, nullptr) << strerror(errno);
	}
	~DevBuf()
	{
		if (p)
			standin_free(p, len, fd);
	}
	// Memory the engine cannot export (its memfd is closed): its frames
	// go through the ring, two DMAs.
	void unexportable()
	{
		close(fd);
		fd = -1;
	}
	DevBuf(const DevBuf &) = delete;
	DevBuf &operator=(const DevBuf &) = delete;
};

size_t count_fds()
{
	size_t n = 0;
	DIR *d = opendir("/proc/self/fd");

	while (d && readdir(d))
		n++;
	if (d)
		closedir(d);
	return n;
}

// Mappings of stand-in memory in this process: its own and the peers' it
// has opened.
size_t standin_maps()
{
	std::ifstream maps("/proc/self/maps");
	std::string line;
	size_t n = 0;

	while (std::getline(maps, line))
		n += line.find(tb5::sim::kStandinMemName) != std::string::npos;
	return n;
}

// Runs @fn in a child that is a new host of its own fabric with @opts;
// its exit status (fn's return).
int in_child(const std::string &opts, const std::function<int()> &fn)
{
	fflush(nullptr);
	pid_t pid = fork();

	if (pid == 0) {
		use_simulator("tb5test-gpuc", opts);
		exit(fn());	// leaving the fabric at exit
	}
	int st = 0;

	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

class SimGpu : public ::testing::Test {
protected:
	void SetUp() override
	{
		std::string na, nb;

		ASSERT_TRUE(find_loop_pair(na, nb)) << tb5_last_error();
		ASSERT_EQ(a.open(na), 0) << tb5_last_error();
		ASSERT_EQ(b.open(nb), 0) << tb5_last_error();
		fds = count_fds();
	}

	// A failed registration: @err, a message naming @words, nothing
	// registered (no mr, no export left open).
	void refused(int ret, tb5_mr *mr, int err, const char *words)
	{
		EXPECT_EQ(ret, err) << tb5_last_error();
		EXPECT_EQ(mr, nullptr);
		EXPECT_NE(std::string(tb5_last_error()).find(words), std::string::npos)
			<< "\"" << tb5_last_error() << "\" should say " << words;
		EXPECT_EQ(count_fds(), fds);
	}

	// @len bytes from @smr at @soff to @rmr at @roff (a receive of
	// @rlen), the pattern checked through @rp; the sender's bytes at
	// @sp.
	void transfer(tb5_mr *smr, uint8_t *sp, uint64_t soff, tb5_mr *rmr,
		      uint8_t *rp, uint64_t roff, uint64_t len, uint64_t rlen,
		      uint32_t seed)
	{
		Conn c;

		ASSERT_TRUE(connect_pair(b, a, 0x100 + seed, c));
		fill_pattern(sp + soff, len, seed);
		memset(rp + roff, 0xa5, rlen);
		ASSERT_EQ(tb5_recv(c.server, rmr, roff, rlen, 1, 1), 0);
		ASSERT_EQ(tb5_send(c.client, smr, soff, len, 1, 2), 0);
		auto r = await(b, [](const tb5_wc &w) { return w.kind == TB5_WC_RECV; },
			       { &a }, 30);
		auto s = await(a, [](const tb5_wc &w) { return w.kind == TB5_WC_SEND; },
			       { &b }, 30);
		ASSERT_TRUE(r && s);
		EXPECT_EQ(r->status, 0);
		EXPECT_EQ(s->status, 0);
		EXPECT_EQ(r->bytes, len);
		EXPECT_EQ(check_pattern(rp + roff, len, seed), -1);
		// A receive larger than the send: nothing past the message.
		for (uint64_t i = len; i < rlen; i++)
			ASSERT_EQ(rp[roff + i], 0xa5) << "byte " << i << " of the receive";
		EXPECT_EQ(tb5_endpoint_close(c.client), 0);
		EXPECT_EQ(tb5_endpoint_close(c.server), 0);
		EXPECT_EQ(tb5_endpoint_close(c.listener), 0);
	}

	Dev a, b;
	size_t fds = 0;
};

TEST_F(SimGpu, LinksWithADmaEngineSayTheyTakeGpuMemory)
{
	tb5_link_info info;

	ASSERT_EQ(tb5_query(a.dev, &info), 0);
	EXPECT_TRUE(info.caps & TB5_CAP_GPU_MEM);
	EXPECT_TRUE(info.caps & TB5_CAP_HOST_MEM);
	EXPECT_FALSE(info.caps & TB5_CAP_DMABUF);
}

TEST_F(SimGpu, RegistersByAddressAndByDmabufWithItsOffset)
{
	DevBuf g(64 << 10);
	tb5_mr *m1 = nullptr, *m2 = nullptr, *m3 = nullptr;

	fds = count_fds();

	ASSERT_EQ(tb5_reg_gpu(a.dev, g.p, g.len, -1, 0, &m1), 0) << tb5_last_error();
	ASSERT_EQ(tb5_reg_gpu(a.dev, g.p + 4096, 8192, g.fd, 4096, &m2), 0)
		<< tb5_last_error();
	// A region anywhere inside, unaligned.
	ASSERT_EQ(tb5_reg_gpu(a.dev, g.p + 7, 100, g.fd, 7, &m3), 0) << tb5_last_error();
	// One export of the allocation, shared by its regions: one fd more.
	EXPECT_EQ(count_fds(), fds + 1);
	EXPECT_EQ(tb5_dereg(m1), 0);
	EXPECT_EQ(tb5_dereg(m2), 0);
	EXPECT_EQ(count_fds(), fds + 1);
	EXPECT_EQ(tb5_dereg(m3), 0);
	EXPECT_EQ(count_fds(), fds);
}

TEST_F(SimGpu, RefusesBadInputClearlyAndKeepsNothing)
{
	DevBuf g(64 << 10);
	std::vector<uint8_t> host(4096);
	tb5_mr *mr = nullptr;
	FILE *plain = tmpfile();

	ASSERT_TRUE(plain);
	ASSERT_EQ(ftruncate(fileno(plain), 1 << 20), 0);
	fds = count_fds();
	refused(tb5_reg_gpu(a.dev, g.p, 0, -1, 0, &mr), mr, -EINVAL, "length > 0");
	refused(tb5_reg_gpu(a.dev, g.p, SIZE_MAX, -1, 0, &mr), mr, -EINVAL, "wraps");
	refused(tb5_reg_gpu(a.dev, nullptr, 4096, -1, 0, &mr), mr, -EINVAL, "address");
	refused(tb5_reg_gpu(a.dev, host.data(), host.size(), -1, 0, &mr), mr, -EINVAL,
		"not device memory");
	refused(tb5_reg_gpu(a.dev, g.p, g.len + 1, -1, 0, &mr), mr, -EINVAL,
		"past the end of its stand-in device allocation");
	refused(tb5_reg_gpu(a.dev, g.p, 4096, fileno(plain), 0, &mr), mr, -EINVAL,
		"is not a dma-buf");
	refused(tb5_reg_gpu(a.dev, g.p, 4096, -2, 0, &mr), mr, -EBADF, "-1 for none");
	refused(tb5_reg_gpu(a.dev, g.p, 4096, 1000, 0, &mr), mr, -EBADF, "fd 1000");
	refused(tb5_reg_gpu(a.dev, g.p, 4096, g.fd, g.len, &mr), mr, -EINVAL,
		"past the end of dma-buf");
	refused(tb5_reg_gpu(a.dev, g.p, 4096, g.fd, UINT64_MAX - 10, &mr), mr, -EINVAL,
		"overflow");
	refused(tb5_reg_gpu(a.dev, g.p + 8192, 4096, g.fd, 4096, &mr), mr, -EINVAL,
		"not the offset");
	// Another allocation's dma-buf.
	DevBuf other(64 << 10);
	fds = count_fds();
	refused(tb5_reg_gpu(a.dev, g.p, 4096, other.fd, 0, &mr), mr, -EINVAL,
		"another allocation");
	// A dma-buf alone is not how the simulator takes GPU memory.
	EXPECT_EQ(tb5_reg_dmabuf(a.dev, g.fd, 0, 4096, &mr), -EOPNOTSUPP);
	EXPECT_NE(std::string(tb5_last_error()).find("tb5_reg_gpu"), std::string::npos);
	fclose(plain);
}

TEST_F(SimGpu, WithoutAnEngineGpuMemoryIsRefusedSayingWhy)
{
	// dma=off, and dma=cuda on a machine without CUDA: no engine, and
	// the message says which.
	auto no_engine = [](const char *why) {
		return [why]() {
			tb5_link_info *links = nullptr;
			size_t n = 0;
			tb5_device *dev = nullptr;
			tb5_mr *mr = nullptr;
			DevBuf g(4096);

			if (tb5_list_links(&links, &n) || !n || tb5_open(links[0].name, &dev))
				return 10;
			const bool gpu = links[0].caps & TB5_CAP_GPU_MEM;

			tb5_free_link_list(links);
			if (gpu)
				return 0;	// CUDA is here (why is "cuInit" then)
			int ret = tb5_reg_gpu(dev, g.p, g.len, -1, 0, &mr);
			std::string msg = tb5_last_error();

			fprintf(stderr, "child: %d %s\n", ret, msg.c_str());
			tb5_close(dev);
			if (ret != -EOPNOTSUPP || mr)
				return 11;
			if (msg.find("no DMA engine") == std::string::npos ||
			    msg.find(why) == std::string::npos)
				return 12;
			return 0;
		};
	};

	EXPECT_EQ(in_child("hosts=1,loop=1,dma=off", no_engine("dma=off")), 0);
	// An engine that does not exist is refused with those that do.
	EXPECT_EQ(in_child("hosts=1,loop=1,dma=gpu", [] {
		tb5_link_info *links = nullptr;
		size_t n = 0;

		return tb5_list_links(&links, &n) == -EINVAL &&
				       strstr(tb5_last_error(), "dma=gpu") &&
				       strstr(tb5_last_error(), "cuda, standin") ?
			       0 :
			       1;
	}),
		  0);
	const bool cuda = in_child("hosts=1,loop=1,dma=cuda", [] {
		tb5_link_info *links = nullptr;
		size_t n = 0;

		if (tb5_list_links(&links, &n) || !n)
			return 2;
		int gpu = (links[0].caps & TB5_CAP_GPU_MEM) ? 1 : 0;

		tb5_free_link_list(links);
		return gpu;
	}) == 1;
	if (!cuda) {
		EXPECT_EQ(in_child("hosts=1,loop=1,dma=cuda", no_engine("libcuda.so.1")), 0);
	}
}

// Every mix of host and GPU ends, by reference and through the ring, with
// offsets on both sides and a receive larger than the send.
TEST_F(SimGpu, CarriesEveryMixOfHostAndGpuEnds)
{
	constexpr size_t kLen = 4 << 20;
	enum Kind { kHost, kGpu, kGpuRing };
	const char *names[] = { "host", "gpu", "gpu-through-the-ring" };
	uint32_t seed = 1;

	for (Kind sk : { kHost, kGpu, kGpuRing }) {
		for (Kind rk : { kHost, kGpu, kGpuRing }) {
			if (sk == kHost && rk == kHost)
				continue;	// the other suites' business
			SCOPED_TRACE(std::string(names[sk]) + " to " + names[rk]);
			std::vector<uint8_t> sh(kLen), rh(kLen);
			DevBuf sg(kLen), rg(kLen);

			if (sk == kGpuRing)
				sg.unexportable();
			if (rk == kGpuRing)
				rg.unexportable();
			fds = count_fds();
			uint8_t *sp = sk == kHost ? sh.data() : sg.p;
			uint8_t *rp = rk == kHost ? rh.data() : rg.p;
			tb5_mr *smr = nullptr, *rmr = nullptr;

			ASSERT_EQ(sk == kHost ? tb5_reg_host(a.dev, sp, kLen, &smr) :
						tb5_reg_gpu(a.dev, sp, kLen, -1, 0, &smr),
				  0) << tb5_last_error();
			ASSERT_EQ(rk == kHost ? tb5_reg_host(b.dev, rp, kLen, &rmr) :
						tb5_reg_gpu(b.dev, rp, kLen, sk == kGpuRing ? -1 : rg.fd,
							    0, &rmr),
				  0) << tb5_last_error();
			for (uint64_t len : { uint64_t(1), uint64_t(4096), uint64_t(4097),
					      uint64_t(1 << 20) + 3, uint64_t(kLen - 8192) }) {
				SCOPED_TRACE(len);
				transfer(smr, sp, 4096 + 7, rmr, rp, 123, len,
					 std::min<uint64_t>(len + 1000, kLen - 123), seed++);
				if (HasFatalFailure())
					return;
			}
			EXPECT_EQ(tb5_dereg(smr), 0) << tb5_last_error();
			EXPECT_EQ(tb5_dereg(rmr), 0) << tb5_last_error();
			EXPECT_EQ(count_fds(), fds);	// the exports withdrawn
		}
	}
}

// Memory the engine cannot export registers, says on stderr why its
// frames go through host memory, and carries them there; memory it can
// export says nothing. (A child: a process says so its first few times.)
TEST_F(SimGpu, MemoryThatCannotBeExportedSaysWhyAndTakesTheRing)
{
	EXPECT_EQ(in_child("hosts=1,loop=1,dma=standin", [] {
		constexpr size_t kLen = 2 << 20;
		std::string na, nb;
		Dev x, y;
		Conn c;
		DevBuf priv(kLen, true), rg(kLen);
		tb5_mr *smr = nullptr, *rmr = nullptr;
		int ret = 0;

		if (!find_loop_pair(na, nb) || x.open(na) || y.open(nb))
			return 10;
		const size_t before = count_fds();
		std::string said = stderr_of([&] {
			ret = tb5_reg_gpu(x.dev, priv.p, kLen, priv.fd, 0, &smr);
		});

		fprintf(stderr, "private: %d, said: %s", ret, said.c_str());
		if (ret || !smr)
			return 11;
		if (said.find("is not exported, its frames go through host memory") ==
			    std::string::npos ||
		    said.find("private") == std::string::npos)
			return 12;
		if (count_fds() != before)
			return 13;	// nothing exported, no fd kept
		said = stderr_of([&] { ret = tb5_reg_gpu(y.dev, rg.p, kLen, -1, 0, &rmr); });
		if (ret || !said.empty())
			return 14;
		if (!connect_pair(y, x, 0x280, c))
			return 15;
		fill_pattern(priv.p + 5, kLen - 4096, 28);
		if (tb5_recv(c.server, rmr, 3, kLen - 3, 1, 1) ||
		    tb5_send(c.client, smr, 5, kLen - 4096, 1, 2))
			return 16;
		auto r = await(y, [](const tb5_wc &w) { return w.kind == TB5_WC_RECV; },
			       { &x }, 30);
		auto s = await(x, [](const tb5_wc &w) { return w.kind == TB5_WC_SEND; },
			       { &y }, 30);
		if (!r || !s || r->status || s->status || r->bytes != kLen - 4096)
			return 17;
		if (check_pattern(rg.p + 3, kLen - 4096, 28) != -1)
			return 18;
		tb5_endpoint_close(c.client);
		tb5_endpoint_close(c.server);
		tb5_endpoint_close(c.listener);
		return tb5_dereg(smr) || tb5_dereg(rmr) ? 19 : 0;
	}),
		  0);
}

TEST_F(SimGpu, ARegionInUseIsNotDeregisteredAndLeavesNothingOnceDone)
{
	DevBuf sg(1 << 20), rg(1 << 20);
	tb5_mr *smr = nullptr, *rmr = nullptr;
	Conn c;

	fds = count_fds();

	ASSERT_EQ(tb5_reg_gpu(a.dev, sg.p, sg.len, sg.fd, 0, &smr), 0) << tb5_last_error();
	ASSERT_EQ(tb5_reg_gpu(b.dev, rg.p, rg.len, -1, 0, &rmr), 0) << tb5_last_error();
	ASSERT_TRUE(connect_pair(b, a, 0x200, c));
	// A send waits for its receive, a receive for its send: both in use.
	fill_pattern(sg.p, sg.len, 5);
	ASSERT_EQ(tb5_send(c.client, smr, 0, sg.len, 1, 1), 0);
	for (int i = 0; i < 50; i++) {
		a.poll();
		b.poll();
	}
	EXPECT_EQ(tb5_dereg(smr), -EBUSY);
	EXPECT_NE(std::string(tb5_last_error()).find("in use"), std::string::npos);
	ASSERT_EQ(tb5_recv(c.server, rmr, 0, rg.len, 1, 2), 0);
	EXPECT_EQ(tb5_dereg(rmr), -EBUSY);
	ASSERT_TRUE(await(b, [](const tb5_wc &w) { return w.kind == TB5_WC_RECV; }, { &a }));
	ASSERT_TRUE(await(a, [](const tb5_wc &w) { return w.kind == TB5_WC_SEND; }, { &b }));
	EXPECT_EQ(check_pattern(rg.p, rg.len, 5), -1);
	// A receive cancelled by a close frees its region too.
	ASSERT_EQ(tb5_recv(c.server, rmr, 0, rg.len, 1, 3), 0);
	EXPECT_EQ(tb5_dereg(rmr), -EBUSY);
	EXPECT_EQ(tb5_endpoint_close(c.server), 0);
	EXPECT_EQ(tb5_dereg(rmr), 0) << tb5_last_error();
	EXPECT_EQ(tb5_dereg(smr), 0) << tb5_last_error();
	EXPECT_EQ(count_fds(), fds);
}

// rate=1 (1 Gb/s): 1 MiB of GPU frames takes the wire time of 1 MiB of
// host frames, at least 8.4 ms, however fast the copies are.
TEST_F(SimGpu, TheLinkModelPacesGpuFramesAsHostFrames)
{
	auto timed = [](bool gpu) {
		return [gpu]() {
			std::string na, nb;
			Dev x, y;
			Conn c;
			DevBuf sg(1 << 20), rg(1 << 20);
			tb5_mr *smr = nullptr, *rmr = nullptr;

			if (!find_loop_pair(na, nb) || x.open(na) || y.open(nb))
				return 10;
			if (gpu ? tb5_reg_gpu(x.dev, sg.p, sg.len, -1, 0, &smr) ||
					  tb5_reg_gpu(y.dev, rg.p, rg.len, -1, 0, &rmr) :
				  tb5_reg_host(x.dev, sg.p, sg.len, &smr) ||
					  tb5_reg_host(y.dev, rg.p, rg.len, &rmr))
				return 11;
			if (!connect_pair(y, x, 0x300, c))
				return 12;
			auto t0 = std::chrono::steady_clock::now();

			if (tb5_recv(c.server, rmr, 0, rg.len, 1, 1) ||
			    tb5_send(c.client, smr, 0, sg.len, 1, 2))
				return 13;
			if (!await(y, [](const tb5_wc &w) { return w.kind == TB5_WC_RECV; },
				   { &x }, 30))
				return 14;
			double ms = std::chrono::duration<double, std::milli>(
					    std::chrono::steady_clock::now() - t0).count();
			fprintf(stderr, "%s: 1 MiB in %.2f ms at rate=1\n",
				gpu ? "gpu" : "host", ms);
			return ms >= 8.3 ? 0 : 15;
		};
	};

	EXPECT_EQ(in_child("hosts=1,loop=1,dma=standin,rate=1", timed(false)), 0);
	EXPECT_EQ(in_child("hosts=1,loop=1,dma=standin,rate=1", timed(true)), 0);
}

// A program built against 0.2.0's tb5_reg_gpu() binds it at TB5_1.3
// (libtb5.map).
TEST(SimGpuAbi, RegGpuIsExportedAtTb5_1_3)
{
#ifdef TB5_TEST_STATIC
	GTEST_SKIP() << "libtb5 is a static archive in this build: no version nodes";
#else
	EXPECT_NE(dlvsym(RTLD_DEFAULT, "tb5_reg_gpu", "TB5_1.3"), nullptr);
	EXPECT_EQ(dlvsym(RTLD_DEFAULT, "tb5_reg_gpu", "TB5_1.2"), nullptr);
#endif
}

// --- two processes ---

// The child: receives into its GPU memory and sends it back from there,
// until the peer closes; then deregisters it and waits to be killed.
[[noreturn]] void gpu_echo_server()
{
	std::string link = wait_peer_link(20);
	Dev d;
	DevBuf g(8 << 20);
	tb5_endpoint *l = nullptr, *e = nullptr;
	tb5_mr *mr = nullptr;

	if (link.empty() || d.open(link) ||
	    tb5_reg_gpu(d.dev, g.p, g.len, g.fd, 0, &mr) ||
	    tb5_endpoint_listen(d.dev, kEchoService, TB5_LISTEN_WELL_KNOWN, 0, &l))
		_exit(10);
	while (tb5_endpoint_accept(l, 0, &e) == -EAGAIN)
		if (tb5_wait(d.dev, 20000) == -ETIMEDOUT)
			_exit(11);
	int ret = echo_region(d, e, mr, g.len);

	if (ret)
		_exit(ret);
	tb5_endpoint_close(e);
	// Withdrawn: the peer closes what it opened of it.
	if (tb5_dereg(mr))
		_exit(16);
	for (;;)
		tb5_wait(d.dev, 100);
}

TEST(SimGpuTwoHosts, EchoesBetweenGpuMemoryOfTwoProcesses)
{
	pid_t child = fork();

	ASSERT_GE(child, 0);
	if (child == 0)
		gpu_echo_server();
	std::string link = wait_peer_link(20);
	ASSERT_FALSE(link.empty());
	Dev d(link);
	DevBuf s(8 << 20), r(8 << 20), ring(8 << 20), priv(8 << 20, true);
	std::vector<uint8_t> h(8 << 20);
	tb5_mr *smr = nullptr, *rmr = nullptr, *hmr = nullptr, *ringmr = nullptr,
	       *privmr = nullptr;

	ring.unexportable();
	// Ours alone: the child's exports are opened at our registrations
	// (those it made by then) or at its first frame.
	const size_t own = standin_maps();

	ASSERT_EQ(tb5_reg_gpu(d.dev, s.p, s.len, s.fd, 0, &smr), 0) << tb5_last_error();
	ASSERT_EQ(tb5_reg_gpu(d.dev, r.p, r.len, -1, 0, &rmr), 0) << tb5_last_error();
	ASSERT_EQ(tb5_reg_gpu(d.dev, ring.p, ring.len, -1, 0, &ringmr), 0)
		<< tb5_last_error();
	ASSERT_EQ(tb5_reg_gpu(d.dev, priv.p, priv.len, priv.fd, 0, &privmr), 0)
		<< tb5_last_error();
	ASSERT_EQ(tb5_reg_host(d.dev, h.data(), h.size(), &hmr), 0);
	tb5_endpoint *e = connect_service(d, kEchoService);

	ASSERT_TRUE(e);
	struct Leg {
		tb5_mr *from;
		uint8_t *sp;
		tb5_mr *to;
		uint8_t *rp;
		const char *what;
	};
	const Leg legs[] = {
		{ smr, s.p, rmr, r.p, "gpu to gpu to gpu, by reference" },
		{ hmr, h.data(), rmr, r.p, "host to gpu to gpu" },
		{ smr, s.p, hmr, h.data(), "gpu to gpu to host" },
		{ ringmr, ring.p, rmr, r.p, "gpu through the ring to gpu to gpu" },
		{ privmr, priv.p, rmr, r.p, "private gpu through the ring to gpu to gpu" },
	};
	uint32_t seed = 70;

	for (const Leg &leg : legs) {
		for (size_t len : { size_t(1), size_t(4097), size_t(3 << 20) + 5 }) {
			SCOPED_TRACE(std::string(leg.what) + ", " + std::to_string(len));
			fill_pattern(leg.sp + 64, len, seed);
			ASSERT_NO_FATAL_FAILURE(
				echo_once(d, e, leg.from, 64, len, leg.to, 32, len + 4096));
			ASSERT_EQ(check_pattern(leg.rp + 32, len, seed), -1);
			seed++;
		}
	}
	// We opened the child's memory to receive from it by reference.
	EXPECT_GT(standin_maps(), own);
	ASSERT_EQ(tb5_endpoint_close(e), 0);
	// The child deregisters its region: we close what we opened of it.
	EXPECT_TRUE(poll_until({ &d }, [&] { return standin_maps() == own; }, 10))
		<< standin_maps() << " stand-in mappings, " << own << " of our own";
	EXPECT_EQ(tb5_dereg(smr), 0);
	EXPECT_EQ(tb5_dereg(rmr), 0);
	EXPECT_EQ(tb5_dereg(ringmr), 0);
	EXPECT_EQ(tb5_dereg(privmr), 0);
	EXPECT_EQ(tb5_dereg(hmr), 0);
	int st = 0;

	EXPECT_EQ(waitpid(child, &st, WNOHANG), 0) << "the child ended early: " << st;
	kill(child, SIGKILL);
	waitpid(child, nullptr, 0);
}

// The child: a host without a DMA engine (dma=off) that echoes from host
// memory.
[[noreturn]] void host_echo_server()
{
	std::string spec = std::string(getenv("TB5_SIM")) + ",dma=off";
	std::vector<uint8_t> buf(8 << 20);
	tb5_endpoint *l = nullptr, *e = nullptr;
	tb5_mr *mr = nullptr;
	tb5_link_info info;
	Dev d;

	setenv("TB5_SIM", spec.c_str(), 1);
	std::string link = wait_peer_link(20);

	if (link.empty() || d.open(link) || tb5_query(d.dev, &info) ||
	    (info.caps & TB5_CAP_GPU_MEM) ||
	    tb5_reg_host(d.dev, buf.data(), buf.size(), &mr) ||
	    tb5_endpoint_listen(d.dev, kEchoService, TB5_LISTEN_WELL_KNOWN, 0, &l))
		_exit(10);
	while (tb5_endpoint_accept(l, 0, &e) == -EAGAIN)
		if (tb5_wait(d.dev, 20000) == -ETIMEDOUT)
			_exit(11);
	_exit(echo_region(d, e, mr, buf.size()));
}

// A peer without an engine takes GPU frames through the ring, from memory
// that would otherwise go by reference.
TEST(SimGpuTwoHosts, APeerWithoutAnEngineTakesGpuFramesThroughTheRing)
{
	pid_t child = fork();

	ASSERT_GE(child, 0);
	if (child == 0)
		host_echo_server();
	std::string link = wait_peer_link(20);
	ASSERT_FALSE(link.empty());
	Dev d(link);
	DevBuf s(8 << 20), r(8 << 20);
	tb5_mr *smr = nullptr, *rmr = nullptr;

	ASSERT_EQ(tb5_reg_gpu(d.dev, s.p, s.len, s.fd, 0, &smr), 0) << tb5_last_error();
	ASSERT_EQ(tb5_reg_gpu(d.dev, r.p, r.len, -1, 0, &rmr), 0) << tb5_last_error();
	tb5_endpoint *e = connect_service(d, kEchoService);

	ASSERT_TRUE(e);
	for (size_t len : { size_t(1), size_t(4097), size_t(3 << 20) + 5 }) {
		SCOPED_TRACE(len);
		fill_pattern(s.p, len, uint32_t(len));
		ASSERT_NO_FATAL_FAILURE(echo_once(d, e, smr, 0, len, rmr, 0, r.len));
		ASSERT_EQ(check_pattern(r.p, len, uint32_t(len)), -1);
	}
	EXPECT_EQ(close_and_reap(e, child), 0) << "the close (-1), or the child's status";
	EXPECT_EQ(tb5_dereg(smr), 0);
	EXPECT_EQ(tb5_dereg(rmr), 0);
}

} // namespace

int main(int argc, char **argv)
{
	::testing::InitGoogleTest(&argc, argv);
	// TB5_TEST_SIM_OPTS adds settings (ctest runs the suite again with
	// copy=2: the same tests through the copy engine).
	const char *more = getenv("TB5_TEST_SIM_OPTS");

	use_simulator("tb5test-gpu", std::string("hosts=2,loop=1,dma=standin") +
			     (more && *more ? std::string(",") + more : ""));
	return RUN_ALL_TESTS();
}
