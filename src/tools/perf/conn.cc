// SPDX-License-Identifier: MIT
//
// conn.cc - the session's polling loop and control messages.
#include "conn.hpp"

#include <cerrno>
#include <cstring>

#include "clock.hpp"
#include "errors.hpp"

namespace tb5perf {

void throw_status(const std::string &what, int status)
{
	throw Error(what + ": " + tb5_strerror(status));
}

void throw_status(Device &dev, const std::string &what, int status)
{
	struct tb5_drops d {};
	char why[256] = "";

	// Frames the link refused say what broke the connection.
	if (tb5_get_drops(dev.get(), &d) == 0)
		tb5_drops_describe(nullptr, &d, why, sizeof(why));
	if (!*why)
		throw_status(what, status);
	throw Error(what + ": " + tb5_strerror(status) + "; " + dev.name() +
		    " has dropped " + why + " since it came up");
}

CtlPool::CtlPool(Device &dev, uint32_t slots)
	: region_(dev, static_cast<size_t>(slots) * kCtlSize, Memory::kHost)
{
	for (int i = static_cast<int>(slots) - 1; i >= 0; i--)
		free_.push_back(i);
}

int CtlPool::alloc()
{
	if (free_.empty())
		return -1;
	const int slot = free_.back();
	free_.pop_back();
	return slot;
}

void CtlPool::free(int slot)
{
	free_.push_back(slot);
}

Conn::Conn(Device &dev, CtlPool &pool, PollSettings settings)
	: dev_(dev), pool_(pool), settings_(std::move(settings))
{
	last_activity_ns_ = last_check_ns_ = now_ns();
}

Conn::~Conn()
{
	// Endpoints first: closing cancels what is posted on them, and only
	// then may their buffers go back.
	data_.clear();
	ctl_.reset();
	for (int slot : ctl_recv_slots_)
		pool_.free(slot);
}

void Conn::attach_ctl(EndpointPtr ep, uint32_t depth)
{
	ctl_ = std::move(ep);
	for (uint32_t i = 0; i < depth; i++) {
		const int slot = pool_.alloc();
		if (slot < 0)
			throw Error("out of control message slots");
		ctl_recv_slots_.push_back(slot);
		post_ctl_recv(slot);
	}
}

void Conn::post_ctl_recv(int slot)
{
	const int ret = tb5_recv(ctl_.get(), pool_.mr(), pool_.offset(slot),
				 kCtlSize, kTagCtl, make_ud(kUdCtl, 0, slot));
	if (ret == -ECONNRESET || ret == -ENOTCONN || ret == -EPIPE) {
		// The peer said its last word and left: what came is still
		// read; waiting for more is an error.
		ctl_gone_ = true;
		return;
	}
	if (ret < 0)
		throw_api("tb5_recv (control)", ret);
}

void Conn::throw_if_ctl_gone() const
{
	if (ctl_gone_)
		throw Error("the control connection was closed by the peer (" +
			    phase_ + ")");
}

void Conn::send_ctl(const CtlMsg &msg, tb5_endpoint *ep)
{
	const int slot = pool_.alloc();

	if (slot < 0)
		throw Error("out of control message slots (the peer does not "
			    "take them)");
	memcpy(pool_.slot(slot), &msg, sizeof(msg));
	const int ret = tb5_send(ep ? ep : ctl_.get(), pool_.mr(),
				 pool_.offset(slot), kCtlSize, kTagCtl,
				 make_ud(kUdCtl, 1, slot));
	if (ret < 0) {
		pool_.free(slot);
		throw_api(std::string("tb5_send (control ") +
				 ctl_type_name(msg.type) + ")",
			 ret);
	}
	ctl_sends_++;
}

bool Conn::flush_ctl(double max_s)
{
	const uint64_t deadline = now_ns() + static_cast<uint64_t>(max_s * 1e9);

	while (ctl_sends_ && now_ns() < deadline)
		poll();
	return !ctl_sends_;
}

std::optional<CtlMsg> Conn::take_any_ctl()
{
	if (inbox_.empty())
		return std::nullopt;
	CtlMsg msg = inbox_.front();
	inbox_.pop_front();
	validate_ctl(msg);
	if (msg.type == static_cast<uint16_t>(CtlType::kError))
		throw Error("the peer failed: " + text(msg));
	return msg;
}

std::optional<CtlMsg> Conn::take_ctl(CtlType type)
{
	auto msg = take_any_ctl();

	if (msg && msg->type != static_cast<uint16_t>(type))
		throw Error(std::string("protocol error: ") + ctl_type_name(msg->type) +
			    " where " + ctl_type_name(static_cast<uint16_t>(type)) +
			    " was due (" + phase_ + ")");
	return msg;
}

CtlMsg Conn::wait_ctl(CtlType type)
{
	for (;;) {
		if (auto msg = take_ctl(type))
			return *msg;
		throw_if_ctl_gone();
		if (!poll().empty())
			throw Error(std::string("protocol error: data while "
						"waiting for ") +
				    ctl_type_name(static_cast<uint16_t>(type)) +
				    " (" + phase_ + ")");
	}
}

CtlMsg Conn::wait_any_ctl()
{
	for (;;) {
		if (auto msg = take_any_ctl())
			return *msg;
		throw_if_ctl_gone();
		if (!poll().empty())
			throw Error("protocol error: data outside a test");
	}
}

void Conn::set_data(uint32_t index, EndpointPtr ep)
{
	if (index >= data_.size())
		data_.resize(index + 1);
	data_[index] = std::move(ep);
}

tb5_endpoint *Conn::data(uint32_t index) const
{
	if (index >= data_.size() || !data_[index])
		throw Error("no data endpoint " + std::to_string(index));
	return data_[index].get();
}

bool Conn::has_data(uint32_t index) const
{
	return index < data_.size() && data_[index];
}

void Conn::close_data()
{
	data_.clear();
}

int Conn::data_index(const tb5_endpoint *ep) const
{
	for (size_t i = 0; i < data_.size(); i++)
		if (data_[i].get() == ep)
			return static_cast<int>(i);
	return -1;
}

void Conn::alloc_regions(size_t bytes, Memory memory)
{
	send_.reset();
	recv_.reset();
	send_ = std::make_unique<Region>(dev_, bytes, memory);
	recv_ = std::make_unique<Region>(dev_, bytes, memory);
}

bool Conn::is_session_ep(const tb5_endpoint *ep) const
{
	return ep && (ep == ctl_.get() || data_index(ep) >= 0);
}

void Conn::sleep(int ms)
{
	const int ret = tb5_wait(dev_.get(), ms);

	if (ret < 0 && ret != -ETIMEDOUT && ret != -EINTR)
		throw_api("tb5_wait", ret);
}

void Conn::idle()
{
	uint64_t now;

	if (settings_.wait) {
		sleep(50);
	} else if (++idle_polls_ & 255) {
		return;
	} else if (idle_sleep_ && now_ns() - last_activity_ns_ > 2000000ull) {
		sleep(20);
	}
	now = now_ns();
	if (now - last_check_ns_ < 20000000ull)
		return;
	last_check_ns_ = now;
	if (stop_requested() ||
	    (settings_.stop && settings_.stop->load(std::memory_order_relaxed)))
		throw Interrupted();
	if (settings_.watchdog)
		settings_.watchdog();
	if (seconds(now - last_activity_ns_) > settings_.timeout_s)
		throw Error("no progress for " +
			    std::to_string(static_cast<int>(settings_.timeout_s)) +
			    " s (" + phase_ + ")");
}

std::span<const tb5_wc> Conn::poll()
{
	const int n = tb5_poll(dev_.get(), wc_, kBatch);
	int out = 0;

	if (n < 0)
		throw_api("tb5_poll", n);
	if (n == 0) {
		idle();
		return {};
	}
	last_activity_ns_ = now_ns();
	for (int i = 0; i < n; i++) {
		const tb5_wc &wc = wc_[i];

		if (wc.kind == TB5_WC_EVENT) {
			// By endpoint, not by context: a server's data endpoint
			// keeps the context it was accepted with.
			const int data = data_index(wc.ep);
			if (!wc.ep || (wc.ep != ctl_.get() && data < 0)) {
				if (background_)
					background_(wc);
				continue;
			}
			const CtxKind ctx = data >= 0 ? kCtxData : kCtxCtl;
			if (wc.event == TB5_WC_CONNECTED) {
				out_[out++] = wc;
				continue;
			}
			if (ctx == kCtxData && !in_test_)
				continue;
			if (ctx == kCtxCtl && closing_)
				continue;
			const std::string who = ctx == kCtxCtl
				? "the control connection"
				: "data connection " + std::to_string(data);
			if (wc.event == TB5_WC_PEER_CLOSED && ctx == kCtxCtl &&
			    !inbox_.empty()) {
				// Its last messages are still to be read.
				ctl_gone_ = true;
				continue;
			}
			if (wc.event == TB5_WC_PEER_CLOSED)
				throw Error(who + " was closed by the peer (" +
					    phase_ + ")");
			throw_status(dev_, who + " failed (" + phase_ + ")",
				    wc.status);
		}
		const UdKind kind = ud_kind_of(wc.user_data);
		if (kind == kUdCtl && is_session_ep(wc.ep)) {
			const int slot = static_cast<int>(ud_slot(wc.user_data));
			if (wc.status < 0 && closing_) {
				if (wc.kind == TB5_WC_SEND) {
					pool_.free(slot);
					ctl_sends_--;
				}
				continue;
			}
			if (wc.status < 0 && wc.kind == TB5_WC_RECV &&
			    (wc.status == -ECONNRESET || wc.status == -ECANCELED)) {
				// The peer left; what it sent before is still
				// to be read.
				ctl_gone_ = true;
				continue;
			}
			if (wc.status < 0)
				throw_status(dev_, std::string("control message ") +
						    (wc.kind == TB5_WC_SEND ? "send"
									    : "receive") +
						    " (" + phase_ + ")",
					    wc.status);
			if (wc.kind == TB5_WC_SEND) {
				pool_.free(slot);
				ctl_sends_--;
				continue;
			}
			if (wc.bytes != kCtlSize)
				throw Error("protocol error: a control message of " +
					    std::to_string(wc.bytes) + " bytes");
			CtlMsg msg;
			memcpy(&msg, pool_.slot(slot), sizeof(msg));
			post_ctl_recv(slot);
			validate_ctl(msg);
			// A failed peer says why at once, whatever waits.
			if (msg.type == static_cast<uint16_t>(CtlType::kError))
				throw Error("the peer failed: " + text(msg));
			inbox_.push_back(msg);
			continue;
		}
		if (kind == kUdPipe || kind == kUdPing || kind == kUdPong) {
			if (!in_test_ && data_index(wc.ep) >= 0)
				continue;	// left over from a closed test
			if (wc.status < 0)
				throw_status(dev_, std::string(wc.kind == TB5_WC_SEND
								? "a send"
								: "a receive") +
						    " failed (" + phase_ + ")",
					    wc.status);
			out_[out++] = wc;
			continue;
		}
		if (background_)
			background_(wc);
	}
	return {out_, static_cast<size_t>(out)};
}

} // namespace tb5perf
