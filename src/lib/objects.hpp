// SPDX-License-Identifier: MIT
//
// objects.hpp - what the C API's opaque handles are: one device, its
// memory regions and endpoints, each implemented by a backend (kernel/,
// sim/). api.cc checks arguments that need no backend, applies the rules
// that are the library's rather than a backend's, and forwards.
#ifndef TB5_LIB_OBJECTS_HPP
#define TB5_LIB_OBJECTS_HPP

#include <cstddef>
#include <cstdint>

#include "tb5/tb5.h"

struct tb5_mr {
	tb5_device *dev;
	uint64_t len;

	tb5_mr(tb5_device *d, uint64_t l) : dev(d), len(l) {}
	virtual ~tb5_mr() = default;
};

struct tb5_endpoint {
	tb5_device *dev;
	uint64_t context;
	// Made by listen(): it has an address and accepts, and carries no
	// operations.
	bool listener;

	tb5_endpoint(tb5_device *d, uint64_t ctx, bool l)
		: dev(d), context(ctx), listener(l)
	{
	}
	virtual ~tb5_endpoint() = default;
};

// Every function returns 0 (or a count) or a negative errno, with a
// message for tb5_last_error() on failure. None throws.
struct tb5_device {
	virtual ~tb5_device() = default;

	virtual int query(tb5_link_info *info) = 0;
	virtual int counters(tb5_counters *c) = 0;
	virtual int drops(tb5_drops *d) = 0;

	virtual int reg_host(void *addr, size_t len, tb5_mr **mr) = 0;
	virtual int reg_dmabuf(int fd, uint64_t offset, uint64_t len,
			       tb5_mr **mr) = 0;
	// GPU memory as NCCL hands it (tb5_reg_gpu(); @fd -1: none; @len
	// checked already). A backend without a DMA engine of its own
	// imports the dma-buf, and refuses an address alone.
	virtual int reg_gpu(void *addr, size_t len, int fd, uint64_t offset,
			    tb5_mr **mr);
	// Frees @mr on success.
	virtual int dereg(tb5_mr *mr) = 0;

	virtual int listen(uint64_t service, uint32_t flags, uint64_t context,
			   tb5_endpoint **ep) = 0;
	// @listener is one (checked already).
	virtual int address(tb5_endpoint *listener, tb5_address *addr) = 0;
	// @addr.host, if not 0, is the peer of this device's link, which is
	// ready (checked already).
	virtual int connect(const tb5_address &addr, uint64_t context,
			    tb5_endpoint **ep) = 0;
	// @listener is one (checked already).
	virtual int accept(tb5_endpoint *listener, uint64_t context,
			   tb5_endpoint **ep) = 0;
	// Frees @ep.
	virtual int close(tb5_endpoint *ep) = 0;
	// The endpoint's TB5_ENDPOINT_* state; *@error (if @error) the status
	// of its last TB5_WC_ERROR event, 0 if it had none.
	virtual int state(tb5_endpoint *ep, int *error) = 0;

	// @ops are checked already: kind, endpoint (no listener) and region of
	// this device, offset + len within the region.
	virtual int post(const tb5_op *ops, size_t count, size_t *posted) = 0;
	virtual int poll(tb5_wc *wc, int max) = 0;
	virtual int wait(int timeout_ms) = 0;
};

#endif // TB5_LIB_OBJECTS_HPP
