// SPDX-License-Identifier: MIT
//
// test_two_hosts.cc - libtb5 between two hosts: over the simulator this
// process and a forked child, each a host of the same fabric, joined by a
// simulated cable ("sim_h<slot>"); with TB5_TEST_BACKEND=kernel two VMs on
// the emulated USB4 fabric, joined by tb links, the other host running this
// binary with TB5_TEST_ROLE=serve (tests/kernel/vm-tests-fabric.sh).
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "lib_harness.hpp"

namespace {

using namespace tb5libtest;

constexpr uint64_t kEchoService = 0x6563686f;	// "echo"
constexpr size_t kMax = 64 << 20;

// The link to the other host, once it is READY; "" on timeout.
std::string peer_link(double timeout_s = 20)
{
	return wait_peer_link(timeout_s);
}

// One connection of the echo service: every message back until the peer
// closes; 0 when all went well.
int echo(Dev &d, tb5_endpoint *e)
{
	// One buffer per process (a process serves one device).
	static std::vector<uint8_t> buf(kMax);
	static tb5_mr *mr = nullptr;

	if (!mr && tb5_reg_host(d.dev, buf.data(), buf.size(), &mr))
		return 10;
	for (;;) {
		if (tb5_recv(e, mr, 0, buf.size(), 1, 1))
			return 12;
		tb5_wc w;
		int n;

		while ((n = tb5_poll(d.dev, &w, 1)) == 0)
			;
		while (w.kind == TB5_WC_EVENT) {
			if (w.event == TB5_WC_PEER_CLOSED)
				return 0;
			while ((n = tb5_poll(d.dev, &w, 1)) == 0)
				;	// the listener's INCOMING, say
		}
		if (w.kind == TB5_WC_RECV && w.status == -ECONNRESET)
			return 0;	// the peer closed with our receive posted
		if (w.kind != TB5_WC_RECV || w.status)
			return 13;
		if (tb5_send(e, mr, 0, w.bytes, 2, 2))
			return 14;
		while ((n = tb5_poll(d.dev, &w, 1)) == 0)
			;
		if (w.kind != TB5_WC_SEND || w.status)
			return 15;
	}
}

// The child: echo every message back on a well-known listener until the
// peer closes. Exit status 0 when all went well.
[[noreturn]] void echo_server()
{
	std::string link = peer_link();
	Dev d;
	tb5_endpoint *l = nullptr, *e = nullptr;

	if (link.empty() || d.open(link) ||
	    tb5_endpoint_listen(d.dev, kEchoService, TB5_LISTEN_WELL_KNOWN, 0, &l))
		_exit(10);
	while (tb5_endpoint_accept(l, 0, &e) == -EAGAIN)
		if (tb5_wait(d.dev, 20000) == -ETIMEDOUT)
			_exit(11);
	_exit(echo(d, e));
}

class TwoHosts : public ::testing::Test {
protected:
	void SetUp() override
	{
		// On the kernel the echo server is the other host's.
		if (!peer_is_remote()) {
			child = fork();
			ASSERT_GE(child, 0);
			if (child == 0)
				echo_server();
		}
		link = peer_link();
		ASSERT_FALSE(link.empty()) << "the child never came up: " << tb5_last_error();
		ASSERT_EQ(d.open(link), 0) << tb5_last_error();
	}
	void TearDown() override
	{
		if (child > 0) {
			kill(child, SIGKILL);
			waitpid(child, nullptr, 0);
		}
	}
	int reap()
	{
		int st = 0;

		waitpid(child, &st, 0);
		child = -1;
		return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	}
	// Connects to the child's echo service, retrying while it is not
	// listening yet (or the link still shows a peer that died).
	tb5_endpoint *connect_echo()
	{
		for (int attempt = 0; attempt < 5000; attempt++) {
			tb5_link_info info;
			tb5_endpoint *e = nullptr;

			EXPECT_EQ(tb5_query(d.dev, &info), 0);
			tb5_address addr = { info.peer_host, kEchoService, 0 };
			if (info.state != TB5_LINK_STATE_READY ||
			    tb5_endpoint_connect(d.dev, &addr, 7, &e)) {
				usleep(1000);
				continue;
			}
			auto ev = await(d, [](const tb5_wc &w) {
				return w.kind == TB5_WC_EVENT;
			});
			if (ev && ev->event == TB5_WC_CONNECTED)
				return e;
			tb5_endpoint_close(e);
			usleep(1000);
		}
		return nullptr;
	}

	pid_t child = -1;
	std::string link;
	Dev d;
};

TEST_F(TwoHosts, TheCableJoinsTwoHosts)
{
	tb5_link_info info;

	ASSERT_EQ(tb5_query(d.dev, &info), 0);
	EXPECT_EQ(info.state, uint32_t(TB5_LINK_STATE_READY));
	EXPECT_NE(info.peer_host, 0u);
	EXPECT_NE(info.peer_host, info.local_host);
	EXPECT_FALSE(info.caps & TB5_CAP_LOOP);
}

TEST_F(TwoHosts, EchoesMessagesOfEverySizeIntact)
{
	std::vector<uint8_t> s(kMax), r(kMax);
	tb5_mr *smr = nullptr, *rmr = nullptr;

	ASSERT_EQ(tb5_reg_host(d.dev, s.data(), s.size(), &smr), 0);
	ASSERT_EQ(tb5_reg_host(d.dev, r.data(), r.size(), &rmr), 0);
	tb5_endpoint *e = connect_echo();
	ASSERT_TRUE(e);
	uint32_t seed = 1;

	for (size_t len : { size_t(0), size_t(1), size_t(4096), size_t(4097),
			    size_t(1 << 20) + 11, kMax }) {
		SCOPED_TRACE(len);
		fill_pattern(s.data(), len, seed);
		ASSERT_NO_FATAL_FAILURE(echo_once(d, e, smr, 0, len, rmr, 0, r.size()));
		ASSERT_EQ(check_pattern(r.data(), len, seed), -1);
		seed++;
	}
	ASSERT_EQ(tb5_endpoint_close(e), 0);
	// (The serving host reports its sessions itself.)
	if (!peer_is_remote()) {
		EXPECT_EQ(reap(), 0) << "the echo server failed";
	}
}

TEST_F(TwoHosts, APeerThatDiesTakesTheLinkDownAndANewOneBringsItBack)
{
	TB5_SIM_ONLY("a simulated host is a process, and the cable goes down "
		     "when it dies; a kernel's link outlives its processes "
		     "(fabric.kill and fabric.unplug test the kernel's side)");
	std::vector<uint8_t> buf(4096);
	tb5_mr *mr = nullptr;

	ASSERT_EQ(tb5_reg_host(d.dev, buf.data(), buf.size(), &mr), 0);
	tb5_endpoint *e = connect_echo();
	ASSERT_TRUE(e);
	ASSERT_EQ(tb5_recv(e, mr, 0, 4096, 2, 1), 0);
	kill(child, SIGKILL);
	reap();
	// The receive fails and the endpoint reports the link lost.
	auto ev = await(d, [](const tb5_wc &w) { return w.kind == TB5_WC_EVENT; },
			{}, 10);
	ASSERT_TRUE(ev) << "no event after the peer died";
	EXPECT_EQ(ev->event, TB5_WC_ERROR);
	EXPECT_EQ(ev->status, -ENOLINK);
	tb5_link_info info;
	ASSERT_EQ(tb5_query(d.dev, &info), 0);
	EXPECT_EQ(info.state, uint32_t(TB5_LINK_STATE_DOWN));
	auto r = await(d, [](const tb5_wc &w) { return w.kind == TB5_WC_RECV; });
	ASSERT_TRUE(r) << "the posted receive never completed";
	EXPECT_NE(r->status, 0);
	ASSERT_EQ(tb5_endpoint_close(e), 0);
	d.wcs.clear();

	// A new process takes the free slot: the cable works again.
	child = fork();
	ASSERT_GE(child, 0);
	if (child == 0)
		echo_server();
	ASSERT_EQ(peer_link(), link);
	e = connect_echo();
	ASSERT_TRUE(e);
	ASSERT_EQ(tb5_recv(e, mr, 0, 4096, 2, 1), 0);
	ASSERT_EQ(tb5_send(e, mr, 0, 100, 1, 2), 0);
	auto got = await(d, [](const tb5_wc &w) { return w.kind == TB5_WC_RECV; });
	ASSERT_TRUE(got);
	EXPECT_EQ(got->status, 0);
	EXPECT_EQ(got->bytes, 100u);
}

// The ready sim_h links of this process (the simulator's only).
int ready_links()
{
	tb5_link_info *l = nullptr;
	size_t n = 0;
	int ready = 0;

	if (tb5_list_links(&l, &n))
		return -1;
	for (size_t k = 0; k < n; k++)
		ready += !strncmp(l[k].name, "sim_h", 5) &&
			 l[k].state == TB5_LINK_STATE_READY;
	tb5_free_link_list(l);
	return ready;
}

TEST_F(TwoHosts, ThreeProcessesFormAFullMesh)
{
	TB5_SIM_ONLY("three processes are three hosts of one simulated fabric; "
		     "the kernel's three hosts are fabric.triangle's VMs");
	// A second child: it exits 0 once it sees both other hosts (this
	// process and the echo server) over its two cables.
	pid_t third = fork();

	ASSERT_GE(third, 0);
	if (third == 0) {
		for (int i = 0; i < 20000; i++) {
			if (ready_links() == 2)
				_exit(0);
			usleep(1000);
		}
		_exit(20);
	}
	bool both = false;

	for (int i = 0; i < 20000 && !both; i++) {
		both = ready_links() == 2;
		if (!both)
			usleep(1000);
	}
	int st = 0;

	waitpid(third, &st, 0);
	EXPECT_TRUE(both) << "this process never saw both other hosts";
	EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0)
		<< "the third process never saw both other hosts";
}

} // namespace

int main(int argc, char **argv)
{
	::testing::InitGoogleTest(&argc, argv);
	// TB5_TEST_SIM_OPTS adds settings (ctest runs the suite again with
	// copy=2: the same tests through the copy engine).
	const char *more = getenv("TB5_TEST_SIM_OPTS");

	tb5libtest::use_simulator("tb5test-mesh", std::string("hosts=3,loop=0") +
				  (more && *more ? std::string(",") + more : ""));
	// The other host of the fabric (kernel only): the echo service.
	if (tb5libtest::serve_role())
		return tb5libtest::serve(kEchoService, echo);
	return RUN_ALL_TESTS();
}
