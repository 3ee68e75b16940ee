// SPDX-License-Identifier: MIT
//
// gpu_echo.hpp - the two-process halves that test_sim_gpu.cc (stand-in
// memory) and test_sim_cuda.cc (CUDA memory) share: a client's connect to
// the other host's well-known service, the child's echo of every message
// from and back into one registered region, and what a registration says
// on stderr.
#ifndef TB5_LIB_GPU_ECHO_HPP
#define TB5_LIB_GPU_ECHO_HPP

#include <sys/mman.h>
#include <sys/wait.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

#include "lib_harness.hpp"

namespace tb5libtest {

// Connects @d to @service of its link's peer, retrying while the peer is
// not listening yet; null when it never did.
inline tb5_endpoint *connect_service(Dev &d, uint64_t service, int attempts = 10000)
{
	for (int i = 0; i < attempts; i++) {
		tb5_link_info info;
		tb5_endpoint *e = nullptr;

		if (tb5_query(d.dev, &info))
			return nullptr;
		tb5_address addr = { info.peer_host, service, 0 };
		if (!tb5_endpoint_connect(d.dev, &addr, 7, &e)) {
			auto ev = await(d, [](const tb5_wc &w) { return w.kind == TB5_WC_EVENT; });
			if (ev && ev->event == TB5_WC_CONNECTED)
				return e;
			tb5_endpoint_close(e);
		}
		usleep(1000);
	}
	return nullptr;
}

// Receives every message on @e into @mr (@len bytes) and sends it back
// from there, until the peer closes: 0, or where it failed (12..15). A
// send by reference completes once the peer has copied it, after the
// peer's receive, so the peer's close after its last receive may come
// first.
inline int echo_region(Dev &d, tb5_endpoint *e, tb5_mr *mr, uint64_t len)
{
	auto closed = [](const tb5_wc &w) {
		return (w.kind == TB5_WC_EVENT && w.event == TB5_WC_PEER_CLOSED) ||
		       (w.kind != TB5_WC_EVENT && w.status == -ECONNRESET);
	};

	for (;;) {
		tb5_wc w;

		if (tb5_recv(e, mr, 0, len, 1, 1))
			return tb5_endpoint_state(e, nullptr) == TB5_ENDPOINT_PEER_CLOSED ? 0 : 12;
		while (tb5_poll(d.dev, &w, 1) == 0)
			;
		while (w.kind == TB5_WC_EVENT && w.event != TB5_WC_PEER_CLOSED)
			while (tb5_poll(d.dev, &w, 1) == 0)
				;	// the listener's INCOMING, say
		if (closed(w))
			return 0;
		if (w.kind != TB5_WC_RECV || w.status)
			return 13;
		if (tb5_send(e, mr, 0, w.bytes, 2, 2))
			return 14;
		while (tb5_poll(d.dev, &w, 1) == 0)
			;
		if (closed(w))
			return 0;
		if (w.kind != TB5_WC_SEND || w.status)
			return 15;
	}
}

// Closes @e, the client's end to the echo child @child, and waits for the
// child: its exit status (0: it saw the close and ended well), 128 + the
// signal that ended it, or -1 when the close failed (the child is killed).
inline int close_and_reap(tb5_endpoint *e, pid_t child)
{
	int st = 0;
	const int closed = tb5_endpoint_close(e);

	if (closed)
		kill(child, SIGKILL);
	waitpid(child, &st, 0);
	if (closed)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

// What the process writes to stderr while @fn runs.
inline std::string stderr_of(const std::function<void()> &fn)
{
	int cap = memfd_create("stderr", MFD_CLOEXEC);
	int saved = dup(2);
	std::string out;
	char buf[4096];
	ssize_t n;

	fflush(stderr);
	dup2(cap, 2);
	fn();
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	lseek(cap, 0, SEEK_SET);
	while ((n = read(cap, buf, sizeof(buf))) > 0)
		out.append(buf, size_t(n));
	close(cap);
	return out;
}

} // namespace tb5libtest

#endif // TB5_LIB_GPU_ECHO_HPP
