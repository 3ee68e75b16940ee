// SPDX-License-Identifier: MIT
//
// test_copy_capacity.cc - tb5-perf --copy-capacity's parts: the default
// thread counts end at the usable CPUs, and a measurement counts what its
// threads copied over the time they ran (no speed is asserted).
#include <gtest/gtest.h>

#include <sched.h>
#include <sys/wait.h>

#include <cerrno>

#include "copy_capacity.hpp"

namespace {

TEST(CopyCapacity, DefaultThreadsDoubleUpToTheCpus)
{
	cpu_set_t set;

	ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
	const uint32_t cpus = uint32_t(CPU_COUNT(&set));
	const std::vector<uint32_t> t = tb5perf::default_copy_threads();

	ASSERT_FALSE(t.empty());
	EXPECT_EQ(t.front(), 1u);
	EXPECT_EQ(t.back(), cpus);
	for (size_t i = 1; i + 1 < t.size(); i++)
		EXPECT_EQ(t[i], 2 * t[i - 1]);
}

TEST(CopyCapacity, CountsEveryThreadsCopies)
{
	for (auto m : { tb5perf::CopyMethod::kMemcpy,
			tb5perf::CopyMethod::kProcessVmReadv }) {
		SCOPED_TRACE(m == tb5perf::CopyMethod::kMemcpy ? "memcpy" : "vm_readv");
		// Two threads, 4 KiB copies through 64 KiB each, 20 ms.
		const tb5perf::CopyCapacity c =
			tb5perf::measure_copy_capacity(2, 4096, 64 << 10, 0.02, m);

		if (!c.error.empty()) {
			// Only cross-process reads may be refused (seccomp, Yama).
			EXPECT_EQ(m, tb5perf::CopyMethod::kProcessVmReadv) << c.error;
			EXPECT_EQ(c.error.rfind("process_vm_readv: ", 0), 0u) << c.error;
			continue;
		}
		EXPECT_EQ(c.threads, 2u);
		EXPECT_EQ(c.size, 4096u);
		EXPECT_GE(c.seconds, 0.02);
		EXPECT_LT(c.seconds, 5.0);
		EXPECT_GT(c.bytes, 0u);
		EXPECT_EQ(c.bytes % 4096, 0u);
		EXPECT_DOUBLE_EQ(c.gbps(), c.bytes / c.seconds / 1e9);
	}
}

TEST(CopyCapacity, TheSourceProcessIsGoneAfterwards)
{
	// The child that holds process_vm_readv's sources is reaped: no
	// child of ours is left to wait for.
	(void)tb5perf::measure_copy_capacity(1, 4096, 16 << 10, 0.01,
					     tb5perf::CopyMethod::kProcessVmReadv);
	EXPECT_EQ(waitpid(-1, nullptr, WNOHANG), -1);
	EXPECT_EQ(errno, ECHILD);
}

} // namespace
