// SPDX-License-Identifier: MIT
//
// checks_gpu.cc - gpu:<name>, one line per link: can GPU memory be
// registered on it (what NCCL's GPUDirect path needs), and if not, why not.
//
//   kernel     the module imports dma-bufs (TB5_CAP_DMABUF), and CUDA is
//              here with a device that exports them
//              (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED)
//   simulator  the link reports TB5_CAP_GPU_MEM: the process has a DMA
//              engine (TB5_SIM dma=, CUDA loaded at run time); without one
//              libtb5's refusal says why (no libcuda, cuInit's error,
//              dma=off)
//
// GPU memory is optional: what it lacks is a SKIP with the reason, never a
// FAIL. CUDA is loaded at run time here too (no build dependency).
#include "checks.hpp"
#include "links.hpp"

#include "tb5/tb5.h"

#include <dlfcn.h>

#include <cerrno>
#include <string>
#include <vector>

namespace tb5selftest {
namespace {

constexpr int kDmaBufSupported = 124;	// CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED

// What CUDA says on this host: usable (at least one device that exports
// dma-bufs) and a sentence ("CUDA 12.8, 2 devices, 2 export dma-bufs";
// "libcuda.so.1 not found").
struct CudaState {
	bool dmabuf = false;
	std::string what;
};

CudaState probe_cuda()
{
	using Fn0 = int (*)(unsigned);
	using FnCount = int (*)(int *);
	using FnGet = int (*)(int *, int);
	using FnAttr = int (*)(int *, int, int);
	CudaState s;
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	int n = 0, version = 0, exporting = 0;

	if (!lib) {
		const char *e = dlerror();
		s.what = std::string("libcuda.so.1 not found (") + (e ? e : "?") + ")";
		return s;
	}
	auto init = reinterpret_cast<Fn0>(dlsym(lib, "cuInit"));
	auto count = reinterpret_cast<FnCount>(dlsym(lib, "cuDeviceGetCount"));
	auto get = reinterpret_cast<FnGet>(dlsym(lib, "cuDeviceGet"));
	auto attr = reinterpret_cast<FnAttr>(dlsym(lib, "cuDeviceGetAttribute"));
	auto driver = reinterpret_cast<FnCount>(dlsym(lib, "cuDriverGetVersion"));
	int r;

	if (!init || !count || !get || !attr || !driver) {
		s.what = "libcuda.so.1 lacks the driver API's basic entry points";
		return s;
	}
	if ((r = init(0))) {
		s.what = format("cuInit failed (CUDA error %d)", r);
		return s;
	}
	driver(&version);
	if (count(&n) || n < 1) {
		s.what = format("CUDA %d.%d sees no device", version / 1000, version % 1000 / 10);
		return s;
	}
	for (int i = 0; i < n; i++) {
		int dev = 0, yes = 0;

		if (!get(&dev, i) && !attr(&yes, kDmaBufSupported, dev) && yes)
			exporting++;
	}
	s.dmabuf = exporting > 0;
	s.what = format("CUDA %d.%d, %d device(s), %d of them export dma-bufs", version / 1000,
			version % 1000 / 10, n, exporting);
	return s;
}

// Why libtb5 refuses GPU memory on simulator link @name: its message for a
// registration attempt.
std::string sim_refusal(const char *name)
{
	tb5_device *dev = nullptr;
	tb5_mr *mr = nullptr;
	int probe = 0;
	int ret = tb5_open(name, &dev);
	std::string why;

	if (ret)
		return std::string("the link does not open: ") + tb5_last_error();
	ret = tb5_reg_gpu(dev, &probe, sizeof(probe), -1, 0, &mr);
	why = ret == -EOPNOTSUPP ? tb5_last_error() : "the link reports no TB5_CAP_GPU_MEM";
	if (!ret)
		tb5_dereg(mr);
	tb5_close(dev);
	return why;
}

// The simulator's DMA engine as TB5_SIM @sim names it (dma=, default cuda).
std::string sim_engine(const std::string &sim, const CudaState &cuda)
{
	const size_t at = sim.find("dma=");
	const std::string dma = at == std::string::npos ? "cuda" :
		sim.substr(at + 4, sim.find(',', at) == std::string::npos ?
				   std::string::npos : sim.find(',', at) - at - 4);

	if (dma == "cuda")
		return "the GPUs' copy engines (dma=cuda; " + cuda.what + ")";
	if (dma == "standin")
		return "the stand-in DMA engine (dma=standin, a test device without a GPU)";
	return "dma=" + dma;
}

Result check_gpu(const Environment &env, const tb5_link_info &l, const CudaState &cuda)
{
	const std::string name = std::string("gpu:") + l.name;
	Result r;

	if (l.backend == TB5_BACKEND_SIM) {
		if (l.caps & TB5_CAP_GPU_MEM)
			r = pass(name, "GPU memory can be registered: the simulator's DMA "
				       "engine carries it, " + sim_engine(env.sim, cuda));
		else
			r = skip(name, "", "GPU memory cannot be registered: " + sim_refusal(l.name));
	} else if (!(l.caps & TB5_CAP_DMABUF)) {
		r = skip(name, "", "GPU memory cannot be registered: the module does not import "
				   "dma-bufs (no TB5_CAP_DMABUF)");
	} else if (!cuda.dmabuf) {
		r = skip(name, "the module imports dma-bufs",
			 "no GPU memory to register: " + cuda.what);
	} else {
		r = pass(name, "GPU memory can be registered: the module imports dma-bufs, " +
				       cuda.what);
	}
	r.data["gpu_mem"] = (l.caps & TB5_CAP_GPU_MEM) != 0;
	r.data["dmabuf"] = (l.caps & TB5_CAP_DMABUF) != 0;
	r.data["cuda"] = cuda.what;
	return r;
}

} // namespace

void run_gpu_checks(const Environment &env, const Options &opt, Report &report)
{
	std::vector<tb5_link_info> links;

	if (env.sim.empty() && !env.module_loaded)
		return;		// the links check said so
	if (tb5::tools::list_links(&links) || links.empty())
		return;		// ditto
	const CudaState cuda = probe_cuda();

	for (const tb5_link_info &l : links)
		if (opt.link.empty() || opt.link == l.name)
			report.add(check_gpu(env, l, cuda));
}

} // namespace tb5selftest
