// SPDX-License-Identifier: MIT
//
// device.cc - devices, regions, endpoints.
#include "device.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>
#include <utility>

#include "clock.hpp"
#include "errors.hpp"
#include "links.hpp"
#include "units.hpp"

namespace tb5perf {

std::vector<tb5_link_info> list_links()
{
	std::vector<tb5_link_info> links;

	check(tb5::tools::list_links(&links), "tb5_list_links");
	return links;
}

Device::Device(const std::string &name) : name_(name)
{
	tb5_device *dev = nullptr;
	const int ret = tb5_open(name.c_str(), &dev);

	if (ret < 0)
		throw_api("tb5_open " + name, ret);
	dev_.reset(dev);
}

tb5_link_info Device::query() const
{
	tb5_link_info info = {};

	if (const int ret = tb5_query(dev_.get(), &info); ret < 0)
		throw_api("tb5_query " + name_, ret);
	return info;
}

tb5_link_info Device::wait_ready(double timeout_s,
				const std::function<void()> &on_wait)
{
	const uint64_t deadline = now_ns() + static_cast<uint64_t>(timeout_s * 1e9);

	for (;;) {
		tb5_wc wc[8];
		// The simulator's transport runs inside tb5_poll(); nothing
		// else is open on the device yet, so nothing is lost.
		check(tb5_poll(dev_.get(), wc, 8), "tb5_poll");
		const tb5_link_info info = query();
		if (info.state == TB5_LINK_STATE_READY)
			return info;
		if (stop_requested())
			throw Interrupted();
		if (on_wait)
			on_wait();
		if (now_ns() > deadline) {
			char secs[32];
			snprintf(secs, sizeof(secs), "%g", timeout_s);
			throw Error("link " + name_ + " is " +
				    tb5_link_state_str(info.state) +
				    ", not ready, after " + secs + " s");
		}
		std::this_thread::sleep_for(std::chrono::milliseconds(10));
	}
}

void check_memory(Memory memory, const tb5_link_info *link)
{
	if (memory == Memory::kHost)
		return;
	// The simulator copies between the processes' own mappings; only
	// the module imports dma-bufs.
	if (link && link->backend != TB5_BACKEND_KERNEL)
		throw Error(std::string("--memory udmabuf needs the tb5 kernel "
					"module (") + link->name + " is a " +
			    tb5_backend_str(link->backend) + " link)");
	if (link && !(link->caps & TB5_CAP_DMABUF))
		throw Error(std::string("--memory udmabuf needs the tb5 kernel "
					"module with dma-buf import (the module "
					"of ") + link->name +
			    " lacks TB5_CAP_DMABUF)");
	check_udmabuf();
}

Region::Region(Device &dev, size_t len, Memory memory) : len_(len)
{
	if (memory == Memory::kUdmabuf)
		init_udmabuf(dev);
	else
		init_host(dev);
}

void Region::init_host(Device &dev)
{
	const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));

	mapped_ = (len_ + page - 1) / page * page;
	void *p = mmap(nullptr, mapped_, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (p == MAP_FAILED)
		throw Error("cannot map " + format_size(len_) + " of buffers: " +
			    strerror(errno));
	data_ = static_cast<uint8_t *>(p);
	// Touch every page, so that no page fault lands in a measurement.
	memset(data_, 0, mapped_);
	const int ret = tb5_reg_host(dev.get(), data_, len_, &mr_);
	if (ret < 0) {
		const std::string msg = api_message(
			"tb5_reg_host of " + format_size(len_) + " on " + dev.name(),
			ret);
		munmap(data_, mapped_);
		throw Error(msg);
	}
}

void Region::init_udmabuf(Device &dev)
{
	const tb5_link_info info = dev.query();

	check_memory(Memory::kUdmabuf, &info);
	auto buf = std::make_unique<Udmabuf>(len_);
	const int ret = tb5_reg_dmabuf(dev.get(), buf->fd(), 0, len_, &mr_);
	if (ret < 0)
		throw_api("tb5_reg_dmabuf of " + format_size(len_) + " on " +
				 dev.name(),
			 ret);
	// The registration holds a reference to the dma-buf until
	// tb5_dereg(); the fd has done its work.
	buf->close_fd();
	data_ = buf->data();
	mapped_ = buf->size();
	udmabuf_ = std::move(buf);
}

Region::~Region()
{
	// An operation still using the region means the endpoint was not
	// closed first; keep the memory mapped rather than pull it from
	// under the library (tb5_close() frees the registration).
	if (mr_ && tb5_dereg(mr_) < 0) {
		static_cast<void>(udmabuf_.release());
		return;
	}
	if (udmabuf_)
		udmabuf_.reset();
	else
		munmap(data_, mapped_);
}

} // namespace tb5perf
