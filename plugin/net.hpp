// SPDX-License-Identifier: MIT
//
// net.hpp - the plugin's one implementation, shaped like the newest NCCL
// net ABI (v12). exports.cc builds every exported version's table from
// these calls; nothing else in the plugin is visible outside it. They are
// defined by responsibility: devices.cc (init, finalize, devices,
// getProperties, setNetAttr), connect.cc (listen, connect, accept, the
// closes), data_path.cc (isend, irecv, iflush, test, irecvConsumed) and
// memory.cc (regMr, regMrDmaBuf, deregMr, getDeviceMr); state.hpp holds
// what they share.
#ifndef TB5_PLUGIN_NET_HPP
#define TB5_PLUGIN_NET_HPP

#include <cstddef>
#include <cstdint>

#include "nccl_net_abi.h"

namespace tb5net {

inline constexpr const char *kName = "TB5";
// Receives grouped in one irecv(). Each is a tb5 receive of its own on the
// comm's endpoint, so 8 x NCCL's 8 steps in flight fit the endpoint's 64.
inline constexpr int kMaxRecvs = 8;
// The largest virtual device (NCCL's v12 limit; v9..v11 allow 4).
inline constexpr int kMaxVDevLinks = NCCL_NET_MAX_DEVS_PER_NIC_V12;

// init()/finalize() pairs: v11+ call them per communicator; older versions
// call init() once and never finalize (pass ctx == nullptr).
ncclResult_t init(void **ctx, ncclDebugLogger_t logger);
ncclResult_t finalize(void *ctx);
ncclResult_t devices(int *ndev);
ncclResult_t get_properties(int dev, ncclNetProperties_v12_t *props);
ncclResult_t listen(int dev, void *handle, void **listen_comm);
ncclResult_t connect(int dev, void *handle, void **send_comm);
ncclResult_t accept(void *listen_comm, void **recv_comm);
ncclResult_t reg_mr(void *comm, void *data, size_t size, int type, void **mhandle);
ncclResult_t reg_mr_dma_buf(void *comm, void *data, size_t size, int type,
			 uint64_t offset, int fd, void **mhandle);
ncclResult_t dereg_mr(void *comm, void *mhandle);
ncclResult_t isend(void *send_comm, void *data, size_t size, int tag,
		   void *mhandle, void **request);
ncclResult_t irecv(void *recv_comm, int n, void **data, const size_t *sizes,
		   const int *tags, void **mhandles, void **request);
ncclResult_t iflush(void *recv_comm, int n, void **data, int *sizes,
		    void **mhandles, void **request);
ncclResult_t test(void *request, int *done, int *sizes);
ncclResult_t close_send(void *send_comm);
ncclResult_t close_recv(void *recv_comm);
ncclResult_t close_listen(void *listen_comm);
ncclResult_t get_device_mr(void *comm, void *mhandle, void **dptr_mhandle);
ncclResult_t irecv_consumed(void *recv_comm, int n, void *request);
ncclResult_t set_net_attr(void *ctx, const ncclNetAttr_v12_t *attr);

} // namespace tb5net

#endif // TB5_PLUGIN_NET_HPP
