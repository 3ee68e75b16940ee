// SPDX-License-Identifier: MIT
//
// test_tuner.cc - the tuner the plugin ships (plugin/tuner.cc), loaded as
// NCCL 2.28 loads it: dlopen() the net plugin, dlsym ncclTunerPlugin_v4,
// then init / getCollInfo on a cost table / destroy.
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <stdlib.h>

#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <string>

#include "nccl_net_abi.h"
#include "plugin_api.hpp"

namespace {

constexpr int kAlgos = 7, kProtos = 3;	// NCCL 2.28: ring = 1; LL, LL128, Simple
constexpr int kRing = 1, kLl = 0, kLl128 = 1, kSimple = 2;

struct TunerV4 {
	const char *name;
	ncclResult_t (*init)(size_t, size_t, ncclDebugLogger_t, void **);
	ncclResult_t (*getCollInfo)(void *, int, size_t, int, float **, int, int, int, int *);
	ncclResult_t (*destroy)(void *);
};

class Tuner : public ::testing::Test {
protected:
	void SetUp() override
	{
		so_ = dlopen(tb5plugintest::PluginPath().c_str(), RTLD_NOW | RTLD_LOCAL);
		ASSERT_NE(so_, nullptr) << dlerror();
		t_ = static_cast<const TunerV4 *>(dlsym(so_, "ncclTunerPlugin_v4"));
		ASSERT_NE(t_, nullptr);
		unsetenv("TB5_NCCL_TUNER");
		unsetenv("TB5_NCCL_TUNER_SIMPLE_MIN");
		unsetenv("TB5_NCCL_TUNER_CHANNEL_BYTES");
		unsetenv("TB5_NCCL_TUNER_MIN_CHANNELS");
		unsetenv("NCCL_P2P_DISABLE");
		unsetenv("NCCL_SHM_DISABLE");
	}
	void TearDown() override
	{
		if (so_)
			dlclose(so_);
	}
	// The table after getCollInfo for an all_reduce of @bytes; returns
	// the channel count asked for (0: NCCL's, which is what NCCL passes).
	int Run(size_t nranks, size_t nnodes, size_t bytes, float (&cost)[kAlgos][kProtos])
	{
		for (auto &a : cost)
			for (float &c : a)
				c = 10.0f;
		cost[0][kLl128] = -1.0f;	// NCCL_ALGO_PROTO_IGNORE stays so
		void *ctx = nullptr;
		int nch = 0;
		EXPECT_EQ(t_->init(nranks, nnodes, nullptr, &ctx), ncclSuccess);
		if (!ctx)
			return -1;
		EXPECT_EQ(t_->getCollInfo(ctx, 4 /* all_reduce */, bytes, 1,
					  reinterpret_cast<float **>(cost), kAlgos, kProtos, 0,
					  &nch), ncclSuccess);
		EXPECT_EQ(t_->destroy(ctx), ncclSuccess);
		return nch;
	}
	void *so_ = nullptr;
	const TunerV4 *t_ = nullptr;
};

TEST_F(Tuner, NetworkJobsUseSimpleFrom64K)
{
	EXPECT_STREQ(t_->name, "TB5");
	float cost[kAlgos][kProtos];
	Run(2, 2, 256 << 10, cost);
	EXPECT_EQ(cost[kRing][kSimple], 10.0f);
	EXPECT_GT(cost[kRing][kLl], 1e9f);
	EXPECT_GT(cost[kRing][kLl128], 1e9f);
	EXPECT_EQ(cost[0][kLl128], -1.0f);
	Run(2, 2, 32 << 10, cost);	// below the threshold: NCCL's choice
	EXPECT_EQ(cost[kRing][kLl], 10.0f);
}

TEST_F(Tuner, OneNodeOnlyWithP2pAndShmOff)
{
	float cost[kAlgos][kProtos];
	Run(2, 1, 1 << 20, cost);	// NVLink or SHM carry it: untouched
	EXPECT_EQ(cost[kRing][kLl], 10.0f);
	setenv("NCCL_P2P_DISABLE", "1", 1);
	setenv("NCCL_SHM_DISABLE", "1", 1);
	Run(2, 1, 1 << 20, cost);
	EXPECT_GT(cost[kRing][kLl], 1e9f);
}

TEST_F(Tuner, Settings)
{
	float cost[kAlgos][kProtos];
	setenv("TB5_NCCL_TUNER", "0", 1);
	Run(2, 2, 1 << 20, cost);
	EXPECT_EQ(cost[kRing][kLl], 10.0f);
	unsetenv("TB5_NCCL_TUNER");
	setenv("TB5_NCCL_TUNER_SIMPLE_MIN", "4096", 1);
	Run(2, 2, 8192, cost);
	EXPECT_GT(cost[kRing][kLl], 1e9f);
}

// Network collectives with Simple get one channel per MiB, at least 2, so
// that NCCL's messages stay large enough to share their copies (NCCL
// gives a 1 MiB all_reduce 8 channels of 32 KiB messages); from 64 MiB,
// and below the Simple threshold, NCCL's count stands.
TEST_F(Tuner, ChannelsFollowTheSize)
{
	float cost[kAlgos][kProtos];
	EXPECT_EQ(Run(2, 2, 32 << 10, cost), 0);	// LL's range: NCCL's
	EXPECT_EQ(Run(2, 2, 64 << 10, cost), 2);
	EXPECT_EQ(Run(2, 2, 256 << 10, cost), 2);
	EXPECT_EQ(Run(2, 2, 1 << 20, cost), 2);
	EXPECT_EQ(Run(4, 4, 4 << 20, cost), 4);
	EXPECT_EQ(Run(2, 2, 63u << 20, cost), 63);
	EXPECT_EQ(Run(2, 2, 64u << 20, cost), 0);
	EXPECT_EQ(Run(2, 2, 1ull << 30, cost), 0);
	EXPECT_EQ(Run(2, 1, 1 << 20, cost), 0);	// no network: NCCL's
	setenv("TB5_NCCL_TUNER_CHANNEL_BYTES", "0", 1);
	EXPECT_EQ(Run(2, 2, 1 << 20, cost), 0);
	EXPECT_GT(cost[kRing][kLl], 1e9f);	// the protocol choice stays
	setenv("TB5_NCCL_TUNER_CHANNEL_BYTES", "524288", 1);
	EXPECT_EQ(Run(2, 2, 4 << 20, cost), 8);
	setenv("TB5_NCCL_TUNER_MIN_CHANNELS", "1", 1);
	EXPECT_EQ(Run(2, 2, 256 << 10, cost), 1);
	setenv("TB5_NCCL_TUNER_CHANNEL_BYTES", "2097152", 1);
	setenv("TB5_NCCL_TUNER_MIN_CHANNELS", "6", 1);
	EXPECT_EQ(Run(2, 2, 4 << 20, cost), 6);
}

std::string g_logged;	// what the plugin logged through LogTo

__attribute__((format(printf, 5, 6))) void LogTo(ncclDebugLogLevel, unsigned long,
						 const char *, int, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	g_logged.append(line).append("\n");
}

// A setting that is not a number in its range keeps its default, and the
// plugin says which and why (it once kept the default without a word).
TEST_F(Tuner, BadSettingsKeepTheirDefaultsAndSayWhy)
{
	setenv("TB5_NCCL_TUNER_MIN_CHANNELS", "many", 1);
	setenv("TB5_NCCL_TUNER_CHANNEL_BYTES", "-1", 1);
	setenv("TB5_NCCL_TUNER", "2", 1);
	g_logged.clear();
	void *ctx = nullptr;
	ASSERT_EQ(t_->init(2, 2, LogTo, &ctx), ncclSuccess);
	float cost[kAlgos][kProtos];
	for (auto &a : cost)
		for (float &c : a)
			c = 10.0f;
	int nch = 0;
	EXPECT_EQ(t_->getCollInfo(ctx, 4, 1 << 20, 1, reinterpret_cast<float **>(cost),
				  kAlgos, kProtos, 0, &nch), ncclSuccess);
	EXPECT_EQ(t_->destroy(ctx), ncclSuccess);
	EXPECT_EQ(nch, 2);	// one channel per MiB, at least 2: the defaults
	EXPECT_GT(cost[kRing][kLl], 1e9f);	// and the tuner stays on
	for (const char *want : { "ignoring TB5_NCCL_TUNER_MIN_CHANNELS=many: not a number in [0, 64]",
				  "ignoring TB5_NCCL_TUNER_CHANNEL_BYTES=-1",
				  "ignoring TB5_NCCL_TUNER=2: not a number in [0, 1]" })
		EXPECT_NE(g_logged.find(want), std::string::npos) << want << "\n" << g_logged;
	setenv("TB5_NCCL_TUNER_MIN_CHANNELS", "65", 1);
	unsetenv("TB5_NCCL_TUNER_CHANNEL_BYTES");
	unsetenv("TB5_NCCL_TUNER");
	EXPECT_EQ(Run(2, 2, 1 << 20, cost), 2);
}

} // namespace
