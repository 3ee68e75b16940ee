// SPDX-License-Identifier: MIT
//
// test_loop_pair.cc - libtb5 over a loop pair's two ends, two endpoints in
// one process: the simulator's, or with TB5_TEST_BACKEND=kernel tb5.ko's
// (tests/kernel/vm-tests-lib.sh runs it so in the test VM). SimConfig: the
// simulator's settings (TB5_SIM), which skip on the kernel, saying so.
#include <gtest/gtest.h>

#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "fabric_file.hpp"
#include "lib_harness.hpp"

namespace {

using namespace tb5libtest;

bool is_send(const tb5_wc &w) { return w.kind == TB5_WC_SEND; }
bool is_recv(const tb5_wc &w) { return w.kind == TB5_WC_RECV; }

// The ring size the suite's links have: what TB5_SIM asks for below, or
// what tb5.ko was loaded with.
uint32_t expected_ring_size()
{
	unsigned long v = 0;

	if (!on_kernel())
		return 256;
	std::ifstream("/sys/module/tb5/parameters/ring_size") >> v;
	return uint32_t(v);
}

class LoopPair : public ::testing::Test {
protected:
	void SetUp() override
	{
		ASSERT_TRUE(find_loop_pair(na, nb)) << tb5_last_error();
		ASSERT_EQ(a.open(na), 0) << tb5_last_error();
		ASSERT_EQ(b.open(nb), 0) << tb5_last_error();
	}

	// Registers @len bytes on each side.
	void buffers(size_t len)
	{
		sbuf.assign(len ? len : 1, 0);
		rbuf.assign(len ? len : 1, 0);
		ASSERT_EQ(tb5_reg_host(b.dev, sbuf.data(), sbuf.size(), &smr), 0);
		ASSERT_EQ(tb5_reg_host(a.dev, rbuf.data(), rbuf.size(), &rmr), 0);
	}

	std::string na, nb;
	Dev a, b;
	Conn c;
	std::vector<uint8_t> sbuf, rbuf;
	tb5_mr *smr = nullptr, *rmr = nullptr;
};

TEST_F(LoopPair, ListsBothEndsReadyAndWiredToEachOther)
{
	tb5_link_info ia, ib;

	ASSERT_EQ(tb5_query(a.dev, &ia), 0);
	ASSERT_EQ(tb5_query(b.dev, &ib), 0);
	EXPECT_EQ(ia.backend, backend());
	EXPECT_EQ(ia.state, uint32_t(TB5_LINK_STATE_READY));
	EXPECT_EQ(ia.peer_host, ib.local_host);
	EXPECT_EQ(ib.peer_host, ia.local_host);
	EXPECT_NE(ia.local_host, ib.local_host);
	EXPECT_TRUE(ia.caps & TB5_CAP_LOOP);
	EXPECT_TRUE(ia.caps & TB5_CAP_HOST_MEM);
	// Only the kernel imports dma-bufs.
	EXPECT_EQ(bool(ia.caps & TB5_CAP_DMABUF), on_kernel());
	EXPECT_EQ(ia.max_frame, 4096u);
	EXPECT_EQ(ia.ring_size, expected_ring_size())
		<< "TB5_SIM's ring=256, or tb5.ko's ring_size";
	EXPECT_EQ(ia.max_ops, 64u);
	EXPECT_STREQ(ia.name, na.c_str());
}

TEST_F(LoopPair, UnknownLinkIsNoDevice)
{
	tb5_device *d = nullptr;

	EXPECT_EQ(tb5_open("sim_l9z", &d), -ENODEV);
	EXPECT_NE(strstr(tb5_last_error(), "sim_l9z"), nullptr) << tb5_last_error();
	EXPECT_EQ(d, nullptr);
}

TEST_F(LoopPair, MessagesOfEverySizeArriveIntact)
{
	const size_t sizes[] = { 0, 1, 7, 4095, 4096, 4097, 65539, 1 << 20,
				 (16 << 20) + 5 };

	buffers((16 << 20) + 5);
	ASSERT_TRUE(connect_pair(a, b, 0x10, c));
	uint32_t seed = 1;

	for (size_t len : sizes) {
		SCOPED_TRACE(len);
		fill_pattern(sbuf.data(), len, seed);
		memset(rbuf.data(), 0, rbuf.size());
		ASSERT_EQ(tb5_recv(c.server, rmr, 0, rbuf.size(), 5, 1000 + seed), 0);
		ASSERT_EQ(tb5_send(c.client, smr, 0, len, 5, 2000 + seed), 0)
			<< tb5_last_error();
		auto r = await(a, is_recv, { &b });
		auto s = await(b, is_send, { &a });
		ASSERT_TRUE(r && s);
		EXPECT_EQ(r->status, 0);
		EXPECT_EQ(r->bytes, len);
		EXPECT_EQ(r->tag, 5u);
		EXPECT_EQ(r->user_data, 1000u + seed);
		EXPECT_EQ(r->ep, c.server);
		EXPECT_EQ(s->status, 0);
		EXPECT_EQ(s->user_data, 2000u + seed);
		EXPECT_EQ(s->ep, c.client);
		EXPECT_EQ(check_pattern(rbuf.data(), len, seed), -1);
		// Nothing past the message was written.
		for (size_t i = len; i < std::min(rbuf.size(), len + 4096); i++)
			ASSERT_EQ(rbuf[i], 0) << "byte " << i << " written";
		seed++;
	}
}

TEST_F(LoopPair, OffsetsInsideRegionsAreHonoured)
{
	buffers(3 * 4096);
	ASSERT_TRUE(connect_pair(a, b, 0x11, c));
	fill_pattern(sbuf.data() + 100, 5000, 9);
	ASSERT_EQ(tb5_recv(c.server, rmr, 777, 6000, 1, 1), 0);
	ASSERT_EQ(tb5_send(c.client, smr, 100, 5000, 1, 2), 0);
	auto r = await(a, is_recv, { &b });
	ASSERT_TRUE(r);
	EXPECT_EQ(r->bytes, 5000u);
	EXPECT_EQ(check_pattern(rbuf.data() + 777, 5000, 9), -1);
	EXPECT_EQ(rbuf[776], 0);
	EXPECT_EQ(rbuf[777 + 5000], 0);
}

TEST_F(LoopPair, ASendLargerThanTheReceiveFailsOnBothSides)
{
	buffers(8192);
	ASSERT_TRUE(connect_pair(a, b, 0x12, c));
	fill_pattern(sbuf.data(), 8192, 3);
	ASSERT_EQ(tb5_recv(c.server, rmr, 0, 4096, 1, 1), 0);
	ASSERT_EQ(tb5_send(c.client, smr, 0, 8192, 1, 2), 0);
	auto r = await(a, is_recv, { &b });
	auto s = await(b, is_send, { &a });
	ASSERT_TRUE(r && s);
	EXPECT_EQ(r->status, -EMSGSIZE);
	EXPECT_EQ(s->status, -EMSGSIZE);
	for (size_t i = 0; i < rbuf.size(); i++)
		ASSERT_EQ(rbuf[i], 0) << "byte " << i << " written";
	EXPECT_STREQ(tb5_strerror(-EMSGSIZE), "message larger than the posted receive");
}

TEST_F(LoopPair, TagsPairUpInPostingOrder)
{
	buffers(4 * 4096);
	ASSERT_TRUE(connect_pair(a, b, 0x13, c));
	for (uint32_t i = 0; i < 4; i++)
		fill_pattern(sbuf.data() + i * 4096, 4096, 40 + i);
	// Receives for tags 2, 1, 2, 1; sends in the order 1, 1, 2, 2.
	const uint32_t rtags[] = { 2, 1, 2, 1 };
	for (uint32_t i = 0; i < 4; i++)
		ASSERT_EQ(tb5_recv(c.server, rmr, i * 4096, 4096, rtags[i], i), 0);
	const uint32_t stags[] = { 1, 1, 2, 2 };
	for (uint32_t i = 0; i < 4; i++)
		ASSERT_EQ(tb5_send(c.client, smr, i * 4096, 4096, stags[i], i), 0);
	ASSERT_TRUE(poll_until({ &a, &b }, [&] {
		return std::count_if(a.wcs.begin(), a.wcs.end(), is_recv) == 4;
	}));
	// Receive 1 (tag 1) got send 0; receive 3 got send 1; 0 got 2; 2 got 3.
	EXPECT_EQ(check_pattern(rbuf.data() + 1 * 4096, 4096, 40), -1);
	EXPECT_EQ(check_pattern(rbuf.data() + 3 * 4096, 4096, 41), -1);
	EXPECT_EQ(check_pattern(rbuf.data() + 0 * 4096, 4096, 42), -1);
	EXPECT_EQ(check_pattern(rbuf.data() + 2 * 4096, 4096, 43), -1);
}

TEST_F(LoopPair, SixtyFourOutstandingThenAgain)
{
	buffers(4096);
	ASSERT_TRUE(connect_pair(a, b, 0x14, c));
	for (int i = 0; i < 64; i++)
		ASSERT_EQ(tb5_recv(c.server, rmr, 0, 16, 1, i), 0) << i;
	EXPECT_EQ(tb5_recv(c.server, rmr, 0, 16, 1, 64), -EAGAIN);
	// A batch that stops part way says how far it got.
	tb5_op ops[3] = {};
	for (auto &o : ops)
		o = { TB5_POST_SEND, 1, c.client, smr, 0, 16, 7 };
	size_t posted = 99;
	EXPECT_EQ(tb5_post(b.dev, ops, 3, &posted), 0);
	EXPECT_EQ(posted, 3u);
	ASSERT_TRUE(poll_until({ &a, &b }, [&] {
		return std::count_if(a.wcs.begin(), a.wcs.end(), is_recv) == 3;
	}));
	EXPECT_EQ(tb5_recv(c.server, rmr, 0, 16, 1, 65), 0) << "room again";
}

TEST_F(LoopPair, ClosingCancelsAndReportsNothingMore)
{
	buffers(4096);
	ASSERT_TRUE(connect_pair(a, b, 0x15, c));
	for (int i = 0; i < 8; i++)
		ASSERT_EQ(tb5_recv(c.server, rmr, 0, 4096, 1, i), 0);
	EXPECT_EQ(tb5_dereg(rmr), -EBUSY) << "receives use the region";
	EXPECT_NE(strstr(tb5_last_error(), "in use"), nullptr);
	ASSERT_EQ(tb5_endpoint_close(c.server), 0);
	// The peer hears of it; the closed endpoint reports nothing.
	auto pc = await(b, [](const tb5_wc &w) { return w.kind == TB5_WC_EVENT; }, { &a });
	ASSERT_TRUE(pc);
	EXPECT_EQ(pc->event, TB5_WC_PEER_CLOSED);
	EXPECT_EQ(pc->status, -ECONNRESET);
	EXPECT_EQ(pc->user_data, 200u);
	a.poll();
	for (auto &w : a.wcs)
		EXPECT_NE(w.ep, c.server) << "a completion of a closed endpoint";
	EXPECT_EQ(tb5_dereg(rmr), 0) << "cancelled receives let go of it";
	rmr = nullptr;
	EXPECT_EQ(tb5_send(c.client, smr, 0, 1, 1, 1), -ECONNRESET);
	EXPECT_EQ(tb5_endpoint_state(c.client, nullptr), TB5_ENDPOINT_PEER_CLOSED);
}

TEST_F(LoopPair, WellKnownListenerNeedsNoCookie)
{
	buffers(64);
	ASSERT_TRUE(connect_pair(a, b, 0x16, c, TB5_LISTEN_WELL_KNOWN));
	tb5_address addr;
	ASSERT_EQ(tb5_endpoint_address(c.listener, &addr), 0);
	EXPECT_EQ(addr.cookie, 0u);
	EXPECT_EQ(addr.service, 0x16u);

	tb5_endpoint *l2 = nullptr;
	ASSERT_EQ(tb5_endpoint_listen(a.dev, 0x17, 0, 0, &l2), 0);
	ASSERT_EQ(tb5_endpoint_address(l2, &addr), 0);
	EXPECT_NE(addr.cookie, 0u);
	EXPECT_EQ(tb5_endpoint_listen(a.dev, 0x17, 0, 0, &l2), -EADDRINUSE);
}

TEST_F(LoopPair, WrongCookieIsRefused)
{
	tb5_endpoint *l = nullptr, *e = nullptr;
	tb5_address addr;

	ASSERT_EQ(tb5_endpoint_listen(a.dev, 0x18, 0, 0, &l), 0);
	ASSERT_EQ(tb5_endpoint_address(l, &addr), 0);
	addr.cookie ^= 1;
	ASSERT_EQ(tb5_endpoint_connect(b.dev, &addr, 5, &e), 0);
	auto ev = await(b, [](const tb5_wc &w) { return w.kind == TB5_WC_EVENT; }, { &a });
	ASSERT_TRUE(ev);
	EXPECT_EQ(ev->event, TB5_WC_ERROR);
	EXPECT_EQ(ev->status, -ECONNREFUSED);
	EXPECT_EQ(tb5_endpoint_state(e, nullptr), TB5_ENDPOINT_FAILED);
}

TEST_F(LoopPair, ConnectOverALinkThatDoesNotReachTheHostFails)
{
	tb5_address addr = { 0x1234, 0x19, 0 };
	tb5_endpoint *e = nullptr;

	EXPECT_EQ(tb5_endpoint_connect(b.dev, &addr, 0, &e), -EHOSTUNREACH);
	EXPECT_NE(strstr(tb5_last_error(), "0x1234"), nullptr) << tb5_last_error();
	EXPECT_EQ(e, nullptr);
}

TEST_F(LoopPair, WaitTimesOutAndWakesUp)
{
	auto t0 = std::chrono::steady_clock::now();

	EXPECT_EQ(tb5_wait(a.dev, 50), -ETIMEDOUT);
	EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(45));

	buffers(64);
	ASSERT_TRUE(connect_pair(a, b, 0x1a, c));
	ASSERT_EQ(tb5_recv(c.server, rmr, 0, 64, 1, 1), 0);
	std::atomic<int> woke{ 1 };
	std::thread waiter([&] { woke = tb5_wait(a.dev, 5000); });
	std::this_thread::sleep_for(std::chrono::milliseconds(20));
	ASSERT_EQ(tb5_send(c.client, smr, 0, 64, 1, 2), 0);
	// b must make progress for the send to move: wait on it, too.
	EXPECT_EQ(tb5_wait(b.dev, 5000), 0);
	waiter.join();
	EXPECT_EQ(woke.load(), 0);
	auto r = await(a, is_recv, { &b });
	ASSERT_TRUE(r);
	EXPECT_EQ(r->status, 0);
}

TEST_F(LoopPair, CountersCountFramesAndBytes)
{
	tb5_counters before, after;

	buffers(1 << 20);
	ASSERT_TRUE(connect_pair(a, b, 0x1b, c));
	ASSERT_EQ(tb5_get_counters(b.dev, &before), 0);
	ASSERT_EQ(tb5_recv(c.server, rmr, 0, 1 << 20, 1, 1), 0);
	ASSERT_EQ(tb5_send(c.client, smr, 0, 1 << 20, 1, 2), 0);
	ASSERT_TRUE(await(a, is_recv, { &b }));
	ASSERT_EQ(tb5_get_counters(b.dev, &after), 0);
	EXPECT_GE(after.tx_frames - before.tx_frames, 256u);
	EXPECT_GE(after.tx_bytes - before.tx_bytes, uint64_t(1 << 20));
}

TEST_F(LoopPair, BadArgumentsAreRefusedWithAReason)
{
	buffers(4096);
	ASSERT_TRUE(connect_pair(a, b, 0x1c, c));
	tb5_mr *m = nullptr;

	EXPECT_EQ(tb5_reg_host(a.dev, nullptr, 10, &m), -EINVAL);
	EXPECT_EQ(tb5_reg_host(a.dev, rbuf.data(), 0, &m), -EINVAL);
	if (on_kernel()) {
		// The kernel imports dma-bufs, but fd 0 is none.
		EXPECT_LT(tb5_reg_dmabuf(a.dev, 0, 0, 4096, &m), 0);
	} else {
		// The simulator has no dma-bufs (no TB5_CAP_DMABUF).
		EXPECT_EQ(tb5_reg_dmabuf(a.dev, 0, 0, 4096, &m), -EOPNOTSUPP);
		EXPECT_NE(strstr(tb5_last_error(), "dma-buf"), nullptr);
	}
	// A region of the other device, a range outside the region.
	EXPECT_EQ(tb5_send(c.client, rmr, 0, 1, 1, 1), -EINVAL);
	EXPECT_EQ(tb5_send(c.client, smr, 4000, 97, 1, 1), -EINVAL);
	EXPECT_EQ(tb5_send(c.client, smr, UINT64_MAX, 2, 1, 1), -EINVAL);
	tb5_op op = { 9, 1, c.client, smr, 0, 1, 1 };
	EXPECT_EQ(tb5_post(b.dev, &op, 1, nullptr), -EINVAL);
	EXPECT_EQ(tb5_poll(a.dev, nullptr, 1), -EINVAL);
	EXPECT_EQ(tb5_endpoint_listen(a.dev, 1, 0x80, 0, nullptr), -EINVAL);
	tb5_endpoint *e = nullptr;
	EXPECT_EQ(tb5_endpoint_listen(a.dev, 1, 0x80, 0, &e), -EINVAL);
	EXPECT_EQ(tb5_endpoint_accept(c.client, 0, &e), -EINVAL);
	EXPECT_NE(strstr(tb5_last_error(), "listener"), nullptr) << tb5_last_error();
	EXPECT_EQ(tb5_endpoint_address(c.client, nullptr), -EINVAL);
	tb5_address addr;
	EXPECT_EQ(tb5_endpoint_address(c.client, &addr), -EINVAL);
	EXPECT_NE(strstr(tb5_last_error(), "listener"), nullptr) << tb5_last_error();
	// A listener carries no operations.
	EXPECT_EQ(tb5_recv(c.listener, rmr, 0, 1, 1, 1), -EINVAL);
	EXPECT_NE(strstr(tb5_last_error(), "listener"), nullptr) << tb5_last_error();
	EXPECT_EQ(tb5_open(nullptr, nullptr), -EINVAL);
}

TEST_F(LoopPair, ClosingADeviceWithTrafficInFlightIsClean)
{
	buffers(1 << 20);
	ASSERT_TRUE(connect_pair(a, b, 0x1d, c));
	for (int i = 0; i < 16; i++)
		ASSERT_EQ(tb5_send(c.client, smr, 0, 1 << 20, 1, i), 0);
	ASSERT_EQ(tb5_recv(c.server, rmr, 0, 1 << 20, 1, 1), 0);
	tb5_close(b.dev);	// sends queued and in flight
	b.dev = nullptr;
	auto ev = await(a, [](const tb5_wc &w) {
		return w.kind == TB5_WC_EVENT || (w.kind == TB5_WC_RECV && w.status);
	});
	ASSERT_TRUE(ev) << "the peer never heard of the close";
}

// The simulator's settings are checked when a process first uses it; a
// child process (a new host) reads TB5_SIM afresh.
int child_list_links(const char *spec, std::string *msg)
{
	int fds[2];

	if (pipe(fds))
		return -1;
	pid_t pid = fork();

	if (pid == 0) {
		tb5_link_info *l = nullptr;
		size_t n = 0;

		close(fds[0]);
		setenv("TB5_SIM", spec, 1);
		int ret = tb5_list_links(&l, &n);
		const char *m = tb5_last_error();

		if (write(fds[1], m, strlen(m)) < 0)
			_exit(100);
		_exit(ret < 0 ? -ret : 0);
	}
	close(fds[1]);
	char buf[512] = {};
	ssize_t got = read(fds[0], buf, sizeof(buf) - 1);
	(void)got;
	close(fds[0]);
	int st = 0;
	waitpid(pid, &st, 0);
	*msg = buf;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

constexpr const char *kSettings = "the simulator's settings (TB5_SIM)";

TEST(SimConfig, BadSettingsAreRefusedWithAReason)
{
	TB5_SIM_ONLY(kSettings);
	std::string msg;

	EXPECT_EQ(child_list_links("bad/name", &msg), EINVAL);
	EXPECT_NE(msg.find("fabric name"), std::string::npos) << msg;
	EXPECT_EQ(child_list_links("x:ring=1000", &msg), EINVAL);
	EXPECT_NE(msg.find("power of two"), std::string::npos) << msg;
	EXPECT_EQ(child_list_links("x:hosts=0", &msg), EINVAL);
	EXPECT_EQ(child_list_links("x:hosts=2,host=5", &msg), EINVAL);
	EXPECT_EQ(child_list_links("x:colour=blue", &msg), EINVAL);
	EXPECT_NE(msg.find("unknown key"), std::string::npos) << msg;
	EXPECT_EQ(child_list_links("x:rate=fast", &msg), EINVAL);
	EXPECT_EQ(child_list_links("x:delay_us=20000", &msg), EINVAL);
	EXPECT_NE(msg.find("delay_us"), std::string::npos) << msg;
	EXPECT_EQ(child_list_links("x:usb4=2", &msg), EINVAL);
	EXPECT_EQ(child_list_links("x:copy_min=8", &msg), EINVAL);
	EXPECT_NE(msg.find("copy_min"), std::string::npos) << msg;
	for (const char *bad : {"x:hosts=4,uncabled=0", "x:hosts=4,uncabled=1-1",
				"x:hosts=4,uncabled=0-16", "x:hosts=4,uncabled=a-b",
				"x:hosts=4,uncabled=0-3-1", "x:hosts=4,uncabled="}) {
		EXPECT_EQ(child_list_links(bad, &msg), EINVAL) << bad;
		EXPECT_NE(msg.find("two different host slots"), std::string::npos)
			<< bad << ": " << msg;
	}
	EXPECT_EQ(child_list_links("x:hosts=3,uncabled=0-3", &msg), EINVAL);
	EXPECT_NE(msg.find("names slot 3, but hosts=3"), std::string::npos) << msg;
	for (const char *bad : {"x:cables=0", "x:cables=5", "x:cables=two",
				"x:cables=", "x:cables=-1"}) {
		EXPECT_EQ(child_list_links(bad, &msg), EINVAL) << bad;
		EXPECT_NE(msg.find("parallel cables between every pair of hosts, 1..4"),
			  std::string::npos) << bad << ": " << msg;
	}
}

// Runs @body in a child process with TB5_SIM=@spec (a new host, which
// reads the simulator's settings afresh) and returns what @body returned.
// The child leaves with exit(), not _exit(): the host leaves the fabric,
// and the last to leave removes it, so the next child makes it afresh.
std::string in_sim_child(const std::string &spec,
			 const std::function<std::string()> &body)
{
	int fds[2];

	if (pipe(fds))
		return "error: pipe";
	pid_t pid = fork();

	if (pid == 0) {
		close(fds[0]);
		setenv("TB5_SIM", spec.c_str(), 1);
		const std::string out = body();

		exit(write(fds[1], out.data(), out.size()) < 0 ? 1 : 0);
	}
	close(fds[1]);
	std::string out;
	char buf[512];
	ssize_t got;

	while ((got = read(fds[0], buf, sizeof(buf))) > 0)
		out.append(buf, size_t(got));
	close(fds[0]);
	waitpid(pid, nullptr, 0);
	return out;
}

// The links a child process in @spec's fabric lists, "name name ...", or
// "error: <message>".
std::string child_link_names(const std::string &spec)
{
	return in_sim_child(spec, [] {
		tb5_link_info *l = nullptr;
		size_t n = 0;
		std::string out;

		if (tb5_list_links(&l, &n) < 0)
			return std::string("error: ") + tb5_last_error();
		// (appended piece by piece: gcc 12 at -O3 warns, wrongly,
		// that operator+(const char *, string &&) may overlap)
		for (size_t i = 0; i < n; i++) {
			if (!out.empty())
				out += ' ';
			out.append(l[i].name);
		}
		tb5_free_link_list(l);
		return out;
	});
}

TEST(SimConfig, AnUncabledPairHasNoLinks)
{
	TB5_SIM_ONLY(kSettings);
	const std::string fabric = "tb5test-uncabled-" + std::to_string(getpid());
	const std::string spec = fabric + ":hosts=4,loop=0,uncabled=0-3";

	// Each child takes its slot and leaves at once; the fabric is made
	// afresh for each.
	EXPECT_EQ(child_link_names(spec + ",host=0"), "sim_h1 sim_h2");
	EXPECT_EQ(child_link_names(spec + ",host=3"), "sim_h1 sim_h2");
	EXPECT_EQ(child_link_names(spec + ",host=1"), "sim_h0 sim_h2 sim_h3");
	EXPECT_EQ(child_link_names(spec + ",uncabled=1-2,host=2"), "sim_h0 sim_h3");
	EXPECT_EQ(child_link_names(fabric + ":hosts=4,loop=0,host=0"),
		  "sim_h1 sim_h2 sim_h3");
	// uncabled= without hosts= names slots the default two lack.
	EXPECT_EQ(child_link_names(fabric + ":uncabled=0-3").rfind(
			  "error: simulator: TB5_SIM=" + fabric +
			  ":uncabled=0-3 names slot 3, but the fabric has 2 hosts", 0),
		  0u);
}

TEST(SimConfig, ParallelCablesAreLinksOfTheirOwn)
{
	TB5_SIM_ONLY(kSettings);
	const std::string fabric = "tb5test-cables-" + std::to_string(getpid());

	EXPECT_EQ(child_link_names(fabric + ":hosts=3,loop=0,cables=2,host=0"),
		  "sim_h1 sim_h1c1 sim_h2 sim_h2c1");
	EXPECT_EQ(child_link_names(fabric + ":hosts=4,loop=0,cables=4,uncabled=1-2,host=2"),
		  "sim_h0 sim_h0c1 sim_h0c2 sim_h0c3 sim_h3 sim_h3c1 sim_h3c2 sim_h3c3");
	EXPECT_EQ(child_link_names(fabric + ":hosts=2,loop=0,cables=1,host=1"), "sim_h0");
}

// A child process on a loop pair of a fabric of its own, TB5_SIM @spec,
// sends one message of @len bytes: the frames its sending end put on the
// wire (payload and headers), or -EIO.
long child_frames_of_one_send(const std::string &spec, size_t len)
{
	const std::string got = in_sim_child(spec, [len] {
		std::string na, nb;
		Dev a, b;
		Conn c;
		std::vector<uint8_t> sbuf(len), rbuf(len);
		tb5_mr *smr = nullptr, *rmr = nullptr;
		tb5_counters before, after;

		if (find_loop_pair(na, nb) && a.open(na) == 0 && b.open(nb) == 0 &&
		    tb5_reg_host(b.dev, sbuf.data(), len, &smr) == 0 &&
		    tb5_reg_host(a.dev, rbuf.data(), len, &rmr) == 0 &&
		    connect_pair(a, b, 0x1e, c) &&
		    tb5_recv(c.server, rmr, 0, len, 1, 1) == 0 &&
		    tb5_get_counters(b.dev, &before) == 0 &&
		    tb5_send(c.client, smr, 0, len, 1, 2) == 0 &&
		    await(a, is_recv, { &b }) && await(b, is_send, { &a }) &&
		    tb5_get_counters(b.dev, &after) == 0)
			return std::to_string(after.tx_frames - before.tx_frames);
		return std::string("error");
	});
	char *end = nullptr;
	const long frames = strtol(got.c_str(), &end, 10);

	return !got.empty() && *end == '\0' ? frames : -EIO;
}

// burst=N: a DATA header goes before every N payload frames of a message.
TEST(SimConfig, BurstIsTheFramesAfterEachDataHeader)
{
	TB5_SIM_ONLY(kSettings);
	const std::string fabric = "tb5test-burst-" + std::to_string(getpid()) +
				   ":hosts=1,loop=1";
	const size_t len = 64 * 4096;	// 64 payload frames

	// One header per frame: 128.
	EXPECT_EQ(child_frames_of_one_send(fabric + ",burst=1", len), 128);
	// The core's default, 16: four headers.
	EXPECT_EQ(child_frames_of_one_send(fabric, len), 68);
	EXPECT_EQ(child_frames_of_one_send(fabric + ",burst=16", len), 68);
	// One header for the whole message.
	EXPECT_EQ(child_frames_of_one_send(fabric + ",burst=64", len), 65);
	EXPECT_EQ(child_frames_of_one_send(fabric + ",burst=256", len), 65);
	std::string msg;

	for (const char *bad : {"x:burst=0", "x:burst=257", "x:burst=", "x:burst=many"}) {
		EXPECT_EQ(child_list_links(bad, &msg), EINVAL) << bad;
		EXPECT_NE(msg.find("burst="), std::string::npos) << bad << ": " << msg;
		EXPECT_NE(msg.find("1 to 256"), std::string::npos) << bad << ": " << msg;
	}
}

TEST(SimConfig, AFabricKeepsItsSettings)
{
	TB5_SIM_ONLY(kSettings);
	std::string fabric = std::string(getenv("TB5_SIM")).substr(
		0, std::string(getenv("TB5_SIM")).find(':'));
	std::string msg;
	tb5_link_info *l = nullptr;
	size_t n = 0;

	// This process makes the fabric with hosts=1: then it is full, and a
	// different size is refused.
	ASSERT_EQ(tb5_list_links(&l, &n), 0) << tb5_last_error();
	tb5_free_link_list(l);
	EXPECT_EQ(child_list_links((fabric + ":hosts=4").c_str(), &msg), EINVAL);
	EXPECT_NE(msg.find("has 1 hosts"), std::string::npos) << msg;
	EXPECT_EQ(child_list_links((fabric + ":uncabled=0-1").c_str(), &msg), EINVAL);
	EXPECT_NE(msg.find("has uncabled=none; TB5_SIM asks for uncabled=0-1"),
		  std::string::npos) << msg;
	EXPECT_EQ(child_list_links((fabric + ":cables=2").c_str(), &msg), EINVAL);
	EXPECT_NE(msg.find("has cables=1; TB5_SIM asks for cables=2"),
		  std::string::npos) << msg;
	EXPECT_EQ(child_list_links(fabric.c_str(), &msg), EBUSY);
	EXPECT_NE(msg.find("taken"), std::string::npos) << msg;
}

// A fabric that a libtb5 of another version made is a version mismatch
// (-EPROTONOSUPPORT, both versions named), not a protocol break; and the
// process that refuses it leaves the file as it found it, for the
// processes of that version.
TEST(SimConfig, AFabricOfAnotherVersionIsAVersionMismatch)
{
	TB5_SIM_ONLY(kSettings);
	using tb5::sim::FabricHeader;
	const std::string fabric = "tb5test-version-" + std::to_string(getpid());
	const std::string shm = "/tb5sim." + fabric;
	const uint32_t other = tb5::sim::kFabricVersion + 1;
	FabricHeader *h = tb5test::make_fabric_file(fabric, other);

	ASSERT_NE(h, nullptr) << strerror(errno);
	auto *p = reinterpret_cast<uint8_t *>(h);
	const std::vector<uint8_t> before(p, p + sizeof(FabricHeader));

	std::string msg;
	EXPECT_EQ(child_list_links(fabric.c_str(), &msg), EPROTONOSUPPORT);
	EXPECT_NE(msg.find("fabric " + fabric + " (/dev/shm" + shm + ") was made by "
			   "a libtb5 that speaks fabric version " + std::to_string(other) +
			   ", this libtb5 (" + tb5_version() + ") speaks fabric version " +
			   std::to_string(tb5::sim::kFabricVersion)),
		  std::string::npos) << msg;
	EXPECT_NE(msg.find("libtb5 of one release"), std::string::npos) << msg;
	EXPECT_EQ(msg.find("protocol"), std::string::npos) << msg;
	struct stat st = {};
	EXPECT_EQ(stat(("/dev/shm" + shm).c_str(), &st), 0) << "the refusal removed the file";
	EXPECT_EQ(std::vector<uint8_t>(p, p + sizeof(FabricHeader)), before)
		<< "the refusal wrote into the file";
	munmap(h, sizeof(FabricHeader));
	shm_unlink(shm.c_str());
}

// The drop counters through libtb5: none grow on clean traffic, and the
// words the tools print when a connection breaks. (They count from the
// link's creation: the tests before this one in the process, and on the
// kernel whatever used the link since tb5 was loaded, may have left some:
// two devices closed with a connection between them send CLOSEs that
// cross, and each end counts the other's as unknown_connection.)
TEST_F(LoopPair, DropCountersAndTheirWords)
{
	tb5_drops d, da0, db0, db;
	char buf[256];

	std::memset(&d, 0xff, sizeof(d));
	ASSERT_EQ(tb5_get_drops(a.dev, &d), 0) << tb5_last_error();
	EXPECT_EQ(tb5_get_drops(nullptr, &d), -EINVAL);

	// A message each way first: what earlier tests left on the rings
	// arrives before the counting starts.
	buffers(4096);
	ASSERT_TRUE(connect_pair(a, b, 0x1e, c));
	auto one = [&](uint64_t id) {
		ASSERT_EQ(tb5_recv(c.server, rmr, 0, 4096, 1, id), 0);
		ASSERT_EQ(tb5_send(c.client, smr, 0, 4096, 1, id), 0);
		auto r = await(a, is_recv, { &b });
		ASSERT_TRUE(r && r->status == 0);
		ASSERT_TRUE(await(b, is_send, { &a }));
	};
	one(1);
	ASSERT_EQ(tb5_get_drops(a.dev, &da0), 0);
	ASSERT_EQ(tb5_get_drops(b.dev, &db0), 0);
	for (uint64_t i = 2; i < 10; i++)
		one(i);
	ASSERT_EQ(tb5_get_drops(a.dev, &d), 0);
	ASSERT_EQ(tb5_get_drops(b.dev, &db), 0);
	EXPECT_STREQ(tb5_drops_describe(&da0, &d, buf, sizeof(buf)), "");
	EXPECT_STREQ(tb5_drops_describe(&db0, &db, buf, sizeof(buf)), "");

	tb5_drops before{}, after{};
	after.sequence_gap = 3;
	after.malformed = 1;
	EXPECT_STREQ(tb5_drops_describe(&before, &after, buf, sizeof(buf)),
		     "3 frames lost (sequence gap), 1 frame malformed");
	EXPECT_STREQ(tb5_drops_describe(&after, &after, buf, sizeof(buf)), "");
	after.ring_overflow = 2;
	EXPECT_STREQ(tb5_drops_describe(nullptr, &after, buf, 12), "3 frames lo");
	EXPECT_NE(std::string(tb5_strerror(-EBADMSG)).find("lost"), std::string::npos);
	EXPECT_NE(std::string(tb5_strerror(-EPROTO)).find("broke the protocol"),
		  std::string::npos);
}

// tb5_get_drops() counting one drop of a known kind, on either backend: a
// connector gives up (closes its endpoint) after its CONNECT reached the
// listener, and the listener accepts all the same. The ACCEPT finds no
// connecting endpoint on the connector's end, which drops it as
// unknown_connection and answers it with a CLOSE (the transport core's
// tb5_rx_accept(), the same in tb5.ko and the simulator): exactly one drop
// there, none on the listener's end, and the accepted endpoint reads that
// the peer closed.
TEST_F(LoopPair, AnAcceptForAClosedConnectorIsOneUnknownConnectionDrop)
{
	tb5_drops a0, b0, a1, b1;
	tb5_address addr;
	tb5_endpoint *listener = nullptr, *client = nullptr, *server = nullptr;
	char buf[256];

	// A message each way first: what earlier tests left on the rings
	// arrives before the counting starts.
	buffers(4096);
	ASSERT_TRUE(connect_pair(a, b, 0x1f, c));
	ASSERT_EQ(tb5_recv(c.server, rmr, 0, 4096, 1, 1), 0);
	ASSERT_EQ(tb5_send(c.client, smr, 0, 4096, 1, 1), 0);
	auto r = await(a, is_recv, { &b });
	ASSERT_TRUE(r && r->status == 0);
	ASSERT_TRUE(await(b, is_send, { &a }));
	ASSERT_EQ(tb5_get_drops(a.dev, &a0), 0) << tb5_last_error();
	ASSERT_EQ(tb5_get_drops(b.dev, &b0), 0) << tb5_last_error();

	ASSERT_EQ(tb5_endpoint_listen(a.dev, 0x20, 0, 7, &listener), 0) << tb5_last_error();
	ASSERT_EQ(tb5_endpoint_address(listener, &addr), 0);
	ASSERT_EQ(tb5_endpoint_connect(b.dev, &addr, 8, &client), 0) << tb5_last_error();
	auto in = await(a, [&](const tb5_wc &w) {
		return w.kind == TB5_WC_EVENT && w.event == TB5_WC_INCOMING && w.ep == listener;
	}, { &b });
	ASSERT_TRUE(in) << "no TB5_WC_INCOMING";
	ASSERT_EQ(tb5_endpoint_close(client), 0);
	ASSERT_EQ(tb5_endpoint_accept(listener, 9, &server), 0) << tb5_last_error();
	auto gone = await(a, [&](const tb5_wc &w) {
		return w.kind == TB5_WC_EVENT && w.ep == server;
	}, { &b });
	ASSERT_TRUE(gone) << "the accepted endpoint heard nothing";
	EXPECT_EQ(gone->event, TB5_WC_PEER_CLOSED);
	EXPECT_EQ(gone->status, -ECONNRESET);

	ASSERT_EQ(tb5_get_drops(a.dev, &a1), 0) << tb5_last_error();
	ASSERT_EQ(tb5_get_drops(b.dev, &b1), 0) << tb5_last_error();
	EXPECT_EQ(b1.unknown_connection, b0.unknown_connection + 1);
	EXPECT_EQ(b1.malformed, b0.malformed);
	EXPECT_EQ(b1.out_of_window, b0.out_of_window);
	EXPECT_EQ(b1.ring_overflow, b0.ring_overflow);
	EXPECT_EQ(b1.sequence_gap, b0.sequence_gap);
	EXPECT_STREQ(tb5_drops_describe(&b0, &b1, buf, sizeof(buf)),
		     "1 frame for no open connection (unknown connection)");
	EXPECT_STREQ(tb5_drops_describe(&a0, &a1, buf, sizeof(buf)), "")
		<< "the listener's end dropped nothing";
	EXPECT_EQ(tb5_endpoint_close(server), 0);
	EXPECT_EQ(tb5_endpoint_close(listener), 0);
}

} // namespace

int main(int argc, char **argv)
{
	::testing::InitGoogleTest(&argc, argv);
	// TB5_TEST_SIM_OPTS adds settings (ctest runs the suite again with
	// copy=2: the same tests through the copy engine). With
	// TB5_TEST_BACKEND=kernel, none: tb5.ko's first loop pair.
	const char *more = getenv("TB5_TEST_SIM_OPTS");

	tb5libtest::use_simulator("tb5test-loop", std::string("hosts=1,loop=1,ring=256") +
				  (more && *more ? std::string(",") + more : ""));
	return RUN_ALL_TESTS();
}
