// SPDX-License-Identifier: MIT
//
// test_enum_strs.cc - tb5_link_state_str() and tb5_backend_str(): a name for
// every value of tb5.h, "unknown" (never NULL) for any other, and both
// exported under the version node that brought them (TB5_1.2).
#include <dlfcn.h>

#include <cstdint>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "tb5/tb5.h"

TEST(EnumStrs, LinkStates)
{
	EXPECT_STREQ(tb5_link_state_str(TB5_LINK_STATE_DOWN), "down");
	EXPECT_STREQ(tb5_link_state_str(TB5_LINK_STATE_UP), "up");
	EXPECT_STREQ(tb5_link_state_str(TB5_LINK_STATE_READY), "ready");
}

TEST(EnumStrs, Backends)
{
	EXPECT_STREQ(tb5_backend_str(TB5_BACKEND_KERNEL), "kernel");
	EXPECT_STREQ(tb5_backend_str(TB5_BACKEND_SIM), "simulator");
}

TEST(EnumStrs, OutOfRangeIsUnknownNeverNull)
{
	for (const uint32_t v : {3u, 4u, 255u, 0x80000000u, UINT32_MAX}) {
		ASSERT_NE(tb5_link_state_str(v), nullptr) << v;
		EXPECT_STREQ(tb5_link_state_str(v), "unknown") << v;
	}
	for (const uint32_t v : {0u, 3u, 255u, UINT32_MAX}) {
		ASSERT_NE(tb5_backend_str(v), nullptr) << v;
		EXPECT_STREQ(tb5_backend_str(v), "unknown") << v;
	}
}

TEST(EnumStrs, NamesAreDistinct)
{
	const std::set<std::string> states = {
		tb5_link_state_str(TB5_LINK_STATE_DOWN),
		tb5_link_state_str(TB5_LINK_STATE_UP),
		tb5_link_state_str(TB5_LINK_STATE_READY),
		tb5_link_state_str(UINT32_MAX),
	};
	EXPECT_EQ(states.size(), 4u);
	EXPECT_STRNE(tb5_backend_str(TB5_BACKEND_KERNEL), tb5_backend_str(TB5_BACKEND_SIM));
}

// A program built against 0.2.0 binds these names at TB5_1.2; a library
// that exported them elsewhere would break it (libtb5.map).
TEST(EnumStrs, ExportedAtTb5_1_2)
{
#ifdef TB5_TEST_STATIC
	GTEST_SKIP() << "libtb5 is a static archive in this build: no version nodes";
#else
	for (const char *name : {"tb5_link_state_str", "tb5_backend_str"}) {
		EXPECT_NE(dlvsym(RTLD_DEFAULT, name, "TB5_1.2"), nullptr) << name;
		EXPECT_EQ(dlvsym(RTLD_DEFAULT, name, "TB5_1.1"), nullptr) << name;
	}
	EXPECT_NE(dlvsym(RTLD_DEFAULT, "tb5_get_drops", "TB5_1.1"), nullptr);
#endif
}
