// SPDX-License-Identifier: MIT
//
// test_copies.cc - the copies of the data path, on either backend: every
// byte lands where it belongs and nowhere else, completions never come
// before their bytes, with many endpoints, both directions and threads at
// once (Copies: over a loop pair; CopiesTwoHosts: between two hosts).
//
// Over the simulator the copies go through its copy engine (TB5_SIM
// copy=2 is forced, so this runs the parallel path on any machine), whose
// worker threads come and go with the devices, and with fork and exit
// (SimCopyThreads, SimCopyConfig: the simulator's only).
//
// With TB5_TEST_BACKEND=kernel the same traffic runs over tb5.ko's loop
// pair (the kernel copies in its own work items: the Sim* tests and those
// about the workers skip, saying so), and CopiesTwoHosts between two hosts
// of the emulated fabric, the other running this binary with
// TB5_TEST_ROLE=serve.
#include <gtest/gtest.h>

#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <thread>
#include <vector>

#include "lib_harness.hpp"

namespace {

using namespace tb5libtest;
using clk = std::chrono::steady_clock;

constexpr size_t kBig = 64u << 20;

bool is_send(const tb5_wc &w) { return w.kind == TB5_WC_SEND; }
bool is_recv(const tb5_wc &w) { return w.kind == TB5_WC_RECV; }

// Threads of this process named tb5-copy/<n> (the copy workers).
int copy_threads()
{
	DIR *d = opendir("/proc/self/task");
	int n = 0;

	if (!d)
		return -1;
	while (struct dirent *e = readdir(d)) {
		if (e->d_name[0] == '.')
			continue;
		std::ifstream f(std::string("/proc/self/task/") + e->d_name + "/comm");
		std::string name;

		if (std::getline(f, name) && name.rfind("tb5-copy/", 0) == 0)
			n++;
	}
	closedir(d);
	return n;
}

// Waits for @pid; its exit status, or -1 if it did not end within @s.
int wait_child(pid_t pid, double s = 120)
{
	auto end = clk::now() + std::chrono::duration<double>(s);
	int st = 0;

	while (waitpid(pid, &st, WNOHANG) == 0) {
		if (clk::now() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return -1;
		}
		usleep(2000);
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

// One registered buffer with a guard area after what it carries.
struct Buf {
	std::vector<uint8_t> mem;
	tb5_mr *mr = nullptr;
	tb5_device *dev = nullptr;

	void reg(tb5_device *d, size_t len)
	{
		mem.assign(len, 0);
		dev = d;
		ASSERT_EQ(tb5_reg_host(d, mem.data(), mem.size(), &mr), 0)
			<< tb5_last_error();
	}
	~Buf()
	{
		if (mr)
			tb5_dereg(mr);
	}
};

// For a forked child, where gtest's assertions cannot stop it: 8 MiB from
// @b to @a over a new connection (@tag), checked byte by byte against
// @seed's pattern. 0: arrived intact; 1: could not be set up or sent;
// 2: did not arrive, or not intact.
int move_8mib(Dev &a, Dev &b, uint32_t tag, uint32_t seed)
{
	constexpr size_t kLen = 8u << 20;
	Buf s, r;
	Conn cn;

	s.reg(b.dev, kLen);
	r.reg(a.dev, kLen);
	fill_pattern(s.mem.data(), kLen, seed);
	if (!connect_pair(a, b, tag, cn) ||
	    tb5_recv(cn.server, r.mr, 0, kLen, 1, 1) ||
	    tb5_send(cn.client, s.mr, 0, kLen, 1, 1))
		return 1;
	auto rw = await(a, is_recv, { &b }, 60);

	if (!rw || rw->status || check_pattern(r.mem.data(), kLen, seed) != -1)
		return 2;
	return 0;
}

class Copies : public ::testing::Test {
protected:
	void SetUp() override
	{
		ASSERT_TRUE(find_loop_pair(na, nb)) << tb5_last_error();
		ASSERT_EQ(a.open(na), 0) << tb5_last_error();
		ASSERT_EQ(b.open(nb), 0) << tb5_last_error();
	}

	std::string na, nb;
	Dev a, b;
	Conn c;
};

constexpr const char *kWorkers = "the copy engine's worker threads (TB5_SIM copy=N)";

TEST_F(Copies, TwoWorkersRunWhileADeviceIsOpen)
{
	TB5_SIM_ONLY(kWorkers);
	EXPECT_EQ(copy_threads(), 2) << "TB5_SIM asked for copy=2";
}

TEST_F(Copies, EveryByteOfEverySizeArrivesAndNothingElse)
{
	const size_t sizes[] = { 0, 1, 7, 4095, 4096, 4097, 65535, 65536, 65537,
				 (256 << 10) - 1, 256 << 10, (256 << 10) + 1,
				 (1 << 20) + 3, (4 << 20) + 5, (4 << 20) + 12289,
				 (16 << 20) + 7, kBig };
	const size_t soff = 3, roff = 5, guard = 8192;
	Buf s, r;

	s.reg(b.dev, kBig + soff);
	r.reg(a.dev, kBig + roff + guard);
	ASSERT_TRUE(connect_pair(a, b, 0x20, c));
	uint32_t seed = 1;

	for (size_t len : sizes) {
		SCOPED_TRACE(len);
		fill_pattern(s.mem.data() + soff, len, seed);
		memset(r.mem.data(), 0xee, r.mem.size());
		ASSERT_EQ(tb5_recv(c.server, r.mr, roff, kBig, 5, seed), 0);
		ASSERT_EQ(tb5_send(c.client, s.mr, soff, len, 5, seed), 0)
			<< tb5_last_error();
		auto rw = await(a, is_recv, { &b }, 60);
		auto sw = await(b, is_send, { &a }, 60);
		ASSERT_TRUE(rw && sw);
		EXPECT_EQ(rw->status, 0);
		EXPECT_EQ(rw->bytes, len);
		EXPECT_EQ(rw->user_data, seed);
		EXPECT_EQ(sw->status, 0);
		ASSERT_EQ(check_pattern(r.mem.data() + roff, len, seed), -1);
		for (size_t i = 0; i < roff; i++)
			ASSERT_EQ(r.mem[i], 0xee) << "byte before the receive";
		for (size_t i = roff + len; i < std::min(r.mem.size(), roff + len + guard); i++)
			ASSERT_EQ(r.mem[i], 0xee) << "byte " << i - roff << " written";
		seed++;
	}
}

// A window of messages both ways over many endpoints at once: batches
// of frames from many messages, split across threads.
TEST_F(Copies, ManyEndpointsBothWaysAtOnce)
{
	constexpr int kEps = 16, kMsgs = 3;
	constexpr size_t kMax = (1 << 20) + 4097;
	Conn conns[kEps];
	Buf sa, sb, ra, rb;	// send/receive areas of a (server) and b (client)
	const size_t slots = size_t(kEps) * kMsgs;

	sa.reg(a.dev, slots * kMax);
	sb.reg(b.dev, slots * kMax);
	ra.reg(a.dev, slots * kMax);
	rb.reg(b.dev, slots * kMax);
	for (int e = 0; e < kEps; e++)
		ASSERT_TRUE(connect_pair(a, b, 0x100 + e, conns[e]));
	auto len_of = [](size_t slot) { return kMax - slot * 12345 % (1 << 20); };
	// a -> b uses seeds from 1000, b -> a from 5000; tag = slot.
	for (size_t sl = 0; sl < slots; sl++) {
		const Conn &cn = conns[sl % kEps];

		fill_pattern(sa.mem.data() + sl * kMax, len_of(sl), 1000 + sl);
		fill_pattern(sb.mem.data() + sl * kMax, len_of(sl), 5000 + sl);
		ASSERT_EQ(tb5_recv(cn.server, ra.mr, sl * kMax, kMax, sl, sl), 0);
		ASSERT_EQ(tb5_recv(cn.client, rb.mr, sl * kMax, kMax, sl, sl), 0);
	}
	for (size_t sl = 0; sl < slots; sl++) {
		const Conn &cn = conns[sl % kEps];

		ASSERT_EQ(tb5_send(cn.server, sa.mr, sl * kMax, len_of(sl), sl, sl), 0)
			<< tb5_last_error();
		ASSERT_EQ(tb5_send(cn.client, sb.mr, sl * kMax, len_of(sl), sl, sl), 0)
			<< tb5_last_error();
	}
	size_t recvs = 0, sends = 0;

	ASSERT_TRUE(poll_until({ &a, &b }, [&] {
		for (Dev *d : { &a, &b })
			while (auto w = d->take([](const tb5_wc &) { return true; })) {
				EXPECT_EQ(w->status, 0);
				if (w->kind == TB5_WC_SEND) {
					sends++;
				} else if (w->kind == TB5_WC_RECV) {
					size_t sl = w->user_data;
					bool on_a = d == &a;
					const Buf &rx = on_a ? ra : rb;

					recvs++;
					EXPECT_EQ(w->bytes, len_of(sl));
					EXPECT_EQ(check_pattern(rx.mem.data() + sl * kMax,
								len_of(sl),
								(on_a ? 5000 : 1000) + sl), -1)
						<< "slot " << sl << (on_a ? " on a" : " on b");
				}
			}
		return recvs == 2 * slots && sends == 2 * slots;
	}, 120)) << recvs << " receives, " << sends << " sends";
}

// Each end polled by its own thread: callbacks of the core on one
// thread while the other holds a batch back, both directions.
TEST_F(Copies, TwoThreadsEachPollingItsOwnEnd)
{
	constexpr int kMsgs = 24;
	constexpr size_t kLen = (4 << 20) + 100;
	Buf sa, sb, ra, rb;

	sa.reg(a.dev, kLen);
	sb.reg(b.dev, kLen);
	ra.reg(a.dev, 2 * kLen);
	rb.reg(b.dev, 2 * kLen);
	ASSERT_TRUE(connect_pair(a, b, 0x30, c));
	fill_pattern(sa.mem.data(), kLen, 7);
	fill_pattern(sb.mem.data(), kLen, 8);
	std::atomic<int> bad{ 0 };
	auto side = [&](Dev &d, tb5_endpoint *ep, Buf &s, Buf &r, uint32_t seed) {
		int sent = 0, got = 0, posted = 0, sending = 0;

		// Two receives (halves of @r) and one send in flight.
		for (; posted < 2; posted++)
			if (tb5_recv(ep, r.mr, posted * kLen, kLen, 1, posted))
				bad++;
		auto end = clk::now() + std::chrono::seconds(120);

		while ((sent < kMsgs || got < kMsgs) && clk::now() < end) {
			if (sent + sending < kMsgs && !sending) {
				if (tb5_send(ep, s.mr, 0, kLen, 1, 100) == 0)
					sending = 1;
			}
			tb5_wc w[8];
			int n = tb5_poll(d.dev, w, 8);

			for (int i = 0; i < n; i++) {
				if (w[i].status)
					bad++;
				if (w[i].kind == TB5_WC_SEND) {
					sent++;
					sending = 0;
				} else if (w[i].kind == TB5_WC_RECV) {
					size_t half = w[i].user_data;

					got++;
					if (w[i].bytes != kLen ||
					    check_pattern(r.mem.data() + half * kLen, kLen,
							  seed) != -1)
						bad++;
					memset(r.mem.data() + half * kLen, 0, kLen);
					if (posted++ < kMsgs &&
					    tb5_recv(ep, r.mr, half * kLen, kLen, 1, half))
						bad++;
				}
			}
		}
		if (sent != kMsgs || got != kMsgs)
			bad++;
	};
	std::thread tb([&] { side(b, c.client, sb, rb, 7); });

	side(a, c.server, sa, ra, 8);
	tb.join();
	EXPECT_EQ(bad.load(), 0);
}

// Closing an endpoint while another thread is in the middle of copying
// into its receive: once the close returns, no byte lands there.
TEST_F(Copies, NothingLandsAfterTheReceivesEndpointClosed)
{
	constexpr size_t kLen = 48u << 20;
	Buf s, r;

	s.reg(b.dev, kLen);
	r.reg(a.dev, kLen);
	fill_pattern(s.mem.data(), kLen, 3);
	for (int round = 0; round < 3; round++) {
		SCOPED_TRACE(round);
		Conn cn;

		ASSERT_TRUE(connect_pair(a, b, 0x40 + round, cn));
		ASSERT_EQ(tb5_recv(cn.server, r.mr, 0, kLen, 1, 1), 0);
		ASSERT_EQ(tb5_send(cn.client, s.mr, 0, kLen, 1, 2), 0);
		std::atomic<bool> stop{ false };
		std::thread poller([&] {
			while (!stop.load()) {
				tb5_wc w[8];

				tb5_poll(a.dev, w, 8);
				tb5_poll(b.dev, w, 8);
			}
		});
		// Let a few MiB arrive, then close under the poller's feet.
		tb5_counters k0 = {}, k = {};
		auto end = clk::now() + std::chrono::seconds(30);

		tb5_get_counters(a.dev, &k0);
		while (k.rx_bytes < k0.rx_bytes + (4u << 20) * (round + 1) &&
		       clk::now() < end)
			tb5_get_counters(a.dev, &k);
		ASSERT_EQ(tb5_endpoint_close(cn.server), 0);
		memset(r.mem.data(), 0x5a, kLen);
		std::this_thread::sleep_for(std::chrono::milliseconds(200));
		stop = true;
		poller.join();
		for (size_t i = 0; i < kLen; i += 4096)
			ASSERT_EQ(r.mem[i], 0x5a) << "byte " << i << " written after "
						     "the close returned";
		tb5_endpoint_close(cn.client);
		tb5_endpoint_close(cn.listener);
		a.wcs.clear();
		b.wcs.clear();
	}
}

TEST_F(Copies, ClosingDevicesWithCopiesInFlightStopsTheWorkers)
{
	constexpr size_t kLen = 16u << 20;
	Buf s[2], r[2];

	for (int i = 0; i < 2; i++) {
		s[i].reg(i ? b.dev : a.dev, 4 * kLen);
		r[i].reg(i ? b.dev : a.dev, 4 * kLen);
	}
	ASSERT_TRUE(connect_pair(a, b, 0x50, c));
	for (int m = 0; m < 4; m++) {
		ASSERT_EQ(tb5_recv(c.server, r[0].mr, m * kLen, kLen, 1, m), 0);
		ASSERT_EQ(tb5_recv(c.client, r[1].mr, m * kLen, kLen, 1, m), 0);
		ASSERT_EQ(tb5_send(c.server, s[0].mr, m * kLen, kLen, 1, m), 0);
		ASSERT_EQ(tb5_send(c.client, s[1].mr, m * kLen, kLen, 1, m), 0);
	}
	for (int i = 0; i < 200; i++) {
		a.poll();
		b.poll();
	}
	// Regions stay registered until the devices are gone (the close
	// may keep them if operations still name them).
	for (int i = 0; i < 2; i++)
		s[i].mr = r[i].mr = nullptr;
	auto t0 = clk::now();

	// (libtb5 starts no copy workers over the kernel: none there.)
	const int workers = on_kernel() ? 0 : 2;

	tb5_close(a.dev);
	a.dev = nullptr;
	EXPECT_EQ(copy_threads(), workers) << "b is still open";
	tb5_close(b.dev);
	b.dev = nullptr;
	a.wcs.clear();
	b.wcs.clear();
	EXPECT_LT(clk::now() - t0, std::chrono::seconds(10));
	EXPECT_EQ(copy_threads(), 0) << "the last device closed";

	// They come back with the next device, and carry data again.
	ASSERT_EQ(a.open(na), 0);
	ASSERT_EQ(b.open(nb), 0);
	EXPECT_EQ(copy_threads(), workers);
	Buf s2, r2;

	s2.reg(b.dev, kLen);
	r2.reg(a.dev, kLen);
	fill_pattern(s2.mem.data(), kLen, 11);
	Conn c2;

	ASSERT_TRUE(connect_pair(a, b, 0x51, c2));
	ASSERT_EQ(tb5_recv(c2.server, r2.mr, 0, kLen, 1, 77), 0);
	ASSERT_EQ(tb5_send(c2.client, s2.mr, 0, kLen, 1, 77), 0);
	auto rw = await(a, is_recv, { &b }, 60);
	ASSERT_TRUE(rw);
	EXPECT_EQ(rw->user_data, 77u);
	EXPECT_EQ(rw->status, 0);
	EXPECT_EQ(check_pattern(r2.mem.data(), kLen, 11), -1);
}

// --- threads and processes ---

TEST(SimCopyThreads, ComeWithTheFirstDeviceAndGoWithTheLast)
{
	TB5_SIM_ONLY(kWorkers);
	std::string na, nb;

	ASSERT_TRUE(find_loop_pair(na, nb)) << tb5_last_error();
	EXPECT_EQ(copy_threads(), 0) << "no device open yet";
	{
		Dev a(na);
		EXPECT_EQ(copy_threads(), 2);
		{
			Dev b(nb);
			EXPECT_EQ(copy_threads(), 2);
		}
		EXPECT_EQ(copy_threads(), 2);
	}
	EXPECT_EQ(copy_threads(), 0);
}

// A child of a process with workers has none (fork copies one thread);
// it is a new host, with workers of its own once it opens a device.
TEST(SimCopyThreads, AForkedChildGetsItsOwn)
{
	TB5_SIM_ONLY(kWorkers);
	std::string na, nb;

	ASSERT_TRUE(find_loop_pair(na, nb));
	Dev keep(na);

	ASSERT_EQ(copy_threads(), 2);
	pid_t pid = fork();

	ASSERT_GE(pid, 0);
	if (pid == 0) {
		if (copy_threads() != 0)
			_exit(10);
		std::string ca, cb;
		Dev a, b;

		if (!find_loop_pair(ca, cb) || a.open(ca) || b.open(cb))
			_exit(11);
		if (copy_threads() != 2)
			_exit(12);
		if (int e = move_8mib(a, b, 0x60, 21))
			_exit(12 + e);	// 13, 14
		_exit(::testing::Test::HasFailure() ? 15 : 0);
	}
	EXPECT_EQ(wait_child(pid), 0);
	EXPECT_EQ(copy_threads(), 2) << "the parent's workers stay";
}

// exit() with devices open: the workers are stopped and joined.
TEST(SimCopyThreads, ExitWithDevicesOpenEndsCleanly)
{
	TB5_SIM_ONLY(kWorkers);
	pid_t pid = fork();

	ASSERT_GE(pid, 0);
	if (pid == 0) {
		std::string na, nb;

		if (!find_loop_pair(na, nb))
			_exit(10);
		auto *a = new Dev(na);	// never closed

		if (!a->dev || copy_threads() != 2)
			_exit(11);
		exit(0);
	}
	EXPECT_EQ(wait_child(pid, 30), 0);
}

TEST(SimCopyThreads, NoneWithCopyZero)
{
	TB5_SIM_ONLY(kWorkers);
	pid_t pid = fork();

	ASSERT_GE(pid, 0);
	if (pid == 0) {
		// A new host of a fabric of its own, which it leaves at exit():
		// the devices are closed first, then exit() runs the
		// simulator's handler, so no fabric file stays in /dev/shm.
		use_simulator("tb5test-copy0", "hosts=1,loop=1,copy=0");
		int code = [] {
			std::string na, nb;
			Dev a, b;

			if (!find_loop_pair(na, nb) || a.open(na) || b.open(nb))
				return 10;
			if (int e = move_8mib(a, b, 0x70, 31))
				return 10 + e;	// 11, 12
			return copy_threads() == 0 ? 0 : 13;
		}();
		exit(code);
	}
	EXPECT_EQ(wait_child(pid), 0);
}

TEST(SimCopyConfig, BadValuesAreRefusedWithTheRange)
{
	TB5_SIM_ONLY("the simulator's settings (TB5_SIM copy=N)");
	const char *bad[] = { "copy=65", "copy=-1", "copy=two", "copy=", "copy=1e3" };

	for (const char *opt : bad) {
		SCOPED_TRACE(opt);
		pid_t pid = fork();

		ASSERT_GE(pid, 0);
		if (pid == 0) {
			// The child re-reads TB5_SIM: it is a new host.
			use_simulator("tb5test-copybad", opt);
			tb5_link_info *l = nullptr;
			size_t n = 0;
			int ret = tb5_list_links(&l, &n);

			if (ret != -EINVAL)
				_exit(10);
			if (!strstr(tb5_last_error(), "0 (none) to 64"))
				_exit(11);
			_exit(0);
		}
		EXPECT_EQ(wait_child(pid), 0);
	}
}

// --- two processes ---

constexpr uint64_t kBothService = 0x626f7468;	// "both"

// Sends kMsgs messages and receives as many on @ep, all at once;
// 0 when every received byte checks out.
int both_ways(Dev &d, tb5_endpoint *ep, uint32_t my_seed, uint32_t peer_seed)
{
	constexpr int kMsgs = 6;
	constexpr size_t kMax = (12u << 20) + 4097;
	auto len_of = [](int m) { return kMax - size_t(m) * 1234567; };
	Buf s, r;

	s.reg(d.dev, kMsgs * kMax);
	r.reg(d.dev, kMsgs * kMax);
	for (int m = 0; m < kMsgs; m++) {
		fill_pattern(s.mem.data() + m * kMax, len_of(m), my_seed + m);
		if (tb5_recv(ep, r.mr, m * kMax, kMax, m, m))
			return 1;
	}
	for (int m = 0; m < kMsgs; m++)
		if (tb5_send(ep, s.mr, m * kMax, len_of(m), m, m))
			return 2;
	int sent = 0, got = 0;
	auto end = clk::now() + std::chrono::seconds(120);

	while ((sent < kMsgs || got < kMsgs) && clk::now() < end) {
		tb5_wc w[8];
		int n = tb5_poll(d.dev, w, 8);

		for (int i = 0; i < n; i++) {
			if (w[i].kind == TB5_WC_EVENT)
				continue;
			if (w[i].status)
				return 3;
			if (w[i].kind == TB5_WC_SEND) {
				sent++;
				continue;
			}
			int m = int(w[i].user_data);

			got++;
			if (w[i].bytes != len_of(m) ||
			    check_pattern(r.mem.data() + m * kMax, len_of(m),
					  peer_seed + m) != -1)
				return 4;
		}
	}
	return sent == kMsgs && got == kMsgs ? 0 : 5;
}

std::string mesh_link()
{
	return wait_peer_link(20);
}

// The serving side of BothDirectionsBetweenTwoProcesses: 0 when its half
// went well.
int both_ways_peer(Dev &d, tb5_endpoint *e)
{
	int ret = both_ways(d, e, 500, 100);

	// Until the parent has its last completions too.
	for (int i = 0; i < 2000; i++) {
		tb5_wc w;

		tb5_poll(d.dev, &w, 1);
		usleep(100);
	}
	return ret ? 30 + ret : 0;
}

TEST(CopiesTwoHosts, BothDirectionsBetweenTwoProcesses)
{
	pid_t pid = -1;

	// On the kernel the serving side is the other host's.
	if (!peer_is_remote()) {
		pid = fork();
		ASSERT_GE(pid, 0);
	}
	if (pid == 0) {
		std::string link = mesh_link();
		Dev d;
		tb5_endpoint *l = nullptr, *e = nullptr;

		if (link.empty() || d.open(link) ||
		    tb5_endpoint_listen(d.dev, kBothService, TB5_LISTEN_WELL_KNOWN,
					0, &l))
			_exit(20);
		while (tb5_endpoint_accept(l, 0, &e) == -EAGAIN)
			if (tb5_wait(d.dev, 20000) == -ETIMEDOUT)
				_exit(21);
		_exit(both_ways_peer(d, e));
	}
	std::string link = mesh_link();

	ASSERT_FALSE(link.empty()) << "the child's host never came up";
	Dev d(link);
	tb5_endpoint *e = nullptr;

	// Until the child listens.
	for (int attempt = 0; attempt < 5000 && !e; attempt++) {
		tb5_link_info info;

		ASSERT_EQ(tb5_query(d.dev, &info), 0);
		tb5_address addr = { info.peer_host, kBothService, 0 };
		if (tb5_endpoint_connect(d.dev, &addr, 0, &e) == 0) {
			auto up = await(d, [](const tb5_wc &w) {
				return w.kind == TB5_WC_EVENT;
			}, {}, 20);
			if (up && up->event == TB5_WC_CONNECTED)
				break;
			tb5_endpoint_close(e);
			e = nullptr;
		}
		usleep(1000);
	}
	ASSERT_NE(e, nullptr) << "never connected to the child";
	EXPECT_EQ(both_ways(d, e, 100, 500), 0);
	// (The serving host reports its sessions itself.)
	if (pid > 0) {
		EXPECT_EQ(wait_child(pid), 0);
	}
}

} // namespace

int main(int argc, char **argv)
{
	::testing::InitGoogleTest(&argc, argv);
	tb5libtest::use_simulator("tb5test-copy", "hosts=2,loop=1,ring=1024,copy=2");
	// The other host of the fabric (kernel only): CopiesTwoHosts's peer.
	if (tb5libtest::serve_role())
		return tb5libtest::serve(kBothService, both_ways_peer);
	return RUN_ALL_TESTS();
}
