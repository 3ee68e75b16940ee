// SPDX-License-Identifier: MIT
//
// test_sim_cuda.cc - GPU memory over the simulator through the CUDA DMA
// engine (TB5_SIM dma=cuda): real device memory (cuMemAlloc), registered
// by address, carried between every mix of host and GPU ends in one
// process (a loop pair) and between two processes (CUDA IPC for cuMemAlloc
// memory; for cuMem allocations, their shareable handle as a POSIX fd, or
// the ring where they were made without one), checked by copying it back
// to the host. Skipped, saying why, where CUDA or a GPU is
// missing (CI): test_sim_gpu.cc runs the same code through the stand-in.
// libcuda is loaded at run time, as libtb5 loads it: no build dependency.
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gpu_echo.hpp"
#include "lib_harness.hpp"

namespace {

using namespace tb5libtest;

constexpr uint64_t kEchoService = 0x63756461;	// "cuda"
constexpr size_t kLen = 8 << 20;

// cuMem (VMM) allocations, as documented (NCCL's own buffers).
struct MemLocation {
	int type;	// 1: a device
	int id;
};
struct MemAllocationProp {
	int type;	// 1: pinned
	int requestedHandleTypes;	// 1: POSIX fd
	MemLocation location;
	void *win32HandleMetaData;
	unsigned char allocFlags[8];
};
struct MemAccessDesc {
	MemLocation location;
	int flags;	// 3: read and write
};

// The few driver API entry points the test needs (as documented).
struct Cuda {
	int (*cuInit)(unsigned);
	int (*cuDeviceGet)(int *, int);
	int (*cuDevicePrimaryCtxRetain)(void **, int);
	int (*cuCtxSetCurrent)(void *);
	int (*cuMemAlloc)(unsigned long long *, size_t);
	int (*cuMemFree)(unsigned long long);
	int (*cuMemcpyHtoD)(unsigned long long, const void *, size_t);
	int (*cuMemcpyDtoH)(void *, unsigned long long, size_t);
	int (*cuMemCreate)(unsigned long long *, size_t, const MemAllocationProp *,
			   unsigned long long);
	int (*cuMemRelease)(unsigned long long);
	int (*cuMemAddressReserve)(unsigned long long *, size_t, size_t,
				   unsigned long long, unsigned long long);
	int (*cuMemAddressFree)(unsigned long long, size_t);
	int (*cuMemMap)(unsigned long long, size_t, size_t, unsigned long long,
			unsigned long long);
	int (*cuMemUnmap)(unsigned long long, size_t);
	int (*cuMemSetAccess)(unsigned long long, size_t, const MemAccessDesc *, size_t);
	std::string why;	// empty when usable

	Cuda()
	{
		void *lib = dlopen("libcuda.so.1", RTLD_NOW);
		void *ctx = nullptr;
		int dev = 0;

		if (!lib) {
			why = "no libcuda.so.1";
			return;
		}
#define TB5_LOAD(f, s) f = reinterpret_cast<decltype(f)>(dlsym(lib, s))
		TB5_LOAD(cuInit, "cuInit");
		TB5_LOAD(cuDeviceGet, "cuDeviceGet");
		TB5_LOAD(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
		TB5_LOAD(cuCtxSetCurrent, "cuCtxSetCurrent");
		TB5_LOAD(cuMemAlloc, "cuMemAlloc_v2");
		TB5_LOAD(cuMemFree, "cuMemFree_v2");
		TB5_LOAD(cuMemcpyHtoD, "cuMemcpyHtoD_v2");
		TB5_LOAD(cuMemcpyDtoH, "cuMemcpyDtoH_v2");
		TB5_LOAD(cuMemCreate, "cuMemCreate");
		TB5_LOAD(cuMemRelease, "cuMemRelease");
		TB5_LOAD(cuMemAddressReserve, "cuMemAddressReserve");
		TB5_LOAD(cuMemAddressFree, "cuMemAddressFree");
		TB5_LOAD(cuMemMap, "cuMemMap");
		TB5_LOAD(cuMemUnmap, "cuMemUnmap");
		TB5_LOAD(cuMemSetAccess, "cuMemSetAccess");
#undef TB5_LOAD
		if (!cuInit || !cuMemcpyDtoH || !cuMemSetAccess || cuInit(0) || cuDeviceGet(&dev, 0) ||
		    cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxSetCurrent(ctx))
			why = "CUDA has no usable device";
	}
	uint8_t *alloc(size_t n)
	{
		unsigned long long p = 0;

		cuCtxSetCurrent(ctx());
		EXPECT_EQ(cuMemAlloc(&p, n), 0);
		return reinterpret_cast<uint8_t *>(p);
	}
	// @n bytes (a multiple of 2 MiB, the granularity) of a cuMem
	// allocation on device 0, mapped as NCCL maps its buffers; @fd: made
	// with CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR allowed.
	uint8_t *alloc_cumem(size_t n, bool fd)
	{
		MemAllocationProp prop = {};
		const MemAccessDesc access = { { 1, 0 }, 3 };
		unsigned long long h = 0, p = 0;

		prop.type = 1;
		prop.requestedHandleTypes = fd ? 1 : 0;
		prop.location = { 1, 0 };
		cuCtxSetCurrent(ctx());
		EXPECT_EQ(cuMemCreate(&h, n, &prop, 0), 0);
		EXPECT_EQ(cuMemAddressReserve(&p, n, 0, 0, 0), 0);
		EXPECT_EQ(cuMemMap(p, n, 0, h, 0), 0);
		EXPECT_EQ(cuMemRelease(h), 0);
		EXPECT_EQ(cuMemSetAccess(p, n, &access, 1), 0);
		return reinterpret_cast<uint8_t *>(p);
	}
	void free_cumem(uint8_t *p, size_t n)
	{
		cuCtxSetCurrent(ctx());
		EXPECT_EQ(cuMemUnmap(reinterpret_cast<uintptr_t>(p), n), 0);
		EXPECT_EQ(cuMemAddressFree(reinterpret_cast<uintptr_t>(p), n), 0);
	}
	void *ctx()
	{
		void *c = nullptr;

		cuDevicePrimaryCtxRetain(&c, 0);
		return c;
	}
	void put(uint8_t *dst, const void *src, size_t n)
	{
		cuCtxSetCurrent(ctx());
		ASSERT_EQ(cuMemcpyHtoD(reinterpret_cast<uintptr_t>(dst), src, n), 0);
	}
	std::vector<uint8_t> get(const uint8_t *src, size_t n)
	{
		std::vector<uint8_t> v(n);

		cuCtxSetCurrent(ctx());
		EXPECT_EQ(cuMemcpyDtoH(v.data(), reinterpret_cast<uintptr_t>(src), n), 0);
		return v;
	}
};

Cuda &cuda()
{
	static Cuda c;
	return c;
}

#define TB5_NEED_CUDA()                                                       \
	do {                                                                  \
		if (!cuda().why.empty())                                      \
			GTEST_SKIP() << "needs CUDA and a GPU: " << cuda().why; \
	} while (0)

class SimCuda : public ::testing::Test {
protected:
	void SetUp() override
	{
		TB5_NEED_CUDA();
		std::string na, nb;

		ASSERT_TRUE(find_loop_pair(na, nb)) << tb5_last_error();
		ASSERT_EQ(a.open(na), 0) << tb5_last_error();
		ASSERT_EQ(b.open(nb), 0) << tb5_last_error();
	}
	Dev a, b;
};

TEST_F(SimCuda, LinksSayTheyTakeGpuMemoryAndHostPointersAreRefused)
{
	tb5_link_info info;
	std::vector<uint8_t> host(4096);
	tb5_mr *mr = nullptr;

	ASSERT_EQ(tb5_query(a.dev, &info), 0);
	ASSERT_TRUE(info.caps & TB5_CAP_GPU_MEM);
	EXPECT_EQ(tb5_reg_gpu(a.dev, host.data(), host.size(), -1, 0, &mr), -EINVAL);
	EXPECT_NE(strstr(tb5_last_error(), "not CUDA device memory"), nullptr)
		<< tb5_last_error();
	EXPECT_EQ(mr, nullptr);
}

TEST_F(SimCuda, CarriesEveryMixOfHostAndGpuEnds)
{
	uint8_t *sg = cuda().alloc(kLen), *rg = cuda().alloc(kLen);
	std::vector<uint8_t> sh(kLen), rh(kLen), pattern(kLen);
	tb5_mr *sgm = nullptr, *rgm = nullptr, *shm = nullptr, *rhm = nullptr;
	uint32_t seed = 1;

	ASSERT_EQ(tb5_reg_gpu(a.dev, sg, kLen, -1, 0, &sgm), 0) << tb5_last_error();
	ASSERT_EQ(tb5_reg_gpu(b.dev, rg, kLen, -1, 0, &rgm), 0) << tb5_last_error();
	ASSERT_EQ(tb5_reg_host(a.dev, sh.data(), kLen, &shm), 0);
	ASSERT_EQ(tb5_reg_host(b.dev, rh.data(), kLen, &rhm), 0);
	struct Leg {
		tb5_mr *s;
		bool sgpu;
		tb5_mr *r;
		bool rgpu;
	};
	for (const Leg &l : { Leg{ sgm, true, rgm, true }, Leg{ shm, false, rgm, true },
			      Leg{ sgm, true, rhm, false } }) {
		for (size_t len : { size_t(1), size_t(4097), size_t(3 << 20) + 5 }) {
			SCOPED_TRACE(std::to_string(l.sgpu) + std::to_string(l.rgpu) + " " +
				     std::to_string(len));
			Conn c;

			ASSERT_TRUE(connect_pair(b, a, 0x400 + seed, c));
			fill_pattern(pattern.data(), len, seed);
			if (l.sgpu)
				cuda().put(sg + 64, pattern.data(), len);
			else
				memcpy(sh.data() + 64, pattern.data(), len);
			ASSERT_EQ(tb5_recv(c.server, l.r, 32, len + 4096, 1, 1), 0);
			ASSERT_EQ(tb5_send(c.client, l.s, 64, len, 1, 2), 0);
			auto r = await(b, [](const tb5_wc &w) { return w.kind == TB5_WC_RECV; },
				       { &a }, 30);
			auto s = await(a, [](const tb5_wc &w) { return w.kind == TB5_WC_SEND; },
				       { &b }, 30);
			ASSERT_TRUE(r && s);
			ASSERT_EQ(r->status, 0);
			ASSERT_EQ(r->bytes, len);
			std::vector<uint8_t> got = l.rgpu ? cuda().get(rg + 32, len) :
				std::vector<uint8_t>(rh.begin() + 32, rh.begin() + 32 + long(len));
			EXPECT_EQ(check_pattern(got.data(), len, seed), -1);
			tb5_endpoint_close(c.client);
			tb5_endpoint_close(c.server);
			tb5_endpoint_close(c.listener);
			seed++;
		}
	}
	EXPECT_EQ(tb5_dereg(sgm), 0);
	EXPECT_EQ(tb5_dereg(rgm), 0);
	EXPECT_EQ(tb5_dereg(shm), 0);
	EXPECT_EQ(tb5_dereg(rhm), 0);
	cuda().cuMemFree(reinterpret_cast<uintptr_t>(sg));
	cuda().cuMemFree(reinterpret_cast<uintptr_t>(rg));
}

// The child (this binary again, TB5_TEST_CUDA_ROLE=echo: a fresh process,
// as CUDA does not survive fork()): receives into its GPU memory and sends
// it back from there until the peer closes.
int gpu_echo_server()
{
	std::string link = wait_peer_link(30);
	Dev d;
	tb5_endpoint *l = nullptr, *e = nullptr;
	tb5_mr *mr = nullptr;

	if (!cuda().why.empty())
		return 9;
	const char *kind = getenv("TB5_TEST_CUDA_ALLOC");
	uint8_t *g = kind && !strcmp(kind, "cumem") ? cuda().alloc_cumem(kLen, true) :
						      cuda().alloc(kLen);

	if (link.empty() || d.open(link) || tb5_reg_gpu(d.dev, g, kLen, -1, 0, &mr) ||
	    tb5_endpoint_listen(d.dev, kEchoService, TB5_LISTEN_WELL_KNOWN, 0, &l))
		return 10;
	while (tb5_endpoint_accept(l, 0, &e) == -EAGAIN)
		if (tb5_wait(d.dev, 30000) == -ETIMEDOUT)
			return 11;
	return echo_region(d, e, mr, kLen);
}

std::string self_exe;

// Messages of 1 B, 4097 B and 3 MiB + 5 from @from (@src: its first byte,
// GPU memory if @gpu) to the echo child and back into @rmr (GPU memory at
// @r), each checked.
void echo_sizes(Dev &d, tb5_endpoint *e, tb5_mr *from, uint8_t *src, bool gpu, tb5_mr *rmr,
		uint8_t *r, uint32_t &seed)
{
	std::vector<uint8_t> pattern(kLen);

	for (size_t len : { size_t(1), size_t(4097), size_t(3 << 20) + 5 }) {
		SCOPED_TRACE(std::to_string(gpu) + " " + std::to_string(len));
		fill_pattern(pattern.data(), len, seed);
		if (gpu)
			cuda().put(src, pattern.data(), len);
		else
			memcpy(src, pattern.data(), len);
		ASSERT_NO_FATAL_FAILURE(echo_once(d, e, from, 0, len, rmr, 0, kLen));
		EXPECT_EQ(check_pattern(cuda().get(r, len).data(), len, seed), -1);
		seed++;
	}
}

// The echo server, this binary again, its memory allocated as @alloc
// says ("cumem": a cuMem allocation; else cuMemAlloc).
pid_t start_echo_child(const char *alloc)
{
	pid_t child = fork();

	if (child == 0) {
		setenv("TB5_TEST_CUDA_ROLE", "echo", 1);
		setenv("TB5_TEST_CUDA_ALLOC", alloc, 1);
		execl(self_exe.c_str(), self_exe.c_str(), (char *)nullptr);
		_exit(127);
	}
	return child;
}

TEST(SimCudaTwoHosts, EchoesBetweenGpuMemoryOfTwoProcesses)
{
	TB5_NEED_CUDA();
	pid_t child = start_echo_child("cuMemAlloc");

	ASSERT_GE(child, 0);
	std::string link = wait_peer_link(30);
	ASSERT_FALSE(link.empty());
	Dev d(link);
	uint8_t *s = cuda().alloc(kLen), *r = cuda().alloc(kLen);
	std::vector<uint8_t> h(kLen);
	tb5_mr *smr = nullptr, *rmr = nullptr, *hmr = nullptr;
	tb5_endpoint *e = nullptr;

	ASSERT_EQ(tb5_reg_gpu(d.dev, s, kLen, -1, 0, &smr), 0) << tb5_last_error();
	ASSERT_EQ(tb5_reg_gpu(d.dev, r, kLen, -1, 0, &rmr), 0) << tb5_last_error();
	ASSERT_EQ(tb5_reg_host(d.dev, h.data(), kLen, &hmr), 0);
	e = connect_service(d, kEchoService);
	ASSERT_TRUE(e);
	uint32_t seed = 90;

	ASSERT_NO_FATAL_FAILURE(echo_sizes(d, e, smr, s, true, rmr, r, seed));
	ASSERT_NO_FATAL_FAILURE(echo_sizes(d, e, hmr, h.data(), false, rmr, r, seed));
	EXPECT_EQ(close_and_reap(e, child), 0) << "the close (-1), or the child's status";
	EXPECT_EQ(tb5_dereg(smr), 0);
	EXPECT_EQ(tb5_dereg(rmr), 0);
	EXPECT_EQ(tb5_dereg(hmr), 0);
}

// NCCL's buffers: cuMem allocations. Those made with a POSIX fd handle
// type travel by reference (each side opens the other's through the fd,
// pidfd_getfd), silently; one made without it says why on stderr and goes
// through the ring.
TEST(SimCudaTwoHosts, EchoesBetweenCuMemAllocationsOfTwoProcesses)
{
	TB5_NEED_CUDA();
	pid_t child = start_echo_child("cumem");

	ASSERT_GE(child, 0);
	std::string link = wait_peer_link(30);
	ASSERT_FALSE(link.empty());
	Dev d(link);
	uint8_t *s = cuda().alloc_cumem(kLen, true), *r = cuda().alloc_cumem(kLen, true);
	uint8_t *closed = cuda().alloc_cumem(kLen, false);
	tb5_mr *smr = nullptr, *rmr = nullptr, *cmr = nullptr;
	int r1 = -1, r2 = -1, r3 = -1;
	std::string said = stderr_of([&] {
		r1 = tb5_reg_gpu(d.dev, s, kLen, -1, 0, &smr);
		r2 = tb5_reg_gpu(d.dev, r, kLen, -1, 0, &rmr);
	});

	ASSERT_EQ(r1, 0);
	ASSERT_EQ(r2, 0);
	EXPECT_EQ(said, "") << "exported without a word";
	said = stderr_of([&] { r3 = tb5_reg_gpu(d.dev, closed, kLen, -1, 0, &cmr); });
	ASSERT_EQ(r3, 0);
	EXPECT_NE(said.find("CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR"), std::string::npos)
		<< said;
	tb5_endpoint *e = connect_service(d, kEchoService);

	ASSERT_TRUE(e);
	uint32_t seed = 190;

	ASSERT_NO_FATAL_FAILURE(echo_sizes(d, e, smr, s, true, rmr, r, seed));
	ASSERT_NO_FATAL_FAILURE(echo_sizes(d, e, cmr, closed, true, rmr, r, seed));
	EXPECT_EQ(close_and_reap(e, child), 0) << "the close (-1), or the child's status";
	EXPECT_EQ(tb5_dereg(smr), 0);
	EXPECT_EQ(tb5_dereg(rmr), 0);
	EXPECT_EQ(tb5_dereg(cmr), 0);
	cuda().free_cumem(s, kLen);
	cuda().free_cumem(r, kLen);
	cuda().free_cumem(closed, kLen);
}

} // namespace

int main(int argc, char **argv)
{
	const char *role = getenv("TB5_TEST_CUDA_ROLE");

	if (role && !strcmp(role, "echo"))
		return gpu_echo_server();	// TB5_SIM is the parent's
	::testing::InitGoogleTest(&argc, argv);
	char buf[4096];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);

	self_exe.assign(buf, n > 0 ? size_t(n) : 0);
	// TB5_TEST_SIM_OPTS adds settings (copy=2: through the copy engine).
	const char *more = getenv("TB5_TEST_SIM_OPTS");

	use_simulator("tb5test-cuda", std::string("hosts=2,loop=1,dma=cuda") +
				      (more && *more ? std::string(",") + more : ""));
	return RUN_ALL_TESTS();
}
