// SPDX-License-Identifier: MIT
//
// device.hpp - RAII owners for what libtb5 hands out: an open link (Device),
// registered memory (Region), an endpoint (EndpointPtr, from src/common);
// and the links of this host.
#ifndef TB5_PERF_DEVICE_HPP
#define TB5_PERF_DEVICE_HPP

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "handles.hpp"
#include "memory_kind.hpp"
#include "tb5/tb5.h"
#include "udmabuf.hpp"

namespace tb5perf {

// The links of this host (tb5_list_links); throws on failure.
std::vector<tb5_link_info> list_links();

class Device {
public:
	// tb5_open(); throws with the library's message.
	explicit Device(const std::string &name);
	Device(const Device &) = delete;
	Device &operator=(const Device &) = delete;

	tb5_device *get() const { return dev_.get(); }
	const std::string &name() const { return name_; }
	tb5_link_info query() const;

	// Polls and queries until the link is READY, calling @on_wait (which
	// may throw) about every 10 ms; throws after @timeout_s.
	tb5_link_info wait_ready(double timeout_s,
				const std::function<void()> &on_wait = {});

private:
	std::string name_;
	tb5::tools::DevicePtr dev_;
};

// Throws Error unless @memory can be registered on this host, and on
// @link when one is given (dma-bufs need the kernel module).
void check_memory(Memory memory, const tb5_link_info *link);

// Page-aligned, pre-faulted memory registered on a device: anonymous
// memory (tb5_reg_host), or a dma-buf from /dev/udmabuf (tb5_reg_dmabuf).
class Region {
public:
	// Throws Error with the reason, nothing left behind.
	Region(Device &dev, size_t len, Memory memory);
	~Region();
	Region(const Region &) = delete;
	Region &operator=(const Region &) = delete;

	uint8_t *data() const { return data_; }
	size_t size() const { return len_; }
	tb5_mr *mr() const { return mr_; }

private:
	void init_host(Device &dev);
	void init_udmabuf(Device &dev);

	uint8_t *data_ = nullptr;
	size_t len_ = 0;
	size_t mapped_ = 0;
	tb5_mr *mr_ = nullptr;
	std::unique_ptr<Udmabuf> udmabuf_;	// with udmabuf: owns the mapping
};

using EndpointPtr = tb5::tools::EndpointPtr;

} // namespace tb5perf

#endif // TB5_PERF_DEVICE_HPP
