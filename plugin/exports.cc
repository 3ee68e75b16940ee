// SPDX-License-Identifier: MIT
//
// exports.cc - the symbols NCCL looks up: ncclNetPlugin_v12 down to
// ncclNetPlugin_v7. v12 is net.hpp's calls as they are; each older table
// is a thin shim that converts arguments (int sizes, property layouts, no
// per-communicator context) and calls the same implementation. These
// tables are the only symbols the library exports (see exports.map).
#include <climits>
#include <cstring>
#include <new>

#include "nccl_net_abi.h"
#include "net.hpp"

#define TB5_EXPORT extern "C" __attribute__((visibility("default")))

namespace tb5net {
namespace {

// ---- v12 / v11 -------------------------------------------------------------

ncclResult_t init_v11(void **ctx, uint64_t comm_id, ncclNetCommConfig_v11_t *config,
		     ncclDebugLogger_t logger, ncclProfilerCallback_t prof)
{
	(void)comm_id;
	(void)config;	// no traffic classes on a cable
	(void)prof;
	if (!ctx)
		return ncclInvalidArgument;
	return init(ctx, logger);
}

ncclResult_t listen_v11(void *ctx, int dev, void *handle, void **listen_comm)
{
	(void)ctx;
	return listen(dev, handle, listen_comm);
}

ncclResult_t connect_v11(void *ctx, int dev, void *handle, void **send_comm,
			ncclNetDeviceHandle_v11_t **dev_comm)
{
	(void)ctx;
	(void)dev_comm;	// no device offload: left as NCCL set it
	return connect(dev, handle, send_comm);
}

ncclResult_t accept_v7(void *listen_comm, void **recv_comm,
		      ncclNetDeviceHandle_v7_t **dev_comm)
{
	(void)dev_comm;
	return accept(listen_comm, recv_comm);
}

ncclResult_t isend_v10(void *send_comm, void *data, size_t size, int tag,
		      void *mhandle, void *phandle, void **request)
{
	(void)phandle;	// no profiler events
	return isend(send_comm, data, size, tag, mhandle, request);
}

ncclResult_t irecv_v10(void *recv_comm, int n, void **data, size_t *sizes, int *tags,
		      void **mhandles, void **phandles, void **request)
{
	(void)phandles;
	return irecv(recv_comm, n, data, sizes, tags, mhandles, request);
}

ncclResult_t set_net_attr_v12(void *ctx, ncclNetAttr_v12_t *attr)
{
	return set_net_attr(ctx, attr);
}

// Older property layouts: the same values, field by field, for the fields
// each layout has. v7 and v8 have no vProps and take int sizes: they are
// not told of virtual devices or of messages they cannot express (NCCL
// caps its transfers by what the ABI can say). A virtual device of more
// links than a layout's vProps can name cannot be described to it.
template <typename P> ncclResult_t get_properties_as(int dev, P *out)
{
	constexpr bool has_vprops = requires { out->vProps; };
	ncclNetProperties_v12_t p;
	ncclResult_t r = get_properties(dev, &p);
	if (r != ncclSuccess)
		return r;
	if (p.vProps.ndevs > (has_vprops ? NCCL_NET_MAX_DEVS_PER_NIC : 1))
		return ncclInvalidUsage;
	std::memset(out, 0, sizeof(*out));
	out->name = p.name;
	out->pciPath = p.pciPath;
	out->guid = p.guid;
	out->ptrSupport = p.ptrSupport;
	out->speed = p.speed;
	out->port = p.port;
	out->latency = p.latency;
	out->maxComms = p.maxComms;
	out->maxRecvs = p.maxRecvs;
	out->netDeviceType = p.netDeviceType;
	out->netDeviceVersion = p.netDeviceVersion;
	if constexpr (requires { out->regIsGlobal; })
		out->regIsGlobal = p.regIsGlobal;
	if constexpr (has_vprops) {
		out->forceFlush = p.forceFlush;
		out->vProps.ndevs = p.vProps.ndevs;
		for (int i = 0; i < NCCL_NET_MAX_DEVS_PER_NIC; i++)
			out->vProps.devs[i] = p.vProps.devs[i];
		out->maxP2pBytes = p.maxP2pBytes;
		out->maxCollBytes = p.maxCollBytes;
	}
	if constexpr (requires { out->maxMultiRequestSize; })
		out->maxMultiRequestSize = p.maxMultiRequestSize;
	return ncclSuccess;
}

// ---- v10 and older: one process-wide init, no finalize --------------------

ncclResult_t init_v10(ncclDebugLogger_t logger, ncclProfilerCallback_t prof)
{
	(void)prof;
	return init(nullptr, logger);
}

ncclResult_t init_v7(ncclDebugLogger_t logger)
{
	return init(nullptr, logger);
}

ncclResult_t connect_v10(int dev, ncclNetCommConfig_v10_t *config, void *handle,
			void **send_comm, ncclNetDeviceHandle_v10_t **dev_comm)
{
	(void)config;
	(void)dev_comm;
	return connect(dev, handle, send_comm);
}

ncclResult_t connect_v7(int dev, void *handle, void **send_comm,
		       ncclNetDeviceHandle_v7_t **dev_comm)
{
	(void)dev_comm;
	return connect(dev, handle, send_comm);
}

ncclResult_t isend_v9(void *send_comm, void *data, size_t size, int tag, void *mhandle,
		     void **request)
{
	return isend(send_comm, data, size, tag, mhandle, request);
}

ncclResult_t irecv_v9(void *recv_comm, int n, void **data, size_t *sizes, int *tags,
		     void **mhandles, void **request)
{
	return irecv(recv_comm, n, data, sizes, tags, mhandles, request);
}

ncclResult_t reg_mr_v7(void *comm, void *data, int size, int type, void **mhandle)
{
	if (size < 0)
		return ncclInvalidArgument;
	return reg_mr(comm, data, (size_t)size, type, mhandle);
}

ncclResult_t isend_v7(void *send_comm, void *data, int size, int tag, void *mhandle,
		     void **request)
{
	if (size < 0)
		return ncclInvalidArgument;
	return isend(send_comm, data, (size_t)size, tag, mhandle, request);
}

ncclResult_t irecv_v7(void *recv_comm, int n, void **data, int *sizes, int *tags,
		     void **mhandles, void **request)
{
	if (n < 1 || n > kMaxRecvs || !sizes)
		return ncclInvalidArgument;
	size_t wide[kMaxRecvs];
	for (int i = 0; i < n; i++) {
		if (sizes[i] < 0)
			return ncclInvalidArgument;
		wide[i] = (size_t)sizes[i];
	}
	return irecv(recv_comm, n, data, wide, tags, mhandles, request);
}

// Every function NCCL calls runs through guarded<>: the implementation
// allocates (std::string, std::vector, std::map) and C++ exceptions must
// not unwind into NCCL's C code, so what escapes becomes an error code
// (docs/architecture.md, C++ style).
template <auto Fn> struct Guard;
template <typename... Args, ncclResult_t (*Fn)(Args...)> struct Guard<Fn> {
	static ncclResult_t call(Args... args) noexcept
	{
		try {
			return Fn(args...);
		} catch (const std::bad_alloc &) {
			return ncclSystemError;
		} catch (...) {
			return ncclInternalError;
		}
	}
};
template <auto Fn> constexpr auto guarded = &Guard<Fn>::call;

} // namespace
} // namespace tb5net

using namespace tb5net;

TB5_EXPORT const ncclNet_v12_t ncclNetPlugin_v12 = {
	kName, guarded<init_v11>, guarded<devices>, guarded<get_properties>,
	guarded<listen_v11>, guarded<connect_v11>, guarded<accept_v7>, guarded<reg_mr>,
	guarded<reg_mr_dma_buf>, guarded<dereg_mr>, guarded<isend_v10>, guarded<irecv_v10>,
	guarded<iflush>, guarded<test>, guarded<close_send>, guarded<close_recv>,
	guarded<close_listen>, guarded<get_device_mr>, guarded<irecv_consumed>,
	nullptr /* makeVDevice: see devices.cc */, guarded<finalize>, guarded<set_net_attr_v12>,
};

TB5_EXPORT const ncclNet_v11_t ncclNetPlugin_v11 = {
	kName, guarded<init_v11>, guarded<devices>,
	guarded<get_properties_as<ncclNetProperties_v11_t>>, guarded<listen_v11>,
	guarded<connect_v11>, guarded<accept_v7>, guarded<reg_mr>, guarded<reg_mr_dma_buf>,
	guarded<dereg_mr>, guarded<isend_v10>, guarded<irecv_v10>, guarded<iflush>,
	guarded<test>, guarded<close_send>, guarded<close_recv>, guarded<close_listen>,
	guarded<get_device_mr>, guarded<irecv_consumed>, nullptr /* makeVDevice */,
	guarded<finalize>, guarded<set_net_attr_v12>,
};

TB5_EXPORT const ncclNet_v10_t ncclNetPlugin_v10 = {
	kName, guarded<init_v10>, guarded<devices>,
	guarded<get_properties_as<ncclNetProperties_v9_t>>, guarded<listen>,
	guarded<connect_v10>, guarded<accept_v7>, guarded<reg_mr>, guarded<reg_mr_dma_buf>,
	guarded<dereg_mr>, guarded<isend_v10>, guarded<irecv_v10>, guarded<iflush>,
	guarded<test>, guarded<close_send>, guarded<close_recv>, guarded<close_listen>,
	guarded<get_device_mr>, guarded<irecv_consumed>, nullptr /* makeVDevice */,
};

TB5_EXPORT const ncclNet_v9_t ncclNetPlugin_v9 = {
	kName, guarded<init_v7>, guarded<devices>,
	guarded<get_properties_as<ncclNetProperties_v9_t>>, guarded<listen>,
	guarded<connect_v7>, guarded<accept_v7>, guarded<reg_mr>, guarded<reg_mr_dma_buf>,
	guarded<dereg_mr>, guarded<isend_v9>, guarded<irecv_v9>, guarded<iflush>,
	guarded<test>, guarded<close_send>, guarded<close_recv>, guarded<close_listen>,
	guarded<get_device_mr>, guarded<irecv_consumed>, nullptr /* makeVDevice */,
};

TB5_EXPORT const ncclNet_v8_t ncclNetPlugin_v8 = {
	kName, guarded<init_v7>, guarded<devices>,
	guarded<get_properties_as<ncclNetProperties_v8_t>>, guarded<listen>,
	guarded<connect_v7>, guarded<accept_v7>, guarded<reg_mr>, guarded<reg_mr_dma_buf>,
	guarded<dereg_mr>, guarded<isend_v7>, guarded<irecv_v7>, guarded<iflush>,
	guarded<test>, guarded<close_send>, guarded<close_recv>, guarded<close_listen>,
	guarded<get_device_mr>, guarded<irecv_consumed>,
};

TB5_EXPORT const ncclNet_v7_t ncclNetPlugin_v7 = {
	kName, guarded<init_v7>, guarded<devices>,
	guarded<get_properties_as<ncclNetProperties_v7_t>>, guarded<listen>,
	guarded<connect_v7>, guarded<accept_v7>, guarded<reg_mr_v7>,
	guarded<reg_mr_dma_buf>, guarded<dereg_mr>, guarded<isend_v7>, guarded<irecv_v7>,
	guarded<iflush>, guarded<test>, guarded<close_send>, guarded<close_recv>,
	guarded<close_listen>, guarded<get_device_mr>, guarded<irecv_consumed>,
};
