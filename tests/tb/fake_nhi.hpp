// SPDX-License-Identifier: MIT
//
// fake_nhi.hpp - two hosts joined by one simulated Thunderbolt cable, for the
// tb backend's hardware-free tests.
//
// Each host end runs what dkms/tb5_tb.c runs, minus the Thunderbolt API:
// the login state machine (tb5_tb_login_*) over a simulated XDomain
// control channel that carries the encoded messages and can lose requests
// or responses; the bring-up ledger with the same steps; the TX slots
// (tb5_tb_txq) and the PDF mapping (tb5_tb_tx_desc / tb5_tb_rx_check) on a
// simulated pair of NHI rings with end-to-end flow control; and the real
// transport core above them, driven the way the backend drives it
// (tb5_link_rx, tb5_link_tx_done, tb5_link_kick, tb5_link_up/down).
//
// Time is simulated: delayed login work runs when the harness advances its
// clock, so that retries and timeouts take no wall-clock time.
#ifndef TB5_TB_FAKE_NHI_HPP
#define TB5_TB_FAKE_NHI_HPP

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tb5_core.h"
#include "tb5_tb_proto.h"

namespace tb5tb {

// One endpoint the test opened; its address is the core's ctx.
struct Ep {
	int end = 0;
	struct tb5_ep *ep = nullptr;
	std::vector<struct tb5_completion> cqes;
	std::vector<std::pair<enum tb5_event, int>> events;
	bool has_event(enum tb5_event ev) const;
};

class FakePair;

struct Host {
	FakePair *pair = nullptr;
	int id = 0;
	struct tb5_link *link = nullptr;
	uint64_t host_id = 0;
	bool e2e_offered = true;

	// XDomain identity and the login.
	uint8_t uuid[16] = {};
	uint64_t route = 0;		// how the peer is reached
	uint32_t out_hopid = 0;
	uint32_t features = 0;		// agreed
	struct tb5_tb_login login = {};
	bool stopping = false;
	bool force_down = false;
	bool login_due = false;
	uint64_t login_at = 0;
	bool conn_due = false;

	// The connection.
	struct tb5_tb_ledger ledger = {};
	std::vector<std::string> log;	// "+step" done, "-step" undone
	int fail_step = -1;		// this step fails once
	uint32_t in_hopid = 0;
	bool paths = false;
	bool rx_running = false;
	bool running = false;

	// The rings.
	struct tb5_tb_txq txq = {};
	std::vector<std::array<uint8_t, TB5_FRAME_MAX>> tx_buf, rx_buf;
	struct HwTx {
		uint32_t slot;
		uint8_t pdf_sof, pdf_eof;
		uint32_t size_field;
	};
	struct HwRx {
		uint32_t buf;
		uint32_t flags;
		uint32_t size_field;
		uint8_t pdf_eof;
	};
	std::deque<HwTx> tx_ring;	// queued on the TX ring, not sent yet
	std::deque<uint32_t> tx_sent;	// sent, completion not reaped yet
	std::deque<uint32_t> rx_posted;	// free RX descriptors (E2E credits)
	std::deque<HwRx> rx_done;	// received, not polled yet
	bool rx_paused = false;		// stops polling, like a busy receiver
	uint64_t rx_lost = 0;		// frames that found no RX buffer
	uint64_t ring_errors = 0;
	uint32_t corrupt_next = 0;	// mark the next N frames with a CRC error
};

class FakePair {
public:
	explicit FakePair(uint32_t ring_size = 64, bool e2e_a = true,
			  bool e2e_b = true);
	~FakePair();
	FakePair(const FakePair &) = delete;
	FakePair &operator=(const FakePair &) = delete;

	Host &host(int i) { return hosts_[i]; }
	uint64_t now_ms() const { return now_ms_; }
	uint32_t ring_size() const { return ring_size_; }

	// --- the driver's life cycle ---
	void probe(int i);		// the service appeared: log in
	void stop(int i, bool plugged);	// remove / suspend (LOGOUT if plugged)
	void unplug();			// both services go, no LOGOUT

	// --- the simulated control channel ---
	int drop_requests = 0;		// lose the next N requests
	int drop_responses = 0;		// lose the next N responses
	uint64_t requests = 0, responses = 0;

	// --- running ---
	// One round: wire, completions, polls, connection work. Returns the
	// amount of work done (0: idle apart from timers).
	uint32_t step();
	// Step, advancing time to the next timer when idle, until @pred or
	// until @max_ms of simulated time passed. Returns @pred().
	bool run_until(const std::function<bool()> &pred,
		       uint64_t max_ms = 600000);
	bool connected() const;	// both logged in and both links READY
	bool settle();		// run until nothing is left to do

	// --- endpoints and messages ---
	Ep *listen(int i, uint64_t service);
	// A connected pair: client on @i, server on the other host.
	std::pair<Ep *, Ep *> connect_pair(int i, uint64_t service);
	int post_send(Ep *ep, const void *buf, uint64_t len, uint32_t tag,
		      uint64_t id);
	int post_recv(Ep *ep, void *buf, uint64_t len, uint32_t tag,
		      uint64_t id);
	void close(Ep *ep);

private:
	static int op_tx(void *priv, const struct tb5_tx_frame *f);
	static int op_copy_to(void *priv, const struct tb5_mem *dst,
			      const void *src, uint32_t len);
	static void op_complete(void *priv, void *ep_ctx,
				const struct tb5_completion *cqe);
	static void op_event(void *priv, void *ep_ctx, enum tb5_event ev,
			     int status);

	void apply(Host &h, const struct tb5_tb_act &act);
	void address(Host &h, struct tb5_tb_msg *m);
	void login_work(Host &h);
	void conn_work(Host &h);
	// The control channel: deliver a request to the peer's handler and
	// return its answer (0, or -ETIMEDOUT when something was lost).
	int request(Host &h, const struct tb5_tb_msg &m, struct tb5_tb_msg *r);
	int step_do(Host &h, int s, const struct tb5_tb_peer &peer);
	void step_undo(Host &h, int s);
	void disconnect(Host &h);
	uint32_t wire(Host &src, Host &dst);
	uint32_t reap(Host &h);
	uint32_t poll(Host &h);

	uint32_t ring_size_;
	uint64_t now_ms_ = 0;
	Host hosts_[2];
	std::vector<std::unique_ptr<Ep>> eps_;
};

} // namespace tb5tb

#endif // TB5_TB_FAKE_NHI_HPP
