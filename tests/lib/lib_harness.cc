// SPDX-License-Identifier: MIT
//
// lib_harness.cc - see lib_harness.hpp.
#include "lib_harness.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include <gtest/gtest.h>

namespace tb5libtest {

bool on_kernel()
{
	static const int kernel = [] {
		const char *b = getenv("TB5_TEST_BACKEND");

		if (!b || !*b || !strcmp(b, "sim"))
			return 0;
		if (!strcmp(b, "kernel"))
			return 1;
		fprintf(stderr, "TB5_TEST_BACKEND=%s: \"sim\" or \"kernel\"\n", b);
		exit(2);
	}();

	return kernel;
}

uint32_t backend()
{
	return on_kernel() ? TB5_BACKEND_KERNEL : TB5_BACKEND_SIM;
}

std::string use_simulator(const std::string &prefix, const std::string &opts)
{
	if (on_kernel()) {
		unsetenv("TB5_SIM");
		return "";
	}
	std::string fabric = prefix + "-" + std::to_string(getpid());
	std::string spec = fabric + (opts.empty() ? "" : ":" + opts);

	setenv("TB5_SIM", spec.c_str(), 1);
	return fabric;
}

Dev::Dev(const std::string &name)
{
	EXPECT_EQ(open(name), 0) << name << ": " << tb5_last_error();
}

Dev::~Dev()
{
	if (dev)
		tb5_close(dev);
}

int Dev::open(const std::string &name)
{
	return tb5_open(name.c_str(), &dev);
}

void Dev::poll()
{
	tb5_wc wc[16];
	int n = tb5_poll(dev, wc, 16);

	EXPECT_GE(n, 0) << tb5_strerror(n);
	for (int i = 0; i < n; i++)
		wcs.push_back(wc[i]);
}

std::optional<tb5_wc> Dev::take(const std::function<bool(const tb5_wc &)> &pred)
{
	for (auto it = wcs.begin(); it != wcs.end(); ++it) {
		if (pred(*it)) {
			tb5_wc w = *it;

			wcs.erase(it);
			return w;
		}
	}
	return std::nullopt;
}

bool poll_until(std::initializer_list<Dev *> devs,
		const std::function<bool()> &pred, double timeout_s)
{
	auto deadline = std::chrono::steady_clock::now() +
			std::chrono::duration<double>(timeout_s);

	while (!pred()) {
		if (std::chrono::steady_clock::now() > deadline)
			return false;
		for (Dev *d : devs)
			d->poll();
	}
	return true;
}

std::optional<tb5_wc> await(Dev &d, const std::function<bool(const tb5_wc &)> &pred,
			    std::initializer_list<Dev *> also, double timeout_s)
{
	std::optional<tb5_wc> got;
	auto deadline = std::chrono::steady_clock::now() +
			std::chrono::duration<double>(timeout_s);

	while (!(got = d.take(pred))) {
		if (std::chrono::steady_clock::now() > deadline)
			return std::nullopt;
		d.poll();
		for (Dev *o : also)
			o->poll();
	}
	return got;
}

bool connect_pair(Dev &sd, Dev &cd, uint64_t service, Conn &out, uint32_t flags)
{
	tb5_address addr;
	int ret = tb5_endpoint_listen(sd.dev, service, flags, 100, &out.listener);

	EXPECT_EQ(ret, 0) << tb5_last_error();
	if (ret)
		return false;
	EXPECT_EQ(tb5_endpoint_address(out.listener, &addr), 0);
	ret = tb5_endpoint_connect(cd.dev, &addr, 200, &out.client);
	EXPECT_EQ(ret, 0) << tb5_last_error();
	if (ret)
		return false;
	auto in = await(sd, [](const tb5_wc &w) {
		return w.kind == TB5_WC_EVENT && w.event == TB5_WC_INCOMING;
	}, { &cd });
	EXPECT_TRUE(in) << "no TB5_WC_INCOMING";
	if (!in)
		return false;
	EXPECT_EQ(in->user_data, 100u) << "an event carries the endpoint's context";
	ret = tb5_endpoint_accept(out.listener, 300, &out.server);
	EXPECT_EQ(ret, 0) << tb5_last_error();
	if (ret)
		return false;
	auto up = await(cd, [](const tb5_wc &w) { return w.kind == TB5_WC_EVENT; },
			{ &sd });
	EXPECT_TRUE(up && up->event == TB5_WC_CONNECTED && up->status == 0);
	return up && up->event == TB5_WC_CONNECTED;
}

bool find_loop_pair(std::string &a, std::string &b)
{
	tb5_link_info *l = nullptr;
	size_t n = 0;

	if (tb5_list_links(&l, &n))
		return false;
	bool found = false;

	for (size_t i = 0; i < n && !found; i++)
		for (size_t j = 0; j < n && !found; j++)
			if (i != j && l[i].state == TB5_LINK_STATE_READY &&
			    l[i].peer_host == l[j].local_host) {
				a = l[i].name;
				b = l[j].name;
				found = true;
			}
	tb5_free_link_list(l);
	return found;
}

bool peer_is_remote()
{
	return on_kernel();
}

bool serve_role()
{
	const char *r = getenv("TB5_TEST_ROLE");

	return r && !strcmp(r, "serve");
}

namespace {

// The ready links to another host, in the order libtb5 lists them.
std::vector<std::string> peer_links()
{
	tb5_link_info *l = nullptr;
	size_t n = 0;
	std::vector<std::string> names;

	if (tb5_list_links(&l, &n))
		return names;
	for (size_t k = 0; k < n; k++)
		if (l[k].state == TB5_LINK_STATE_READY && !(l[k].caps & TB5_CAP_LOOP) &&
		    l[k].peer_host && l[k].peer_host != l[k].local_host)
			names.push_back(l[k].name);
	tb5_free_link_list(l);
	return names;
}

// One serving process: @service on link @name until SIGTERM; the status of
// the first session that failed.
int serve_link(const std::string &name, uint64_t service,
	       const std::function<int(Dev &, tb5_endpoint *)> &session)
{
	Dev d;
	tb5_endpoint *l = nullptr;

	if (d.open(name) ||
	    tb5_endpoint_listen(d.dev, service, TB5_LISTEN_WELL_KNOWN, 0, &l)) {
		printf("serve %s: cannot listen for %#llx: %s\n", name.c_str(),
		       (unsigned long long)service, tb5_last_error());
		return 1;
	}
	printf("serve %s: listening for %#llx\n", name.c_str(),
	       (unsigned long long)service);
	fflush(stdout);
	for (int n = 1;; n++) {
		tb5_endpoint *e = nullptr;
		int ret;

		while ((ret = tb5_endpoint_accept(l, 0, &e)) == -EAGAIN)
			tb5_wait(d.dev, 1000);
		if (ret) {
			printf("serve %s: accept: %s\n", name.c_str(), tb5_last_error());
			return 1;
		}
		ret = session(d, e);
		tb5_endpoint_close(e);
		d.wcs.clear();
		printf("serve %s: session %d: %s (%d)\n", name.c_str(), n,
		       ret ? "FAILED" : "ok", ret);
		fflush(stdout);
		if (ret)
			return ret;
	}
}

} // namespace

std::string wait_peer_link(double timeout_s)
{
	auto deadline = std::chrono::steady_clock::now() +
			std::chrono::duration<double>(timeout_s);

	for (;;) {
		auto names = peer_links();

		if (!names.empty())
			return names.back();
		if (std::chrono::steady_clock::now() > deadline)
			return "";
		usleep(1000);
	}
}

int serve(uint64_t service, const std::function<int(Dev &, tb5_endpoint *)> &session)
{
	if (!on_kernel() || !serve_role()) {
		fprintf(stderr, "serve: TB5_TEST_ROLE=serve is for TB5_TEST_BACKEND=kernel\n");
		return 2;
	}
	if (wait_peer_link(120).empty()) {
		printf("serve: no ready link to another host in 120 s\n");
		return 1;
	}
	// SIGTERM is taken with sigtimedwait() below; the servers get the
	// default action back.
	sigset_t term, old;

	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	sigprocmask(SIG_BLOCK, &term, &old);
	std::vector<pid_t> kids;

	for (const std::string &name : peer_links()) {
		fflush(stdout);
		pid_t pid = fork();

		if (pid == 0) {
			sigprocmask(SIG_SETMASK, &old, nullptr);
			_exit(serve_link(name, service, session));
		}
		if (pid > 0)
			kids.push_back(pid);
	}
	int failed = 0;
	const timespec tick = { 0, 200 * 1000 * 1000 };

	while (sigtimedwait(&term, nullptr, &tick) != SIGTERM) {
		int st = 0;
		pid_t pid = waitpid(-1, &st, WNOHANG);

		if (pid <= 0)
			continue;
		// A server ended by itself: a session failed.
		failed = 1;
		kids.erase(std::remove(kids.begin(), kids.end(), pid), kids.end());
		if (kids.empty())
			break;
	}
	for (pid_t pid : kids)
		kill(pid, SIGTERM);
	for (pid_t pid : kids)
		waitpid(pid, nullptr, 0);
	printf("serve: stopped%s\n", failed ? ", a session FAILED" : "");
	return failed;
}

void fill_pattern(uint8_t *p, size_t len, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 1;

	for (size_t i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = uint8_t(x >> 23);
	}
}

long long check_pattern(const uint8_t *p, size_t len, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 1;

	for (size_t i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		if (p[i] != uint8_t(x >> 23))
			return (long long)i;
	}
	return -1;
}

void echo_once(Dev &d, tb5_endpoint *e, tb5_mr *smr, uint64_t soff, uint64_t len,
	       tb5_mr *rmr, uint64_t roff, uint64_t rlen)
{
	ASSERT_EQ(tb5_recv(e, rmr, roff, rlen, 2, 1), 0);
	ASSERT_EQ(tb5_send(e, smr, soff, len, 1, 2), 0);
	auto got = await(d, [](const tb5_wc &w) { return w.kind == TB5_WC_RECV; }, {}, 60);
	ASSERT_TRUE(got);
	ASSERT_EQ(got->status, 0);
	ASSERT_EQ(got->bytes, len);
	ASSERT_TRUE(await(d, [](const tb5_wc &w) { return w.kind == TB5_WC_SEND; }));
}

} // namespace tb5libtest
