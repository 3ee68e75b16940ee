// SPDX-License-Identifier: MIT
//
// test_memory.cc - tb5-perf's buffers of --memory udmabuf: where they
// cannot be had (no /dev/udmabuf, a simulator link, a module without
// dma-buf import) a Region or a Udmabuf fails with a message that says
// why, and leaves no fd and no registration behind; where /dev/udmabuf
// exists, a Udmabuf is whole pages, writable, and outlives its fd.
#include <gtest/gtest.h>

#include <dirent.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "device.hpp"
#include "errors.hpp"
#include "udmabuf.hpp"

namespace {

using tb5perf::check_memory;
using tb5perf::Error;
using tb5perf::Memory;

constexpr char kNeedsModule[] = "--memory udmabuf needs the tb5 kernel module";
constexpr char kNoDevice[] =
	"--memory udmabuf: /dev/udmabuf does not exist: the kernel needs "
	"CONFIG_UDMABUF";
constexpr char kNotBuilt[] =
	"--memory udmabuf: this tb5-perf was built without udmabuf support";

bool HaveDevice()
{
	return access("/dev/udmabuf", F_OK) == 0;
}

// What a udmabuf fails with on this machine, or nullptr where it works.
const char *WhyNoUdmabuf()
{
	if (!tb5perf::udmabuf_built())
		return kNotBuilt;
	return HaveDevice() ? nullptr : kNoDevice;
}

int OpenFds()
{
	int n = 0;
	DIR *d = opendir("/proc/self/fd");

	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

// The message of the Error that @fn throws ("" if none).
template <typename Fn>
std::string ErrorOf(Fn fn)
{
	try {
		fn();
	} catch (const Error &e) {
		return e.what();
	}
	return "";
}

tb5_link_info KernelLink(uint32_t caps)
{
	tb5_link_info l = {};

	strcpy(l.name, "tb5_0");
	l.backend = TB5_BACKEND_KERNEL;
	l.caps = caps;
	return l;
}

TEST(Memory, HostNeedsNothing)
{
	tb5_link_info sim = {};
	sim.backend = TB5_BACKEND_SIM;

	EXPECT_NO_THROW(check_memory(Memory::kHost, nullptr));
	EXPECT_NO_THROW(check_memory(Memory::kHost, &sim));
}

TEST(Memory, UdmabufNeedsTheKernelModule)
{
	tb5_link_info sim = {};
	strcpy(sim.name, "sim_l0a");
	sim.backend = TB5_BACKEND_SIM;
	sim.caps = TB5_CAP_HOST_MEM | TB5_CAP_LOOP;

	std::string err = ErrorOf([&] { check_memory(Memory::kUdmabuf, &sim); });
	EXPECT_NE(err.find(kNeedsModule), std::string::npos) << err;
	EXPECT_NE(err.find("sim_l0a is a simulator link"), std::string::npos)
		<< err;

	const tb5_link_info old = KernelLink(TB5_CAP_HOST_MEM);
	err = ErrorOf([&] { check_memory(Memory::kUdmabuf, &old); });
	EXPECT_NE(err.find(kNeedsModule), std::string::npos) << err;
	EXPECT_NE(err.find("TB5_CAP_DMABUF"), std::string::npos) << err;
}

TEST(Memory, UdmabufNeedsTheDevice)
{
	const tb5_link_info link =
		KernelLink(TB5_CAP_HOST_MEM | TB5_CAP_DMABUF);
	const char *why = WhyNoUdmabuf();

	// The server asks without a link first.
	for (const tb5_link_info *l : {&link, (const tb5_link_info *)nullptr}) {
		const std::string err =
			ErrorOf([&] { check_memory(Memory::kUdmabuf, l); });
		if (why) {
			EXPECT_NE(err.find(why), std::string::npos) << err;
		} else if (access("/dev/udmabuf", R_OK | W_OK) == 0) {
			EXPECT_EQ(err, "");
		}
	}
}

TEST(Udmabuf, FailsCleanlyWithoutTheDevice)
{
	const char *why = WhyNoUdmabuf();

	if (!why)
		GTEST_SKIP() << "/dev/udmabuf exists here";
	const int fds = OpenFds();
	const std::string err = ErrorOf([] { tb5perf::Udmabuf buf(1 << 20); });
	EXPECT_NE(err.find(why), std::string::npos) << err;
	EXPECT_EQ(OpenFds(), fds);
}

TEST(Udmabuf, MapsWholePagesThatOutliveTheFd)
{
	if (WhyNoUdmabuf() || access("/dev/udmabuf", R_OK | W_OK))
		GTEST_SKIP() << "no usable /dev/udmabuf here";
	const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
	const int fds = OpenFds();
	{
		tb5perf::Udmabuf buf(page + 1);
		EXPECT_EQ(buf.size(), 2 * page);
		ASSERT_GE(buf.fd(), 0);
		EXPECT_EQ(buf.data()[0], 0);
		buf.close_fd();
		EXPECT_EQ(buf.fd(), -1);
		memset(buf.data(), 0xa5, buf.size());
		EXPECT_EQ(buf.data()[buf.size() - 1], 0xa5);
	}
	EXPECT_EQ(OpenFds(), fds);
}

// A Region on a simulator link: udmabuf fails with the reason and leaves
// the device as it was; host memory registers as before.
class SimRegion : public ::testing::Test {
protected:
	static void SetUpTestSuite()
	{
		const std::string spec = "tb5perf-unit-" +
					 std::to_string(getpid()) +
					 ":hosts=1,loop=1";
		setenv("TB5_SIM", spec.c_str(), 1);
	}
};

TEST_F(SimRegion, UdmabufSaysItNeedsTheModule)
{
	tb5perf::Device dev("sim_l0a");
	const int fds = OpenFds();

	const std::string err = ErrorOf(
		[&] { tb5perf::Region r(dev, 1 << 20, Memory::kUdmabuf); });
	EXPECT_NE(err.find(kNeedsModule), std::string::npos) << err;
	EXPECT_EQ(OpenFds(), fds);

	tb5perf::Region host(dev, 1 << 20, Memory::kHost);
	ASSERT_NE(host.mr(), nullptr);
	EXPECT_EQ(host.size(), 1u << 20);
	host.data()[host.size() - 1] = 1;
}

} // namespace
