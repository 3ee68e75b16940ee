// SPDX-License-Identifier: MIT
//
// abi_layout.cc - the NCCL plugin ABI's struct sizes and field offsets,
// checked at compile time against the layouts NCCL's documentation fixes for
// LP64 (x86-64, aarch64). A wrong field here would silently corrupt what
// NCCL reads, so the build stops instead.
#include <cstddef>

#include "nccl_net_abi.h"

namespace {

#define TB5_OFF(type, field, off) \
	static_assert(offsetof(type, field) == (off), #type "." #field " moved")
#define TB5_SIZE(type, size) static_assert(sizeof(type) == (size), #type " size")

static_assert(sizeof(void *) == 8, "the ABI checks below are for LP64");
TB5_SIZE(ncclResult_t, 4);
TB5_SIZE(ncclNetDeviceType, 4);

TB5_SIZE(ncclNetDeviceHandle_v7_t, 32);
TB5_OFF(ncclNetDeviceHandle_v7_t, netDeviceVersion, 4);
TB5_OFF(ncclNetDeviceHandle_v7_t, handle, 8);
TB5_OFF(ncclNetDeviceHandle_v7_t, size, 16);
TB5_OFF(ncclNetDeviceHandle_v7_t, needsProxyProgress, 24);

TB5_SIZE(ncclNetProperties_v7_t, 56);
TB5_OFF(ncclNetProperties_v7_t, pciPath, 8);
TB5_OFF(ncclNetProperties_v7_t, guid, 16);
TB5_OFF(ncclNetProperties_v7_t, ptrSupport, 24);
TB5_OFF(ncclNetProperties_v7_t, speed, 28);
TB5_OFF(ncclNetProperties_v7_t, port, 32);
TB5_OFF(ncclNetProperties_v7_t, latency, 36);
TB5_OFF(ncclNetProperties_v7_t, maxComms, 40);
TB5_OFF(ncclNetProperties_v7_t, maxRecvs, 44);
TB5_OFF(ncclNetProperties_v7_t, netDeviceType, 48);
TB5_OFF(ncclNetProperties_v7_t, netDeviceVersion, 52);

TB5_SIZE(ncclNetProperties_v8_t, 64);
TB5_OFF(ncclNetProperties_v8_t, ptrSupport, 24);
TB5_OFF(ncclNetProperties_v8_t, regIsGlobal, 28);
TB5_OFF(ncclNetProperties_v8_t, speed, 32);
TB5_OFF(ncclNetProperties_v8_t, port, 36);
TB5_OFF(ncclNetProperties_v8_t, latency, 40);
TB5_OFF(ncclNetProperties_v8_t, maxComms, 44);
TB5_OFF(ncclNetProperties_v8_t, maxRecvs, 48);
TB5_OFF(ncclNetProperties_v8_t, netDeviceType, 52);
TB5_OFF(ncclNetProperties_v8_t, netDeviceVersion, 56);

TB5_SIZE(ncclNetVDeviceProps_v9_t, 20);
TB5_SIZE(ncclNetVDeviceProps_v12_t, 36);

TB5_SIZE(ncclNetProperties_v9_t, 104);
TB5_OFF(ncclNetProperties_v9_t, regIsGlobal, 28);
TB5_OFF(ncclNetProperties_v9_t, forceFlush, 32);
TB5_OFF(ncclNetProperties_v9_t, speed, 36);
TB5_OFF(ncclNetProperties_v9_t, port, 40);
TB5_OFF(ncclNetProperties_v9_t, latency, 44);
TB5_OFF(ncclNetProperties_v9_t, maxComms, 48);
TB5_OFF(ncclNetProperties_v9_t, maxRecvs, 52);
TB5_OFF(ncclNetProperties_v9_t, netDeviceType, 56);
TB5_OFF(ncclNetProperties_v9_t, netDeviceVersion, 60);
TB5_OFF(ncclNetProperties_v9_t, vProps, 64);
TB5_OFF(ncclNetProperties_v9_t, maxP2pBytes, 88);
TB5_OFF(ncclNetProperties_v9_t, maxCollBytes, 96);

TB5_SIZE(ncclNetProperties_v11_t, 112);
TB5_OFF(ncclNetProperties_v11_t, vProps, 64);
TB5_OFF(ncclNetProperties_v11_t, maxP2pBytes, 88);
TB5_OFF(ncclNetProperties_v11_t, maxCollBytes, 96);
TB5_OFF(ncclNetProperties_v11_t, maxMultiRequestSize, 104);

TB5_SIZE(ncclNetProperties_v12_t, 128);
TB5_OFF(ncclNetProperties_v12_t, vProps, 64);
TB5_OFF(ncclNetProperties_v12_t, maxP2pBytes, 104);
TB5_OFF(ncclNetProperties_v12_t, maxCollBytes, 112);
TB5_OFF(ncclNetProperties_v12_t, maxMultiRequestSize, 120);
TB5_OFF(ncclNetProperties_v12_t, railId, 124);
TB5_OFF(ncclNetProperties_v12_t, planeId, 126);

TB5_SIZE(ncclNetCommConfig_v10_t, 4);
TB5_SIZE(ncclNetAttr_v11_t, 44);
TB5_OFF(ncclNetAttr_v11_t, recvCommAttr, 16);
TB5_OFF(ncclNetAttr_v11_t, op, 32);
TB5_OFF(ncclNetAttr_v11_t, proto, 40);

// Function tables: the name, then one pointer per call, in ABI order.
TB5_SIZE(ncclNet_v7_t, 8 * 19);
TB5_OFF(ncclNet_v7_t, regMr, 8 * 7);
TB5_OFF(ncclNet_v7_t, test, 8 * 13);
TB5_OFF(ncclNet_v7_t, irecvConsumed, 8 * 18);
TB5_SIZE(ncclNet_v8_t, 8 * 19);
TB5_OFF(ncclNet_v8_t, isend, 8 * 10);
TB5_SIZE(ncclNet_v9_t, 8 * 20);
TB5_OFF(ncclNet_v9_t, makeVDevice, 8 * 19);
TB5_SIZE(ncclNet_v10_t, 8 * 20);
TB5_OFF(ncclNet_v10_t, connect, 8 * 5);
TB5_OFF(ncclNet_v10_t, makeVDevice, 8 * 19);
TB5_SIZE(ncclNet_v11_t, 8 * 22);
TB5_OFF(ncclNet_v11_t, finalize, 8 * 20);
TB5_OFF(ncclNet_v11_t, setNetAttr, 8 * 21);
TB5_SIZE(ncclNet_v12_t, 8 * 22);
TB5_OFF(ncclNet_v12_t, iflush, 8 * 12);
TB5_OFF(ncclNet_v12_t, finalize, 8 * 20);

#undef TB5_OFF
#undef TB5_SIZE

} // namespace
