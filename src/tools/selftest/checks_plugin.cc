// SPDX-License-Identifier: MIT
//
// checks_plugin.cc - plugin: the NCCL network plugin (libnccl-net-tb5.so)
// loads, calls itself "TB5", initialises and reports its devices, as NCCL
// would see it, through the plugin ABI's own description
// (plugin/nccl_net_abi.h).
#include "checks.hpp"

#include <dlfcn.h>

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "nccl_net_abi.h"

namespace tb5selftest {
namespace {

const char kDefaultPlugin[] = "libnccl-net-tb5.so";

std::mutex log_mu;
std::vector<std::string> log_lines;

const char *level_name(int level)
{
	switch (level) {
	case 1:
		return "VERSION";
	case 2:
		return "WARN";
	case 3:
		return "INFO";
	case 4:
		return "ABORT";
	case 5:
		return "TRACE";
	}
	return "LOG";
}

__attribute__((format(printf, 5, 6)))
void collect_log(ncclDebugLogLevel level, unsigned long flags, const char *file, int line, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	(void)flags;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	std::lock_guard<std::mutex> lock(log_mu);
	log_lines.push_back(format("%s %s:%d %s", level_name(level), file ? file : "?", line, buf));
}

ncclResult_t no_profiler(void **handle, int type, void *parent, int64_t plugin_id, void *data)
{
	(void)type;
	(void)parent;
	(void)plugin_id;
	(void)data;
	if (handle)
		*handle = nullptr;
	return ncclSuccess;
}

std::string log_tail(size_t max)
{
	std::lock_guard<std::mutex> lock(log_mu);
	std::string s;
	const size_t from = log_lines.size() > max ? log_lines.size() - max : 0;

	for (size_t i = from; i < log_lines.size(); i++)
		s += (s.empty() ? "" : " | ") + log_lines[i];
	return s;
}

} // namespace

void run_plugin_check(const Options &opt, Report &report)
{
	const std::string path = opt.plugin.empty() ? kDefaultPlugin : opt.plugin;

	dlerror();
	void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
	if (!handle) {
		const char *e = dlerror();
		const std::string why = e ? e : "unknown error";
		if (opt.plugin.empty() && why.find("No such file") != std::string::npos)
			report.add(skip("plugin", "", "NCCL plugin not installed (tb5-nccl-plugin)"));
		else
			report.add(fail("plugin", "cannot load " + path + ": " + why,
					"install tb5-nccl-plugin of the same release as libtb5"));
		return;
	}
	// The plugin is never unloaded: it may have started threads.
	int version = 0;
	void *sym = nullptr;
	std::string exported;
	for (int v = 12; v >= 7; v--) {
		void *s = dlsym(handle, format("ncclNetPlugin_v%d", v).c_str());
		if (!s)
			continue;
		exported += (exported.empty() ? "v" : ", v") + std::to_string(v);
		if (!sym || version > 10) {	// prefer the newest of v7..v10
			sym = s;
			version = v;
		}
	}
	if (!sym) {
		report.add(fail("plugin", path + " exports no ncclNetPlugin_v7 .. _v12",
				"this is not an NCCL network plugin: reinstall tb5-nccl-plugin"));
		return;
	}
	const char *name = *static_cast<const char *const *>(sym);
	if (!name || strcmp(name, "TB5")) {
		report.add(fail("plugin", path + format(": ncclNetPlugin_v%d is named \"%s\", not \"TB5\"",
							version, name ? name : "(null)"),
				"another plugin is installed under tb5's name: reinstall tb5-nccl-plugin"));
		return;
	}
	Result r;
	if (version > 10) {
		r = pass("plugin", path + " loads, name TB5, exports " + exported +
			 " (devices not queried: only v11+ exported)");
	} else {
		const char *call = "init";
		ncclResult_t res;
		int ndev = -1;
		if (version == 10) {
			const auto *net = static_cast<const ncclNet_v10_t *>(sym);
			res = net->init(collect_log, no_profiler);
			if (!res) {
				call = "devices";
				res = net->devices(&ndev);
			}
		} else {
			// v7 .. v9 begin alike: name, init(logger), devices.
			const auto *net = static_cast<const ncclNet_v7_t *>(sym);
			res = net->init(collect_log);
			if (!res) {
				call = "devices";
				res = net->devices(&ndev);
			}
		}
		const std::string what = path + format(" (ncclNetPlugin_v%d; exports ", version) + exported + ")";
		if (res)
			r = fail("plugin", what + format(": %s() returned ncclResult %d", call, res) +
				 (log_tail(5).empty() ? "" : ": " + log_tail(5)),
				 "read the plugin's log (--verbose); the link checks above say whether tb5 has a usable link");
		else if (ndev < 1)
			r = fail("plugin", what + format(": %d devices", ndev),
				 "the plugin sees no usable link: see the link checks above");
		else
			r = pass("plugin", what + format(": %d device%s", ndev, ndev == 1 ? "" : "s"));
		r.data["devices"] = ndev;
	}
	r.data["path"] = path;
	r.data["net_version"] = version;
	std::lock_guard<std::mutex> lock(log_mu);
	r.log = log_lines;
	report.add(std::move(r));
}

} // namespace tb5selftest
