// SPDX-License-Identifier: MIT
//
// conn.hpp - one side of a tb5-perf session: the device it runs on, the
// control endpoint and its messages, the data endpoints of the current test,
// the data buffers, and the polling loop every test runs through.
#ifndef TB5_PERF_CONN_HPP
#define TB5_PERF_CONN_HPP

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "device.hpp"
#include "protocol.hpp"

namespace tb5perf {

struct PollSettings {
	bool wait = false;		// tb5_wait() when there is nothing
	double timeout_s = 30;		// no completion for that long: error
	const std::atomic<bool> *stop = nullptr;	// another thread's "stop"
	std::function<void()> watchdog;	// every ~100 ms while idle; may throw
};

// Registered slots for control messages, shared by the endpoints of a
// device. Always host memory: --memory is about the data buffers, which
// the figures measure; control messages are few and small.
class CtlPool {
public:
	CtlPool(Device &dev, uint32_t slots);

	int alloc();		// -1 when all are in use
	void free(int slot);
	uint8_t *slot(int slot) const { return region_.data() + offset(slot); }
	uint64_t offset(int slot) const
	{
		return static_cast<uint64_t>(slot) * kCtlSize;
	}
	tb5_mr *mr() const { return region_.mr(); }

private:
	Region region_;
	std::vector<int> free_;
};

class Conn {
public:
	Conn(Device &dev, CtlPool &pool, PollSettings settings);
	~Conn();
	Conn(const Conn &) = delete;
	Conn &operator=(const Conn &) = delete;

	Device &dev() { return dev_; }
	CtlPool &pool() { return pool_; }
	const PollSettings &settings() const { return settings_; }

	// Takes the control endpoint and keeps @depth receives posted on it.
	void attach_ctl(EndpointPtr ep, uint32_t depth);
	tb5_endpoint *ctl_ep() const { return ctl_.get(); }
	// Sends on the control endpoint, or with the control tag on @ep.
	void send_ctl(const CtlMsg &msg, tb5_endpoint *ep = nullptr);
	// The next control message if one came: it must be of @type (an
	// ERROR is thrown as the peer's text, anything else is a protocol
	// error).
	std::optional<CtlMsg> take_ctl(CtlType type);
	std::optional<CtlMsg> take_any_ctl();
	// Polls until take_ctl(@type) has one; data completions meanwhile are
	// a protocol error.
	CtlMsg wait_ctl(CtlType type);
	CtlMsg wait_any_ctl();

	// Data endpoints of the current test, by index.
	void set_data(uint32_t index, EndpointPtr ep);
	tb5_endpoint *data(uint32_t index) const;
	bool has_data(uint32_t index) const;
	void close_data();
	// Finds the index of a data endpoint, or -1.
	int data_index(const tb5_endpoint *ep) const;

	// Data buffers of @memory, registered once for the whole session.
	void alloc_regions(size_t bytes, Memory memory);
	Region &send_region() { return *send_; }
	Region &recv_region() { return *recv_; }
	size_t region_size() const { return send_ ? send_->size() : 0; }

	// One round of polling. Control completions are handled here, events
	// other than CONNECTED on the session's endpoints are thrown as
	// errors, failed operations too; completions that belong to nobody of
	// the session go to the background handler (the server's listener).
	// Returns the data completions and CONNECTED events, valid until the
	// next call.
	std::span<const tb5_wc> poll();
	void set_background(std::function<void(const tb5_wc &)> fn)
	{
		background_ = std::move(fn);
	}
	// What the session is doing, for error messages.
	void set_phase(std::string phase) { phase_ = std::move(phase); }
	const std::string &phase() const { return phase_; }
	// Whether the data endpoints are in use. Only then do their events
	// (a peer that closes one) count as errors and their completions
	// reach the caller: between tests either side may close them first.
	void set_in_test(bool in_test) { in_test_ = in_test; }
	// tb5_wait() instead of busy polling from now on.
	void set_wait(bool wait) { settings_.wait = wait; }
	// Sleep in tb5_wait() after 2 ms without a completion even when busy
	// polling (a server between tests).
	void set_idle_sleep(bool sleep) { idle_sleep_ = sleep; }
	// Polls until every control message sent has completed, for at most
	// @max_s seconds; false when some did not.
	bool flush_ctl(double max_s);
	// The session is ending (BYE sent): the peer closing the control
	// connection is expected from now on.
	void set_closing() { closing_ = true; }

private:
	static constexpr int kBatch = 64;

	void post_ctl_recv(int slot);
	void throw_if_ctl_gone() const;
	void idle();
	void sleep(int ms);
	bool is_session_ep(const tb5_endpoint *ep) const;

	Device &dev_;
	CtlPool &pool_;
	PollSettings settings_;
	std::function<void(const tb5_wc &)> background_;
	std::string phase_ = "idle";
	bool in_test_ = false;
	bool closing_ = false;
	bool ctl_gone_ = false;	// the peer closed the control connection
	bool idle_sleep_ = false;
	uint32_t ctl_sends_ = 0;	// control sends not yet completed

	std::unique_ptr<Region> send_, recv_;
	EndpointPtr ctl_;
	std::vector<int> ctl_recv_slots_;
	std::vector<EndpointPtr> data_;
	std::deque<CtlMsg> inbox_;

	tb5_wc wc_[kBatch];
	tb5_wc out_[kBatch];
	uint64_t last_activity_ns_ = 0;
	uint64_t last_check_ns_ = 0;
	uint32_t idle_polls_ = 0;
};

// Throws Error(@what + the status's text) for a failed completion.
[[noreturn]] void throw_status(const std::string &what, int status);
// The same, naming what @dev's link dropped (tb5_drops_describe()).
[[noreturn]] void throw_status(Device &dev, const std::string &what, int status);

} // namespace tb5perf

#endif // TB5_PERF_CONN_HPP
