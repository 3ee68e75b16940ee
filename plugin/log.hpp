// SPDX-License-Identifier: MIT
//
// log.hpp - the plugin logs through the logger NCCL passes to init(), every
// line prefixed "NET/TB5 : " so that it reads like NCCL's own transports.
// Before init() (or when NCCL passes none) nothing is logged.
#ifndef TB5_PLUGIN_LOG_HPP
#define TB5_PLUGIN_LOG_HPP

#include <atomic>

#include "nccl_net_abi.h"

namespace tb5net {

extern std::atomic<ncclDebugLogger_t> g_logger;

#define TB5_LOG(level, flags, fmt, ...)                                        \
	do {                                                                   \
		ncclDebugLogger_t tb5_log_fn_ =                                \
			::tb5net::g_logger.load(std::memory_order_relaxed);    \
		if (tb5_log_fn_)                                               \
			tb5_log_fn_(level, flags, __FILE__, __LINE__,          \
				    "NET/TB5 : " fmt __VA_OPT__(,) __VA_ARGS__); \
	} while (0)

#define TB5_WARN(fmt, ...) TB5_LOG(NCCL_LOG_WARN, NCCL_ALL, fmt __VA_OPT__(,) __VA_ARGS__)
#define TB5_INFO(flags, fmt, ...) TB5_LOG(NCCL_LOG_INFO, flags, fmt __VA_OPT__(,) __VA_ARGS__)
#define TB5_TRACE(fmt, ...) TB5_LOG(NCCL_LOG_TRACE, NCCL_NET, fmt __VA_OPT__(,) __VA_ARGS__)

} // namespace tb5net

#endif // TB5_PLUGIN_LOG_HPP
