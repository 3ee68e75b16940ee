// SPDX-License-Identifier: MIT
//
// plugin_api.cc - see plugin_api.hpp.
#include "plugin_api.hpp"

#include <algorithm>
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <tuple>
#include <type_traits>

#include <dlfcn.h>

namespace tb5plugintest {

namespace {

std::mutex g_log_mu;
std::vector<std::string> g_log;

__attribute__((format(printf, 5, 6))) void Logger(ncclDebugLogLevel level,
						  unsigned long flags,
						  const char *file, int line,
						  const char *fmt, ...)
{
	(void)flags;
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	std::lock_guard lk(g_log_mu);
	g_log.push_back(buf);
	if (std::getenv("TB5_PLUGIN_TEST_LOG"))
		fprintf(stderr, "[plugin %d %s:%d] %s\n", (int)level, file, line, buf);
}

template <int V> struct Types;
template <> struct Types<7> { using Net = ncclNet_v7_t; using P = ncclNetProperties_v7_t; };
template <> struct Types<8> { using Net = ncclNet_v8_t; using P = ncclNetProperties_v8_t; };
template <> struct Types<9> { using Net = ncclNet_v9_t; using P = ncclNetProperties_v9_t; };
template <> struct Types<10> { using Net = ncclNet_v10_t; using P = ncclNetProperties_v10_t; };
template <> struct Types<11> { using Net = ncclNet_v11_t; using P = ncclNetProperties_v11_t; };
template <> struct Types<12> { using Net = ncclNet_v12_t; using P = ncclNetProperties_v12_t; };

// The argument types of a function pointer type.
template <typename F> struct FnArgs;
template <typename R, typename... A> struct FnArgs<R (*)(A...)> {
	using type = std::tuple<A...>;
};

template <int V> class ApiV final : public Api {
	using Net = typename Types<V>::Net;
	const Net *t_;
	ncclNetDeviceHandle_v7_t *devh_ = nullptr;

public:
	explicit ApiV(const void *table) : t_(static_cast<const Net *>(table))
	{
		version_ = V;
		table_ = table;
	}
	std::string Name() override { return t_->name ? t_->name : ""; }

	ncclResult_t Init(void **ctx) override
	{
		if constexpr (V >= 11) {
			ncclNetCommConfig_v11_t cfg{-1};
			return t_->init(ctx, 0x1234, &cfg, Logger, nullptr);
		} else if constexpr (V == 10) {
			*ctx = nullptr;
			return t_->init(Logger, nullptr);
		} else {
			*ctx = nullptr;
			return t_->init(Logger);
		}
	}
	ncclResult_t Finalize(void *ctx) override
	{
		if constexpr (V >= 11) {
			return t_->finalize(ctx);
		} else {
			(void)ctx;
			return ncclSuccess;
		}
	}
	ncclResult_t Devices(int *n) override { return t_->devices(n); }
	ncclResult_t GetProps(int dev, Props *out) override
	{
		typename Types<V>::P p{};
		ncclResult_t r = t_->getProperties(dev, &p);
		if (r != ncclSuccess)
			return r;
		out->name = p.name ? p.name : "";
		out->pci_path = p.pciPath ? p.pciPath : "";
		out->guid = p.guid;
		out->ptr_support = p.ptrSupport;
		out->speed = p.speed;
		out->max_comms = p.maxComms;
		out->max_recvs = p.maxRecvs;
		if constexpr (V >= 9) {
			out->vdevs = p.vProps.ndevs;
			out->vdev_list.assign(p.vProps.devs,
					      p.vProps.devs + std::max(0, std::min(p.vProps.ndevs,
										  (int)(sizeof(p.vProps.devs) /
											sizeof(int)))));
			out->max_p2p = p.maxP2pBytes;
		}
		return r;
	}
	bool HasMakeVDevice() override
	{
		if constexpr (V >= 9)
			return t_->makeVDevice != nullptr;
		else
			return false;
	}
	ncclResult_t MakeVDevice(int *d, const std::vector<int> &devs) override
	{
		if constexpr (V >= 9) {
			if (!t_->makeVDevice)
				return ncclInternalError;
			using VP = std::remove_pointer_t<std::tuple_element_t<
				1, typename FnArgs<decltype(t_->makeVDevice)>::type>>;
			VP vp{};
			vp.ndevs = (int)devs.size();
			for (size_t i = 0; i < devs.size() && i < sizeof(vp.devs) / sizeof(int); i++)
				vp.devs[i] = devs[i];
			return t_->makeVDevice(d, &vp);
		} else {
			(void)d;
			(void)devs;
			return ncclInternalError;
		}
	}
	ncclResult_t Listen(void *ctx, int dev, void *handle, void **lc) override
	{
		if constexpr (V >= 11) {
			return t_->listen(ctx, dev, handle, lc);
		} else {
			(void)ctx;
			return t_->listen(dev, handle, lc);
		}
	}
	ncclResult_t Connect(void *ctx, int dev, void *handle, void **sc) override
	{
		if constexpr (V >= 11) {
			return t_->connect(ctx, dev, handle, sc, &devh_);
		} else if constexpr (V == 10) {
			ncclNetCommConfig_v10_t cfg{-1};
			(void)ctx;
			return t_->connect(dev, &cfg, handle, sc, &devh_);
		} else {
			(void)ctx;
			return t_->connect(dev, handle, sc, &devh_);
		}
	}
	ncclResult_t Accept(void *lc, void **rc) override { return t_->accept(lc, rc, &devh_); }
	ncclResult_t RegMr(void *comm, void *data, size_t size, void **mh) override
	{
		return RegMrType(comm, data, size, NCCL_PTR_HOST, mh);
	}
	ncclResult_t RegMrType(void *comm, void *data, size_t size, int type,
			       void **mh) override
	{
		if constexpr (V == 7)
			return t_->regMr(comm, data, (int)size, type, mh);
		else
			return t_->regMr(comm, data, size, type, mh);
	}
	ncclResult_t RegMrDmaBuf(void *comm, void *data, size_t size, int type, uint64_t offset,
				 int fd, void **mh) override
	{
		return t_->regMrDmaBuf(comm, data, size, type, offset, fd, mh);
	}
	ncclResult_t DeregMr(void *comm, void *mh) override { return t_->deregMr(comm, mh); }
	ncclResult_t Isend(void *sc, void *data, size_t size, int tag, void *mh,
			   void **req) override
	{
		if constexpr (V >= 10)
			return t_->isend(sc, data, size, tag, mh, nullptr, req);
		else if constexpr (V == 9)
			return t_->isend(sc, data, size, tag, mh, req);
		else
			return t_->isend(sc, data, (int)size, tag, mh, req);
	}
	ncclResult_t Irecv(void *rc, int n, void **data, const size_t *sizes, const int *tags,
			   void **mhs, void **req) override
	{
		int tg[8];
		for (int i = 0; i < n && i < 8; i++)
			tg[i] = tags[i];
		if constexpr (V >= 9) {
			size_t sz[8];
			for (int i = 0; i < n && i < 8; i++)
				sz[i] = sizes[i];
			if constexpr (V >= 10)
				return t_->irecv(rc, n, data, sz, tg, mhs, nullptr, req);
			else
				return t_->irecv(rc, n, data, sz, tg, mhs, req);
		} else {
			int sz[8];
			for (int i = 0; i < n && i < 8; i++)
				sz[i] = (int)sizes[i];
			return t_->irecv(rc, n, data, sz, tg, mhs, req);
		}
	}
	ncclResult_t Iflush(void *rc, void *data, int size, void *mh, void **req) override
	{
		return t_->iflush(rc, 1, &data, &size, &mh, req);
	}
	ncclResult_t Test(void *req, int *done, int *sizes) override
	{
		return t_->test(req, done, sizes);
	}
	ncclResult_t CloseSend(void *sc) override { return t_->closeSend(sc); }
	ncclResult_t CloseRecv(void *rc) override { return t_->closeRecv(rc); }
	ncclResult_t CloseListen(void *lc) override { return t_->closeListen(lc); }
};

} // namespace

std::unique_ptr<Library> Library::Open(const std::string &path, std::string *why)
{
	dlerror();
	void *so = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
	if (!so) {
		if (why)
			*why = dlerror();
		return nullptr;
	}
	auto lib = std::unique_ptr<Library>(new Library());
	lib->so_ = so;
	return lib;
}

Library::~Library()
{
	if (so_)
		dlclose(so_);
}

std::unique_ptr<Api> Library::Get(int v)
{
	const void *t = dlsym(so_, ("ncclNetPlugin_v" + std::to_string(v)).c_str());
	if (!t)
		return nullptr;
	switch (v) {
	case 7: return std::make_unique<ApiV<7>>(t);
	case 8: return std::make_unique<ApiV<8>>(t);
	case 9: return std::make_unique<ApiV<9>>(t);
	case 10: return std::make_unique<ApiV<10>>(t);
	case 11: return std::make_unique<ApiV<11>>(t);
	case 12: return std::make_unique<ApiV<12>>(t);
	default: return nullptr;
	}
}

std::string PluginPath()
{
	const char *p = std::getenv("TB5_PLUGIN_PATH");
	return p && *p ? p : TB5_PLUGIN_BUILD_PATH;
}

std::vector<std::string> LogLines()
{
	std::lock_guard lk(g_log_mu);
	return g_log;
}

void ClearLog()
{
	std::lock_guard lk(g_log_mu);
	g_log.clear();
}

} // namespace tb5plugintest
