// SPDX-License-Identifier: MIT
//
// handles.hpp - owners of what libtb5 hands out, for the tools: an open
// device (tb5_close) and an endpoint (tb5_endpoint_close).
#ifndef TB5_COMMON_HANDLES_HPP
#define TB5_COMMON_HANDLES_HPP

#include <memory>

#include "tb5/tb5.h"

namespace tb5::tools {

struct DeviceCloser {
	void operator()(tb5_device *dev) const
	{
		if (dev)
			tb5_close(dev);
	}
};
using DevicePtr = std::unique_ptr<tb5_device, DeviceCloser>;

struct EndpointCloser {
	void operator()(tb5_endpoint *ep) const
	{
		if (ep)
			tb5_endpoint_close(ep);
	}
};
using EndpointPtr = std::unique_ptr<tb5_endpoint, EndpointCloser>;

} // namespace tb5::tools

#endif // TB5_COMMON_HANDLES_HPP
