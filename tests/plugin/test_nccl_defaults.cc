// SPDX-License-Identifier: MIT
//
// test_nccl_defaults.cc - the NCCL variables the plugin sets in init() for
// a job that leaves them unset (plugin/nccl_defaults.cc). Each case runs in
// a child process of its own: the plugin sets them once per process, and
// the environment is the process's.
#include <gtest/gtest.h>

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <string>

#include "plugin_api.hpp"

namespace {

using tb5plugintest::Library;
using tb5plugintest::PluginPath;

constexpr const char *kVar = "NCCL_P2P_NET_CHUNKSIZE";

// Exit status of @body run in a child (2: it crashed or was killed).
int InChild(const std::function<int()> &body)
{
	fflush(nullptr);
	pid_t p = fork();
	if (p == 0)
		_exit(body());
	int st = 0;
	if (p < 0 || waitpid(p, &st, 0) != p)
		return 2;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 2;
}

// In the child: a simulator named @sim with a loop pair (empty: none, so
// no links), @env
// set, then NCCL's calls: dlopen, ncclNetPlugin_v11.init(). Returns 0
// when the variable is then @want (nullptr: unset), 1 otherwise.
int InitAndCheck(const std::string &sim, const std::function<void()> &env, const char *want)
{
	return InChild([&] {
		unsetenv(kVar);
		unsetenv("NCCL_NET");
		unsetenv("TB5_NCCL_DEFAULTS");
		if (sim.empty())
			unsetenv("TB5_SIM");	// and no tb5.ko here: no links
		else
			setenv("TB5_SIM", (sim + std::to_string(getpid()) + ":loop=1").c_str(), 1);
		env();
		std::string why;
		auto lib = Library::Open(PluginPath(), &why);
		if (!lib)
			return 3;
		auto api = lib->Get(11);
		void *ctx = nullptr;
		if (!api || api->Init(&ctx) != ncclSuccess)
			return 4;
		const char *v = std::getenv(kVar);
		int ok = want ? (v && !std::strcmp(v, want)) : !v;
		api->Finalize(ctx);
		return ok ? 0 : 1;
	});
}

TEST(PluginNcclDefaults, SendRecvStepsOf512KiB)
{
	EXPECT_EQ(InitAndCheck("dflt", [] {}, "524288"), 0);
	EXPECT_EQ(InitAndCheck("dflt", [] { setenv("NCCL_NET", "TB5", 1); }, "524288"), 0);
	// Empty is unset to NCCL: set too.
	EXPECT_EQ(InitAndCheck("empty", [] { setenv(kVar, "", 1); }, "524288"), 0);
}

TEST(PluginNcclDefaults, TheJobsValueStays)
{
	EXPECT_EQ(InitAndCheck("keep", [] { setenv(kVar, "131072", 1); }, "131072"), 0);
}

TEST(PluginNcclDefaults, NothingForAnotherNetworkOrWhenTurnedOff)
{
	EXPECT_EQ(InitAndCheck("other", [] { setenv("NCCL_NET", "IB", 1); }, nullptr), 0);
	EXPECT_EQ(InitAndCheck("off", [] { setenv("TB5_NCCL_DEFAULTS", "0", 1); }, nullptr), 0);
}

TEST(PluginNcclDefaults, NothingWithoutLinks)
{
	EXPECT_EQ(InitAndCheck("", [] {}, nullptr), 0);
}

} // namespace
