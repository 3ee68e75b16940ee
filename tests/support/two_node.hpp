// SPDX-License-Identifier: MIT
//
// two_node.hpp - two transport-core links wired back to back through the
// ring model, driven by the test thread.
//
// The harness plays backend and owner for both links and checks the core's
// contract on every callback, so that every test that uses it also checks:
//   - copy_to writes only inside a receive buffer that the test posted on
//     that end and that has not completed yet ("nothing is ever written
//     outside a buffer that the local user posted");
//   - a transmitted payload frame points inside a send that is still
//     outstanding (zero-copy transmit reads only what the user lent);
//   - every posted operation completes exactly once, with its own tag, and
//     before TB5_EV_RELEASED, which is the last callback for its ctx;
//   - after the links are destroyed nothing is left outstanding or unreleased.
// A broken rule fails the running test (ADD_FAILURE) and is kept in
// violations(); a copy outside a posted buffer is refused, not performed.
//
// Memory references are plain pointers: region NULL, offset the address.
#ifndef TB5_SUPPORT_TWO_NODE_HPP
#define TB5_SUPPORT_TWO_NODE_HPP

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tb5_core.h"
#include "tb5_ringmodel.h"

namespace tb5test {

// One callback from tb5_link_ops.event, as it arrived.
struct Event {
	int end;
	const void *ctx;
	enum tb5_event ev;
	int status;
};

// An endpoint the harness opened. Its address is the ctx the core hands back.
struct Ep {
	int end = 0;
	struct tb5_ep *ep = nullptr;	// NULL once closed
	bool opened = false;		// the core accepted this ctx
};

class TwoNode {
public:
	static constexpr uint32_t kBudget = 256;	// frames per end and step
	static constexpr uint64_t kMaxSteps = 1u << 22;

	explicit TwoNode(uint32_t ring_size = TB5_RING_SIZE_MIN,
			 uint32_t burst_frames = 0);
	~TwoNode();
	TwoNode(const TwoNode &) = delete;
	TwoNode &operator=(const TwoNode &) = delete;

	struct tb5_rm_pair *pair() const { return pair_; }
	struct tb5_link *link(int end) const { return ends_[end].link; }
	uint64_t host_id(int end) const { return ends_[end].host_id; }
	uint32_t ring_size() const { return ring_size_; }
	struct tb5_link_stats link_stats(int end) const;
	struct tb5_rm_stats rm_stats() const;

	// --- driving the ring model ---
	uint32_t step(uint32_t budget = kBudget);
	// tb5_rm_run: step until idle. Returns the steps taken.
	uint32_t run(uint32_t max_steps = 1u << 22);
	// Step until @pred holds; false if the pair went idle or @max_steps
	// passed first.
	bool run_until(const std::function<bool()> &pred,
		       uint64_t max_steps = kMaxSteps);
	void pause_rx(int end, bool paused);
	void unplug();
	void plug();

	// --- links ---
	// Bring both links up and step until both are READY.
	bool bring_up();

	// --- endpoints (the returned Ep lives as long as the harness) ---
	Ep *new_ep(int end);
	int listen(int end, uint64_t service, Ep **out, uint32_t flags = 0);
	int connect(int end, const struct tb5_addr &addr, Ep **out);
	int accept(Ep *listener, Ep **out);
	void close(Ep *ep);

	// A connected pair: @client on @client_end connects to a listener on
	// the other end for @service (opened on first use, then reused),
	// which accepts. Both are NULL (and the test failed) if that did not
	// work.
	struct Conn {
		Ep *client = nullptr;
		Ep *server = nullptr;
	};
	Conn connect_pair(uint64_t service, int client_end = 0);
	Ep *listener(int end, uint64_t service) const;

	// --- operations: registered with the harness, then posted ---
	int post_send(Ep *ep, const void *buf, uint64_t len, uint32_t tag,
		      uint64_t user_id);
	int post_recv(Ep *ep, void *buf, uint64_t len, uint32_t tag,
		      uint64_t user_id);

	// --- what happened ---
	std::deque<struct tb5_completion> &cq(const void *ctx) { return cqs_[ctx]; }
	// The completion of (@op, @user_id) on @ctx, or NULL if none yet.
	const struct tb5_completion *find_cqe(const void *ctx, uint32_t op,
				       uint64_t user_id);
	const std::vector<Event> &events() const { return events_; }
	int count_events(const void *ctx, enum tb5_event ev) const;
	// Status of the latest @ev for @ctx; 1 if there was none.
	int event_status(const void *ctx, enum tb5_event ev) const;
	bool released(const void *ctx) const { return count_events(ctx, TB5_EV_RELEASED) > 0; }
	// Operations posted on @ctx and not completed yet.
	size_t outstanding(const void *ctx) const;
	const std::vector<std::string> &violations() const { return violations_; }
	uint64_t bytes_copied(int end) const { return ends_[end].copied; }

private:
	struct End {
		TwoNode *h;
		int end;
		struct tb5_link *link;
		uint64_t host_id;
		uint64_t copied;
	};
	struct Posted {
		const void *ctx;
		int end;
		uint32_t op;		// enum tb5_completion_op
		uint64_t user_id;
		uint32_t tag;
		uintptr_t base;
		uint64_t len;
	};

	static int op_tx(void *priv, const struct tb5_tx_frame *frame);
	static int op_copy_to(void *priv, const struct tb5_mem *dst,
			      const void *src, uint32_t len);
	static void op_complete(void *priv, void *ep_ctx,
				const struct tb5_completion *cqe);
	static void op_event(void *priv, void *ep_ctx, enum tb5_event ev,
			     int status);
	static const void *resolve(void *priv, const struct tb5_mem *mem,
				   uint32_t len);

	void violation(const std::string &what);
	int post(uint32_t op, Ep *ep, const void *buf, uint64_t len,
		 uint32_t tag, uint64_t user_id);
	const Posted *find_range(int end, uint32_t op, uintptr_t base,
				 uint64_t len) const;
	void teardown();

	uint32_t ring_size_;
	struct tb5_rm_pair *pair_ = nullptr;
	End ends_[2];
	std::vector<std::unique_ptr<Ep>> eps_;
	std::map<std::pair<int, uint64_t>, Ep *> listeners_;
	std::vector<Posted> posted_;
	std::map<const void *, std::deque<struct tb5_completion>> cqs_;
	std::vector<Event> events_;
	std::vector<std::string> violations_;
};

} // namespace tb5test

#endif // TB5_SUPPORT_TWO_NODE_HPP
