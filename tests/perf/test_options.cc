// SPDX-License-Identifier: MIT
//
// test_options.cc - tb5-perf's command line: --memory takes host or
// udmabuf (host by default), refuses anything else and udmabuf with --sim
// as bad usage, each with a message that says why; --plot takes FILE.svg
// or FILE.png, and only where a client draws its results.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "errors.hpp"
#include "options.hpp"

namespace {

using tb5perf::Memory;
using tb5perf::Options;

struct Parsed {
	int status;
	std::string out, err;	// what it printed
	Options opt;
};

Parsed Parse(std::vector<std::string> args)
{
	Parsed p;
	std::vector<char *> argv;

	args.insert(args.begin(), "tb5-perf");
	for (std::string &a : args)
		argv.push_back(a.data());
	argv.push_back(nullptr);
	testing::internal::CaptureStdout();
	testing::internal::CaptureStderr();
	p.status = tb5perf::parse_options(static_cast<int>(args.size()),
					 argv.data(), p.opt);
	p.err = testing::internal::GetCapturedStderr();
	p.out = testing::internal::GetCapturedStdout();
	return p;
}

TEST(MemoryOption, HostByDefault)
{
	const Parsed p = Parse({"--sim"});

	ASSERT_EQ(p.status, -1) << p.err;
	EXPECT_EQ(p.opt.memory, Memory::kHost);
}

TEST(MemoryOption, AcceptsHostAndUdmabuf)
{
	for (const char *mode : {"--loop", "--server"}) {
		Parsed p = Parse({mode, "--memory", "host"});
		ASSERT_EQ(p.status, -1) << mode << ": " << p.err;
		EXPECT_EQ(p.opt.memory, Memory::kHost) << mode;

		p = Parse({mode, "--memory", "udmabuf"});
		ASSERT_EQ(p.status, -1) << mode << ": " << p.err;
		EXPECT_EQ(p.opt.memory, Memory::kUdmabuf) << mode;
	}
	const Parsed p =
		Parse({"--client", "--link", "tb5_0", "--memory=udmabuf"});
	ASSERT_EQ(p.status, -1) << p.err;
	EXPECT_EQ(p.opt.memory, Memory::kUdmabuf);
}

TEST(MemoryOption, RefusesOtherKinds)
{
	for (const char *kind : {"dram", "", "Host", "udmabuf,host"}) {
		const Parsed p = Parse({"--loop", "--memory", kind});
		EXPECT_EQ(p.status, tb5perf::kExitUsage) << '"' << kind << '"';
		const std::string want = std::string("--memory: unknown "
						     "memory \"") +
					 kind + "\" (host, udmabuf)";
		EXPECT_NE(p.err.find(want), std::string::npos) << p.err;
	}
}

TEST(MemoryOption, NeedsAValue)
{
	const Parsed p = Parse({"--loop", "--memory"});

	EXPECT_EQ(p.status, tb5perf::kExitUsage);
	EXPECT_NE(p.err.find("--memory"), std::string::npos) << p.err;
}

TEST(MemoryOption, UdmabufIsNotForTheSimulator)
{
	for (auto args : {std::vector<std::string>{"--sim"},
			  std::vector<std::string>{"--sim", "--loop"}}) {
		args.insert(args.end(), {"--memory", "udmabuf"});
		const Parsed p = Parse(args);
		EXPECT_EQ(p.status, tb5perf::kExitUsage);
		EXPECT_NE(p.err.find("--memory udmabuf needs the tb5 kernel "
				     "module"),
			  std::string::npos)
			<< p.err;
	}
}

TEST(MemoryOption, InTheHelp)
{
	const Parsed p = Parse({"--help"});

	EXPECT_EQ(p.status, 0);
	EXPECT_NE(p.out.find("--memory"), std::string::npos) << p.out;
	EXPECT_NE(p.out.find("udmabuf"), std::string::npos) << p.out;
}

TEST(PlotOption, FormatFromTheExtension)
{
	Parsed p = Parse({"--sim", "--plot", "out.svg"});
	ASSERT_EQ(p.status, -1) << p.err;
	EXPECT_EQ(p.opt.plot, "out.svg");
	EXPECT_EQ(p.opt.plot_format, tb5perf::PlotFormat::kSvg);

	p = Parse({"--loop", "--plot", "dir/Out.PNG"});
	ASSERT_EQ(p.status, -1) << p.err;
	EXPECT_EQ(p.opt.plot_format, tb5perf::PlotFormat::kPng);

	p = Parse({"--sim"});
	ASSERT_EQ(p.status, -1) << p.err;
	EXPECT_TRUE(p.opt.plot.empty());
}

TEST(PlotOption, OtherFormatsAreBadUsage)
{
	for (const char *file : {"out.pdf", "out", "out.svgz"}) {
		const Parsed p = Parse({"--sim", "--plot", file});
		EXPECT_EQ(p.status, tb5perf::kExitUsage) << file;
		EXPECT_NE(p.err.find(std::string("--plot: \"") + file +
				     "\" must end in .svg or .png"),
			  std::string::npos)
			<< p.err;
	}
}

TEST(PlotOption, OnlyForAClient)
{
	for (auto args : {std::vector<std::string>{"--server"},
			  std::vector<std::string>{"--list"}}) {
		args.insert(args.end(), {"--plot", "out.svg"});
		const Parsed p = Parse(args);
		EXPECT_EQ(p.status, tb5perf::kExitUsage) << args[0];
		EXPECT_NE(p.err.find("--plot draws a client's results"),
			  std::string::npos)
			<< p.err;
	}
}

TEST(CopyCapacityOption, AModeWithItsOwnSizesAndThreads)
{
	Parsed p = Parse({ "--copy-capacity" });

	ASSERT_EQ(p.status, -1) << p.err;
	EXPECT_EQ(p.opt.mode, tb5perf::Mode::kCopyCapacity);
	EXPECT_EQ(p.opt.bw_sizes, std::vector<uint64_t>{ 512u << 10 });
	EXPECT_TRUE(p.opt.copy_threads.empty());
	p = Parse({ "--copy-capacity", "--copy-threads", "1,8,64", "--sizes", "64K,1M" });
	ASSERT_EQ(p.status, -1) << p.err;
	EXPECT_EQ(p.opt.copy_threads, (std::vector<uint32_t>{ 1, 8, 64 }));
	EXPECT_EQ(p.opt.bw_sizes, (std::vector<uint64_t>{ 64u << 10, 1u << 20 }));
}

TEST(CopyCapacityOption, BadUsageSaysWhy)
{
	const struct {
		std::vector<std::string> args;
		const char *why;
	} cases[] = {
		{ { "--copy-capacity", "--csv" }, "not --csv" },
		{ { "--nccl", "--csv" }, "not --csv" },
		{ { "--copy-capacity", "--sim" }, "not a link: no --sim" },
		{ { "--copy-capacity", "--nccl" }, "exclude each other" },
		{ { "--sim", "--copy-threads", "2" }, "goes with --copy-capacity" },
		{ { "--copy-capacity", "--copy-threads", "0" }, "not in range" },
	};

	for (const auto &c : cases) {
		Parsed p = Parse(c.args);

		EXPECT_EQ(p.status, tb5perf::kExitUsage) << c.args[0] << " " << c.args[1];
		EXPECT_NE(p.err.find(c.why), std::string::npos) << p.err;
	}
}

} // namespace
