// SPDX-License-Identifier: MIT
//
// test_kernel_backend.cc - the kernel backend without a kernel module: a
// fake /sys/class/tb5 and /dev (TB5_SYSFS_CLASS, TB5_DEV_DIR), and an
// ioctl() that answers TB5_IOC_GET_VERSION with another ABI version.
// What needs the module itself runs in the VM (tests/kernel).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "tb5/tb5.h"
#include "tb5_uapi.h"

namespace {

// 0: pass every ioctl through; else the ABI version to claim.
std::atomic<uint32_t> fake_abi{ 0 };

} // namespace

// libtb5 calls ioctl() through the PLT: this definition wins.
extern "C" int ioctl(int fd, unsigned long req, ...)
{
	va_list ap;

	va_start(ap, req);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	if (req == TB5_IOC_GET_VERSION && fake_abi.load()) {
		auto *v = static_cast<struct tb5_version *>(arg);

		memset(v, 0, sizeof(*v));
		v->abi_version = fake_abi.load();
		v->module_major = 9;
		return 0;
	}
	return int(syscall(SYS_ioctl, fd, req, arg));
}

namespace {

class KernelBackend : public ::testing::Test {
protected:
	void SetUp() override
	{
		char tmpl[] = "/tmp/tb5-kb-XXXXXX";

		ASSERT_TRUE(mkdtemp(tmpl));
		root = tmpl;
		mkdir((root + "/class").c_str(), 0755);
		mkdir((root + "/dev").c_str(), 0755);
		setenv("TB5_SYSFS_CLASS", (root + "/class").c_str(), 1);
		setenv("TB5_DEV_DIR", (root + "/dev").c_str(), 1);
		unsetenv("TB5_SIM");
	}
	void TearDown() override
	{
		fake_abi = 0;
		std::string cmd = "rm -rf '" + root + "'";
		EXPECT_EQ(system(cmd.c_str()), 0);
	}
	void attr(const std::string &link, const std::string &name,
		  const std::string &value)
	{
		mkdir((root + "/class/" + link).c_str(), 0755);
		std::ofstream(root + "/class/" + link + "/" + name) << value << "\n";
	}
	void link(const std::string &name, const std::string &state, bool loop)
	{
		attr(name, "state", state);
		attr(name, "host_id", "0xabc0");
		attr(name, "peer_id", state == "ready" ? "0xabc1" : "none");
		attr(name, "ring_size", "1024");
		attr(name, "speed_mbps", "80000");
		if (loop)
			attr(name, "plugged", "1");
	}
	std::string root;
};

TEST_F(KernelBackend, NoModuleMeansNoLinks)
{
	tb5_link_info *l = reinterpret_cast<tb5_link_info *>(1);
	size_t n = 7;

	setenv("TB5_SYSFS_CLASS", (root + "/absent").c_str(), 1);
	ASSERT_EQ(tb5_list_links(&l, &n), 0);
	EXPECT_EQ(n, 0u);
	EXPECT_EQ(l, nullptr);
}

TEST_F(KernelBackend, ListsLinksFromSysfsInOrder)
{
	link("tb5_10", "down", false);
	link("tb5_2", "ready", true);
	link("tb5_0", "up", false);
	mkdir((root + "/class/not_a_link").c_str(), 0755);
	mkdir((root + "/class/tb5_01").c_str(), 0755);
	tb5_link_info *l = nullptr;
	size_t n = 0;

	ASSERT_EQ(tb5_list_links(&l, &n), 0);
	ASSERT_EQ(n, 3u);
	EXPECT_STREQ(l[0].name, "tb5_0");
	EXPECT_STREQ(l[1].name, "tb5_2");
	EXPECT_STREQ(l[2].name, "tb5_10");
	EXPECT_EQ(l[0].state, uint32_t(TB5_LINK_STATE_UP));
	EXPECT_EQ(l[0].peer_host, 0u) << "no peer until READY";
	EXPECT_EQ(l[1].state, uint32_t(TB5_LINK_STATE_READY));
	EXPECT_EQ(l[1].local_host, 0xabc0u);
	EXPECT_EQ(l[1].peer_host, 0xabc1u);
	EXPECT_EQ(l[1].ring_size, 1024u);
	EXPECT_EQ(l[1].speed_mbps, 80000u);
	EXPECT_EQ(l[1].index, 2u);
	EXPECT_EQ(l[1].backend, uint32_t(TB5_BACKEND_KERNEL));
	EXPECT_TRUE(l[1].caps & TB5_CAP_LOOP);
	EXPECT_FALSE(l[0].caps & TB5_CAP_LOOP);
	EXPECT_TRUE(l[0].caps & TB5_CAP_DMABUF);
	tb5_free_link_list(l);
}

TEST_F(KernelBackend, OpenExplainsAMissingNode)
{
	tb5_device *d = nullptr;

	EXPECT_EQ(tb5_open("tb5_0", &d), -ENODEV);
	EXPECT_NE(strstr(tb5_last_error(), "modprobe tb5"), nullptr) << tb5_last_error();
	EXPECT_EQ(tb5_open("../etc/passwd", &d), -ENODEV);
	EXPECT_EQ(tb5_open("tb5_x", &d), -ENODEV);
	EXPECT_EQ(d, nullptr);
}

TEST_F(KernelBackend, AFileThatIsNotTheDeviceIsRefused)
{
	tb5_device *d = nullptr;

	std::ofstream(root + "/dev/tb5_0") << "x";
	EXPECT_EQ(tb5_open("tb5_0", &d), -ENOTTY);
	EXPECT_NE(strstr(tb5_last_error(), "not a tb5 device"), nullptr)
		<< tb5_last_error();
}

TEST_F(KernelBackend, AnotherAbiVersionIsAClearError)
{
	tb5_device *d = nullptr;

	std::ofstream(root + "/dev/tb5_0") << "x";
	fake_abi = TB5_ABI_VERSION + 1;
	EXPECT_EQ(tb5_open("tb5_0", &d), -EPROTO);
	EXPECT_EQ(d, nullptr);
	const std::string msg = tb5_last_error();
	EXPECT_NE(msg.find("ABI version " + std::to_string(TB5_ABI_VERSION + 1)),
		  std::string::npos) << msg;
	EXPECT_NE(msg.find("install"), std::string::npos) << msg;
	// An ABI mismatch says so in tb5_last_error(); -EPROTO's string is
	// about a peer that broke the protocol, not about versions.
	EXPECT_EQ(std::string(tb5_strerror(-EPROTO)).find("ABI"), std::string::npos);
}

TEST_F(KernelBackend, PermissionProblemsSayWhatToDo)
{
	if (geteuid() == 0)
		GTEST_SKIP() << "root opens anything";
	tb5_device *d = nullptr;

	std::ofstream(root + "/dev/tb5_0") << "x";
	chmod((root + "/dev/tb5_0").c_str(), 0);
	EXPECT_EQ(tb5_open("tb5_0", &d), -EACCES);
	EXPECT_NE(strstr(tb5_last_error(), "group"), nullptr) << tb5_last_error();
}

TEST(Library, VersionAndErrorStrings)
{
	EXPECT_STREQ(tb5_version(), TB5_TEST_VERSION);
	EXPECT_STREQ(tb5_strerror(0), "success");
	EXPECT_STREQ(tb5_strerror(-ENOMEM), "Cannot allocate memory");
	EXPECT_STREQ(tb5_strerror(5), "not an error code");
}

} // namespace
