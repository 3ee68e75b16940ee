// SPDX-License-Identifier: MIT
//
// echo.cc - the round trip's client and echo server (see echo.hpp).
#include "echo.hpp"
#include "errors.hpp"
#include "handles.hpp"

#include "report.hpp"

#include <cerrno>
#include <cinttypes>
#include <cstring>
#include <utility>

namespace tb5selftest {

using tb5::tools::Error;
using tb5::tools::api_message;
using tb5::tools::throw_api;

namespace {

// Bytes past each received message that must stay untouched: half inside
// the posted receive, half past it.
constexpr uint64_t kSlack = 64;
constexpr uint8_t kFill = 0xee;
constexpr int kSpins = 256;		// empty polls before sleeping

uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

uint64_t pattern_seed(uint64_t len, uint64_t seq)
{
	return mix((seq << 40) ^ len ^ 0x7462350000000000ull);
}

} // namespace

// "; tb5_0 has dropped 3 frames lost (sequence gap) since it came up", or
// "" when the link dropped nothing: what broke a connection, in words.
std::string dropped(tb5_device *dev, const std::string &link)
{
	struct tb5_drops d {};
	char why[256] = "";

	if (tb5_get_drops(dev, &d) == 0)
		tb5_drops_describe(nullptr, &d, why, sizeof(why));
	if (!*why)
		return "";
	return "; " + link + " has dropped " + why + " since it came up";
}

std::vector<uint64_t> round_trip_sizes()
{
	return {0, 1, 4095, 4096, 4097, 1u << 20};
}

void fill_pattern(uint8_t *buf, uint64_t len, uint64_t seq)
{
	const uint64_t seed = pattern_seed(len, seq);

	for (uint64_t off = 0; off < len; off += 8) {
		const uint64_t word = mix(seed + off);
		memcpy(buf + off, &word, len - off < 8 ? len - off : 8);
	}
}

uint64_t find_mismatch(const uint8_t *buf, uint64_t len, uint64_t seq)
{
	const uint64_t seed = pattern_seed(len, seq);

	for (uint64_t off = 0; off < len; off += 8) {
		const uint64_t word = mix(seed + off);
		const uint64_t n = len - off < 8 ? len - off : 8;
		if (memcmp(buf + off, &word, n)) {
			uint8_t want[8];
			memcpy(want, &word, 8);
			for (uint64_t i = 0; i < n; i++) {
				if (buf[off + i] != want[i])
					return off + i;
			}
		}
	}
	return len;
}

int poll_until(tb5_device *dev, Clock::time_point deadline,
	      const std::function<void(const tb5_wc &)> &on_wc,
	      const std::function<bool()> &done)
{
	tb5_wc wc[16];
	int idle = 0;

	while (!done()) {
		const int n = tb5_poll(dev, wc, 16);
		if (n < 0)
			return n;
		for (int i = 0; i < n; i++)
			on_wc(wc[i]);
		if (n > 0) {
			idle = 0;
			continue;
		}
		const auto now = Clock::now();
		if (now >= deadline)
			return -ETIMEDOUT;
		if (++idle < kSpins)
			continue;
		const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
		const int err = tb5_wait(dev, static_cast<int>(left < 50 ? left : 50));
		if (err && err != -ETIMEDOUT && err != -EINTR)
			return err;
	}
	return 0;
}

namespace {

// run_client(): fills @res as it goes, throws Error for what failed; sets
// res.outcome to kOk at the end, or to kRefused before it throws.
void round_trip(ClientResult &res, const std::string &link, const tb5_address &addr,
		const std::vector<uint64_t> &sizes_wanted, std::chrono::milliseconds timeout)
{
	tb5_device *raw = nullptr;
	const double timeout_s = static_cast<double>(timeout.count()) / 1000.0;

	int err = tb5_open(link.c_str(), &raw);
	if (err)
		throw_api("tb5_open(" + link + ")", err);
	// Closing the device closes the endpoint and deregisters the regions;
	// the buffers are declared first so that they outlive it.
	std::vector<uint64_t> sizes;
	tb5_link_info info {};
	err = tb5_query(raw, &info);
	if (err) {
		tb5_close(raw);
		throw_api("tb5_query", err);
	}
	for (uint64_t n : sizes_wanted) {
		if ((!info.max_msg || n <= info.max_msg) && n <= kEchoMax)
			sizes.push_back(n);
		else
			res.log.push_back(format("%s skipped: the link's largest message is %s",
						 bytes(n).c_str(), bytes(info.max_msg).c_str()));
	}
	uint64_t max_len = 1;
	for (uint64_t n : sizes)
		max_len = n > max_len ? n : max_len;
	auto send_buf = std::make_unique<uint8_t[]>(max_len);
	auto recv_buf = std::make_unique<uint8_t[]>(max_len + 2 * kSlack);
	tb5::tools::DevicePtr dev(raw);

	if (!(info.caps & TB5_CAP_HOST_MEM))
		throw Error("the link cannot register host memory (no TB5_CAP_HOST_MEM)");
	tb5_mr *send_mr = nullptr, *recv_mr = nullptr;
	err = tb5_reg_host(dev.get(), send_buf.get(), max_len, &send_mr);
	if (!err)
		err = tb5_reg_host(dev.get(), recv_buf.get(), max_len + 2 * kSlack, &recv_mr);
	if (err)
		throw_api("tb5_reg_host", err);

	tb5_endpoint *ep = nullptr;
	err = tb5_endpoint_connect(dev.get(), &addr, 1, &ep);
	if (err)
		throw_api(format("tb5_endpoint_connect(host %s)", hex(addr.host).c_str()), err);
	bool connected = false;
	int ep_error = 0;		// the endpoint failed or the peer closed it
	const auto on_event = [&](const tb5_wc &wc) {
		if (wc.ep != ep || wc.kind != TB5_WC_EVENT)
			return false;
		if (wc.event == TB5_WC_CONNECTED)
			connected = true;
		else if (wc.event == TB5_WC_PEER_CLOSED)
			ep_error = wc.status ? wc.status : -ECONNRESET;
		else if (wc.event == TB5_WC_ERROR)
			ep_error = wc.status ? wc.status : -EIO;
		return true;
	};
	const auto t_connect = Clock::now();
	err = poll_until(dev.get(), t_connect + timeout, [&](const tb5_wc &wc) { on_event(wc); },
			[&] { return connected || ep_error; });
	if (err == -ETIMEDOUT)
		throw Error(format("no answer to the connection request within %.1f s", timeout_s));
	if (err)
		throw_api("tb5_poll", err);
	if (!connected) {
		res.outcome = ep_error == -ECONNREFUSED ? ClientResult::kRefused : ClientResult::kFailed;
		throw Error(std::string("connection failed: ") + tb5_strerror(ep_error));
	}
	res.log.push_back(format("connected in %.0f us",
				 std::chrono::duration<double, std::micro>(Clock::now() - t_connect).count()));

	for (uint64_t k = 0; k < sizes.size(); k++) {
		const uint64_t n = sizes[k];
		bool sent = false, received = false;
		int send_status = 0, recv_status = 0;
		uint64_t recv_bytes = 0;

		fill_pattern(send_buf.get(), n, k);
		memset(recv_buf.get(), kFill, n + 2 * kSlack);
		const auto t0 = Clock::now();
		err = tb5_recv(ep, recv_mr, 0, n + kSlack, kTagEcho, 2 * k + 1);
		if (err)
			throw_api(format("message %" PRIu64 " (%s): tb5_recv", k, bytes(n).c_str()), err);
		err = tb5_send(ep, send_mr, 0, n, kTagPing, 2 * k);
		if (err)
			throw_api(format("message %" PRIu64 " (%s): tb5_send", k, bytes(n).c_str()), err);
		err = poll_until(dev.get(), Clock::now() + timeout,
			[&](const tb5_wc &wc) {
				if (on_event(wc) || wc.ep != ep)
					return;
				if (wc.kind == TB5_WC_SEND && wc.user_data == 2 * k) {
					sent = true;
					send_status = wc.status;
				} else if (wc.kind == TB5_WC_RECV && wc.user_data == 2 * k + 1) {
					received = true;
					recv_status = wc.status;
					recv_bytes = wc.bytes;
				}
			},
			[&] { return (sent && received) || ep_error || send_status || recv_status; });
		const double rtt = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
		const std::string what = format("message %" PRIu64 " (%s)", k, bytes(n).c_str());
		if (err == -ETIMEDOUT)
			throw Error(what + format(": %s within %.1f s", !sent ? "not sent (no clear-to-send from the peer)"
									     : "no echo", timeout_s));
		if (err)
			throw_api("tb5_poll", err);
		if (send_status)
			throw Error(what + ": send failed: " + tb5_strerror(send_status) +
				    dropped(dev.get(), link));
		if (recv_status)
			throw Error(what + ": receive failed: " + tb5_strerror(recv_status) +
				    dropped(dev.get(), link));
		if (ep_error)
			throw Error(what + ": the connection ended: " + tb5_strerror(ep_error) +
				    dropped(dev.get(), link));
		if (recv_bytes != n)
			throw Error(what + format(": the echo is %" PRIu64 " bytes", recv_bytes));
		const uint64_t bad = find_mismatch(recv_buf.get(), n, k);
		if (bad != n)
			throw Error(what + format(": byte %" PRIu64 " differs after the round trip", bad));
		for (uint64_t i = n; i < n + 2 * kSlack; i++) {
			if (recv_buf[i] != kFill)
				throw Error(what + format(": byte %" PRIu64 " past the message was written", i));
		}
		res.messages++;
		res.bytes += n;
		res.rtt_us.emplace_back(n, rtt);
		res.log.push_back(format("%s: round trip %.0f us", bytes(n).c_str(), rtt));
	}
	err = tb5_endpoint_close(ep);
	if (err)
		throw_api("tb5_endpoint_close", err);
	const int err_send = tb5_dereg(send_mr);
	const int err_recv = tb5_dereg(recv_mr);
	if (err_send || err_recv)
		throw_api("tb5_dereg after the endpoint was closed", err_send ? err_send : err_recv);
	res.outcome = ClientResult::kOk;
}

} // namespace

ClientResult run_client(const std::string &link, const tb5_address &addr,
		       const std::vector<uint64_t> &sizes_wanted,
		       std::chrono::milliseconds timeout)
{
	ClientResult res;

	try {
		round_trip(res, link, addr, sizes_wanted, timeout);
	} catch (const Error &e) {
		res.error = e.what();
	}
	return res;
}

struct EchoServer::Connection {
	tb5_endpoint *ep = nullptr;
	uint64_t number = 0;
	uint64_t peer_host = 0;
	std::unique_ptr<uint8_t[]> buf;
	tb5_mr *mr = nullptr;
	uint64_t seq = 0;
	uint64_t messages = 0;
	uint64_t bytes = 0;
	uint64_t mismatches = 0;
	Clock::time_point start;
};

EchoServer::EchoServer(std::string link, uint64_t service,
		       std::function<void(const ConnectionReport &)> on_end)
	: link_(std::move(link)), service_(service), on_end_(std::move(on_end))
{
}

EchoServer::~EchoServer()
{
	// Closing the device closes the endpoints and deregisters the regions;
	// the buffers (in conns_ and busy_) are freed after it.
	if (dev_)
		tb5_close(dev_);
}

void EchoServer::open()
{
	int err;

	if (!dev_) {
		err = tb5_open(link_.c_str(), &dev_);
		if (err) {
			dev_ = nullptr;
			throw_api("tb5_open(" + link_ + ")", err);
		}
		err = tb5_query(dev_, &info_);
		if (err)
			throw_api("tb5_query", err);
	}
	if (!listener_) {
		err = tb5_endpoint_listen(dev_, service_, TB5_LISTEN_WELL_KNOWN, 0, &listener_);
		if (err) {
			listener_ = nullptr;
			throw_api(format("tb5_endpoint_listen(service %s)", hex(service_).c_str()), err);
		}
	}
}

int EchoServer::address(tb5_address *addr) const
{
	return listener_ ? tb5_endpoint_address(listener_, addr) : -ENOTCONN;
}

int EchoServer::serve(int wait_ms)
{
	if (!dev_)
		return -ENODEV;
	for (auto it = busy_.begin(); it != busy_.end();) {
		if (!tb5_dereg(it->first))
			it = busy_.erase(it);
		else
			++it;
	}
	const int err = poll_until(dev_, Clock::now() + std::chrono::milliseconds(wait_ms),
				  [this](const tb5_wc &wc) { on_completion(wc); },
				  [] { return false; });
	return err == -ETIMEDOUT ? 0 : err;
}

void EchoServer::accept()
{
	for (;;) {
		tb5_endpoint *ep = nullptr;
		const int err = tb5_endpoint_accept(listener_, ++accepted_, &ep);
		if (err) {
			--accepted_;
			return;			// -EAGAIN: none waits
		}
		auto c = std::make_unique<Connection>();
		tb5_link_info now {};
		c->ep = ep;
		c->number = accepted_;
		c->peer_host = tb5_query(dev_, &now) ? info_.peer_host : now.peer_host;
		c->start = Clock::now();
		c->buf = std::make_unique<uint8_t[]>(kEchoMax);
		const int reg = tb5_reg_host(dev_, c->buf.get(), kEchoMax, &c->mr);
		Connection &ref = *c;
		conns_.emplace(ep, std::move(c));
		if (reg) {
			ref.mr = nullptr;
			end(ep, api_message("tb5_reg_host", reg));
			continue;
		}
		post_recv(ref);
	}
}

void EchoServer::post_recv(Connection &c)
{
	const int err = tb5_recv(c.ep, c.mr, 0, kEchoMax, kTagPing, 0);

	// -ECONNRESET: the peer closed the connection after its last echo, as
	// it should; its event may not have been polled yet.
	if (err == -ECONNRESET)
		end(c.ep, "");
	else if (err)
		end(c.ep, api_message("tb5_recv", err));
}

void EchoServer::on_completion(const tb5_wc &wc)
{
	if (listener_ && wc.ep == listener_) {
		if (wc.kind == TB5_WC_EVENT && wc.event == TB5_WC_INCOMING) {
			accept();
		} else if (wc.kind == TB5_WC_EVENT && wc.event == TB5_WC_ERROR) {
			tb5_endpoint_close(listener_);	// the link went down
			listener_ = nullptr;
		}
		return;
	}
	const auto it = conns_.find(wc.ep);
	if (it == conns_.end())
		return;
	Connection &c = *it->second;

	if (wc.kind == TB5_WC_EVENT) {
		if (wc.event == TB5_WC_PEER_CLOSED)
			end(c.ep, "");
		else if (wc.event == TB5_WC_ERROR)
			end(c.ep, std::string("the connection failed: ") + tb5_strerror(wc.status));
		return;
	}
	if (wc.status) {
		// Operations cut short by the peer closing: its event follows.
		if (wc.status == -ECONNRESET || wc.status == -ECANCELED)
			return;
		end(c.ep, format("message %" PRIu64 ": %s failed: %s", c.seq,
				 wc.kind == TB5_WC_SEND ? "echo" : "receive", tb5_strerror(wc.status)));
		return;
	}
	if (wc.kind == TB5_WC_RECV) {
		const uint64_t n = wc.bytes;
		if (find_mismatch(c.buf.get(), n, c.seq) != n)
			c.mismatches++;
		c.seq++;
		c.messages++;
		c.bytes += n;
		const int err = tb5_send(c.ep, c.mr, 0, n, kTagEcho, 0);
		if (err == -ECONNRESET)
			end(c.ep, format("the peer closed the connection before the echo of message %" PRIu64,
					 c.seq - 1));
		else if (err)
			end(c.ep, api_message("tb5_send", err));
	} else if (wc.kind == TB5_WC_SEND) {
		post_recv(c);
	}
}

void EchoServer::end(tb5_endpoint *ep, std::string error)
{
	const auto it = conns_.find(ep);
	if (it == conns_.end())
		return;
	std::unique_ptr<Connection> c = std::move(it->second);
	conns_.erase(it);

	ConnectionReport r;
	r.link = link_;
	r.number = c->number;
	r.peer_host = c->peer_host;
	r.messages = c->messages;
	r.bytes = c->bytes;
	r.mismatches = c->mismatches;
	r.error = std::move(error);
	r.seconds = std::chrono::duration<double>(Clock::now() - c->start).count();

	tb5_endpoint_close(c->ep);
	if (c->mr && tb5_dereg(c->mr))
		busy_.emplace_back(c->mr, std::move(c->buf));
	on_end_(r);
}

} // namespace tb5selftest
