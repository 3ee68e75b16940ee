// SPDX-License-Identifier: MIT
//
// test_plugin_versions.cc - the NCCL plugin facing a version mismatch: a
// tb5 module of another ABI version (a fake module tree, and ioctl() below
// answering TB5_IOC_GET_VERSION), and a simulator fabric that a libtb5 of
// another version made. Each fails init with an NCCL error and one
// warning that names both versions and says it is a version mismatch, not
// a protocol break; with the versions matching, the same tree or fabric
// initialises. Every exported version of the plugin is driven.
#include <gtest/gtest.h>

#include <stdarg.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "fabric_file.hpp"
#include "fake_abi.h"
#include "plugin_api.hpp"
#include "tb5_uapi.h"

using namespace tb5plugintest;

namespace {

// 0: every ioctl goes to the kernel; else TB5_IOC_GET_VERSION says this
// ABI version, as tb5.ko 9.0.0 would.
std::atomic<uint32_t> fake_abi{0};

} // namespace

// The plugin's libtb5 calls ioctl() through its PLT: this definition, which
// the test exports (ENABLE_EXPORTS), wins.
extern "C" int ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	va_start(ap, req);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	return tb5_fake_abi_ioctl(fd, req, arg, fake_abi.load());
}

namespace {

class PluginVersions : public ::testing::TestWithParam<int> {
protected:
	void SetUp() override
	{
		char tmpl[] = "/tmp/tb5-plugin-versions-XXXXXX";
		ASSERT_TRUE(mkdtemp(tmpl));
		root = tmpl;
		setenv("TB5_LIVE_DIR", root.c_str(), 1);
		ClearLog();
	}
	void TearDown() override
	{
		fake_abi = 0;
		unsetenv("TB5_SIM");
		unsetenv("TB5_SYSFS_CLASS");
		unsetenv("TB5_DEV_DIR");
		std::string cmd = "rm -rf '" + root + "'";
		EXPECT_EQ(system(cmd.c_str()), 0);
	}
	// Loads the plugin and calls init: its result, and *ndev when it
	// succeeded (then finalized).
	ncclResult_t Init(int *ndev)
	{
		std::string why;
		auto lib = Library::Open(PluginPath(), &why);
		EXPECT_TRUE(lib) << why;
		if (!lib)
			return ncclInternalError;
		auto api = lib->Get(GetParam());
		EXPECT_TRUE(api);
		if (!api)
			return ncclInternalError;
		void *ctx = nullptr;
		ncclResult_t r = api->Init(&ctx);
		if (r == ncclSuccess) {
			EXPECT_EQ(api->Devices(ndev), ncclSuccess);
			EXPECT_EQ(api->Finalize(ctx), ncclSuccess);
		}
		return r;
	}
	// The lines logged that contain @what.
	static std::vector<std::string> Logged(const std::string &what)
	{
		std::vector<std::string> out;
		for (const std::string &l : LogLines())
			if (l.find(what) != std::string::npos)
				out.push_back(l);
		return out;
	}
	// No line reads as an attack.
	static void NoProtocolBreak()
	{
		for (const std::string &l : LogLines())
			EXPECT_EQ(l.find("broke the protocol"), std::string::npos) << l;
	}
	std::string root;
};

TEST_P(PluginVersions, AModuleOfAnotherAbiFailsInitSayingSo)
{
	// One kernel link, tb5_0, whose node is a plain file.
	mkdir((root + "/class").c_str(), 0755);
	mkdir((root + "/class/tb5_0").c_str(), 0755);
	mkdir((root + "/dev").c_str(), 0755);
	for (const auto &[attr, value] :
	     std::vector<std::pair<std::string, std::string>>{{"state", "ready"},
							     {"host_id", "0xabc0"},
							     {"peer_id", "0xabc1"},
							     {"ring_size", "1024"},
							     {"speed_mbps", "80000"}})
		std::ofstream(root + "/class/tb5_0/" + attr) << value << "\n";
	std::ofstream(root + "/dev/tb5_0") << "x";
	setenv("TB5_SYSFS_CLASS", (root + "/class").c_str(), 1);
	setenv("TB5_DEV_DIR", (root + "/dev").c_str(), 1);
	unsetenv("TB5_SIM");

	int ndev = -1;
	fake_abi = TB5_ABI_VERSION + 1;
	EXPECT_EQ(Init(&ndev), ncclSystemError);
	auto warn = Logged("version mismatch");
	ASSERT_EQ(warn.size(), 1u) << "one warning";
	EXPECT_NE(warn[0].find("opening link tb5_0"), std::string::npos) << warn[0];
	EXPECT_NE(warn[0].find("the tb5 module (9.0.0) speaks ABI version " +
			       std::to_string(TB5_ABI_VERSION + 1)),
		  std::string::npos) << warn[0];
	EXPECT_NE(warn[0].find("speaks ABI version " + std::to_string(TB5_ABI_VERSION) + ":"),
		  std::string::npos) << warn[0];
	EXPECT_NE(warn[0].find("install tb5-dkms and libtb5 of the same release"),
		  std::string::npos) << warn[0];
	EXPECT_NE(warn[0].find("offers NCCL no tb5 device"), std::string::npos) << warn[0];
	NoProtocolBreak();

	// The module's own ABI version: init lists the link (which this plain
	// file cannot serve: the connection that needs it will say so).
	ClearLog();
	fake_abi = TB5_ABI_VERSION;
	EXPECT_EQ(Init(&ndev), ncclSuccess);
	EXPECT_EQ(ndev, 1);
	EXPECT_TRUE(Logged("version mismatch").empty());
}

TEST_P(PluginVersions, AFabricOfAnotherVersionFailsInitSayingSo)
{
	using tb5::sim::FabricHeader;
	const std::string fabric = "tb5plgver-" + std::to_string(getpid()) + "-v" +
				   std::to_string(GetParam());
	const uint32_t other = tb5::sim::kFabricVersion + 1;
	FabricHeader *h = tb5test::make_fabric_file(fabric, other);
	ASSERT_NE(h, nullptr) << strerror(errno);
	munmap(h, sizeof(FabricHeader));
	setenv("TB5_SIM", fabric.c_str(), 1);

	int ndev = -1;
	EXPECT_EQ(Init(&ndev), ncclSystemError);
	auto warn = Logged("version mismatch");
	ASSERT_EQ(warn.size(), 1u) << "one warning";
	EXPECT_NE(warn[0].find("listing tb5 links"), std::string::npos) << warn[0];
	EXPECT_NE(warn[0].find("speaks fabric version " + std::to_string(other) +
			       ", this libtb5"),
		  std::string::npos) << warn[0];
	EXPECT_NE(warn[0].find("speaks fabric version " +
			       std::to_string(tb5::sim::kFabricVersion) + ":"),
		  std::string::npos) << warn[0];
	NoProtocolBreak();
	struct stat st = {};
	EXPECT_EQ(stat(("/dev/shm/tb5sim." + fabric).c_str(), &st), 0)
		<< "the refusal removed the other version's fabric";

	// The fabric gone, the same TB5_SIM makes one of this version.
	shm_unlink(("/tb5sim." + fabric).c_str());
	ClearLog();
	EXPECT_EQ(Init(&ndev), ncclSuccess);
	EXPECT_GE(ndev, 1);
	EXPECT_TRUE(Logged("version mismatch").empty());
}

std::string VersionName(const ::testing::TestParamInfo<int> &p)
{
	// (snprintf: gcc 12 at -O3 warns falsely about "v" + std::string.)
	char name[16];
	snprintf(name, sizeof(name), "v%d", p.param);
	return name;
}

INSTANTIATE_TEST_SUITE_P(Versions, PluginVersions, ::testing::Range(7, 13), VersionName);

} // namespace
