// SPDX-License-Identifier: MIT
//
// lib_harness.cc - see lib_harness.hpp.
#include "lib_harness.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>

#include <gtest/gtest.h>

namespace tb5libtest {

std::string use_simulator(const std::string &prefix, const std::string &opts)
{
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

} // namespace tb5libtest
