// SPDX-License-Identifier: MIT
//
// test_wire_clock.cc - the simulator's link-rate model (sim/wire_clock.hpp)
// on a clock the test drives: what it lets through over a simulated second,
// its burst bound over every interval, the independence of the directions,
// the fixed delay and USB4's per-packet headers. Accounting only: no test
// here depends on how fast this machine is.
#include <gtest/gtest.h>

#include <cstdint>
#include <deque>
#include <random>
#include <vector>

#include "sim/wire_clock.hpp"

namespace {

using tb5::sim::WireClock;

constexpr uint64_t kSecond = 1'000'000'000;

// Bytes per simulated second at @gbps, as the model counts them.
constexpr double BytesPerSecond(double gbps) { return gbps * 1e9 / 8; }

struct Frame {
	uint64_t due;
	uint64_t bytes;		// wire bytes
};

// A sender that always has frames waiting and a ring that is never full:
// every frame is handed to the wire at time 0.
std::vector<Frame> Saturate(WireClock &w, uint32_t len, uint64_t until_ns)
{
	std::vector<Frame> out;

	for (;;) {
		uint64_t due = w.send(0, len);

		out.push_back({ due, w.wire_bytes(len) });
		if (due > until_ns)
			return out;
	}
}

uint64_t DueBy(const std::vector<Frame> &frames, uint64_t t)
{
	uint64_t n = 0;

	for (const Frame &f : frames)
		if (f.due <= t)
			n += f.bytes;
	return n;
}

// Checks that the frames due within any interval [a, b] carry at most
// R x (b - a) + one burst, over every pair of frames as the ends.
void ExpectBurstBound(const std::vector<Frame> &frames, const WireClock &w)
{
	std::vector<uint64_t> prefix(frames.size() + 1, 0);

	for (size_t i = 0; i < frames.size(); i++)
		prefix[i + 1] = prefix[i] + frames[i].bytes;
	const double per_ns = double(w.rate_mbps()) / 8000.0;

	for (size_t i = 0; i < frames.size(); i++) {
		ASSERT_TRUE(i == 0 || frames[i].due >= frames[i - 1].due)
			<< "due times go back at frame " << i;
		for (size_t j = i; j < frames.size(); j++) {
			const double allowed =
				per_ns * double(frames[j].due - frames[i].due) +
				double(w.burst_bytes());
			const uint64_t got = prefix[j + 1] - prefix[i];

			ASSERT_LE(double(got), allowed + 1e-6)
				<< "frames " << i << ".." << j << " due within "
				<< frames[j].due - frames[i].due << " ns";
		}
	}
}

TEST(WireClock, OneSecondPassesRateOverEightBytes)
{
	for (uint64_t mbps : { 80000u, 40000u, 2000u, 78800u, 1234u }) {
		WireClock w(mbps, 0, false);
		std::vector<Frame> f = Saturate(w, TB5_FRAME_MAX, kSecond);
		const double want = BytesPerSecond(double(mbps) / 1000);
		const double got = double(DueBy(f, kSecond));

		EXPECT_LE(got, want + double(w.burst_bytes())) << mbps << " Mb/s";
		EXPECT_GE(got, want - double(w.burst_bytes())) << mbps << " Mb/s";
	}
}

TEST(WireClock, HeaderFramesCountAsWireBytes)
{
	// A DATA header (48 bytes) before every 16 payload frames, as the
	// core sends 64 KiB bursts: the header's bytes take wire time too.
	WireClock w(80000, 0, false);
	uint64_t payload = 0, wire = 0, due = 0;

	while (due <= kSecond) {
		due = w.send(0, 48);
		if (due <= kSecond)
			wire += 48;
		for (int k = 0; k < 16; k++) {
			due = w.send(0, TB5_FRAME_MAX);
			if (due <= kSecond) {
				wire += TB5_FRAME_MAX;
				payload += TB5_FRAME_MAX;
			}
		}
	}
	EXPECT_NEAR(double(wire), BytesPerSecond(80), double(w.burst_bytes()));
	EXPECT_NEAR(double(payload), BytesPerSecond(80) * 65536 / (65536 + 48),
		    double(w.burst_bytes()));
}

TEST(WireClock, NeverFasterThanTheRateAfterRounding)
{
	// Back to back from 0, frame k is due no earlier than the exact
	// (k + 1) x len x 8 / R, and at most 1 ns later.
	for (uint64_t mbps : { 80000u, 3u, 77777u }) {
		for (uint32_t len : { 48u, 1000u, TB5_FRAME_MAX }) {
			WireClock w(mbps, 0, false);

			for (uint64_t k = 0; k < 1000; k++) {
				const unsigned __int128 bits =
					(unsigned __int128)(k + 1) * len * 8;
				const uint64_t due = w.send(0, len);

				// due x R >= bits x 1000 > (due - 1) x R, exactly
				// (compared here: gtest cannot print 128 bits).
				ASSERT_TRUE((unsigned __int128)due * mbps >= bits * 1000)
					<< mbps << " Mb/s, " << len << " B, frame " << k;
				ASSERT_TRUE((unsigned __int128)(due - 1) * mbps < bits * 1000)
					<< mbps << " Mb/s, " << len << " B, frame " << k;
			}
		}
	}
}

TEST(WireClock, BurstBoundHoldsWhateverTheSenderDoes)
{
	// Frames of random sizes handed over at random times: sometimes far
	// ahead of the wire, sometimes after it went idle.
	std::mt19937_64 rng(14);
	WireClock w(80000, 3000, false);
	std::vector<Frame> frames;
	uint64_t now = 0;

	for (int i = 0; i < 3000; i++) {
		now += rng() % 3 == 0 ? rng() % 5000 : 0;
		const uint32_t len = rng() % 4 == 0 ? 48 : 1 + rng() % TB5_FRAME_MAX;

		frames.push_back({ w.send(now, len), w.wire_bytes(len) });
	}
	ExpectBurstBound(frames, w);
}

TEST(WireClock, AnIdleWireGivesNoCreditLater)
{
	// After a long idle time, frames handed over at once still leave one
	// after another at R: the idle time is not saved up.
	WireClock w(80000, 0, false);
	const uint64_t t = 5 * kSecond;
	const uint64_t frame_ns = 4096 * 8 / 80;	// 409.6 ns

	w.send(0, TB5_FRAME_MAX);
	uint64_t due = 0;

	for (int k = 0; k < 100; k++)
		due = w.send(t, TB5_FRAME_MAX);
	EXPECT_GE(due, t + 100 * frame_ns);
}

TEST(WireClock, PollingGapsDoNotCapTheRate)
{
	// A sender that looks every 20 us and a receiver that looks every
	// 7 us, over a ring of 1024 frames: the wire still carries R, as the
	// sender stamps every frame it has room for and the receiver takes
	// every frame that is due when it looks.
	WireClock w(80000, 0, false);
	std::deque<uint64_t> ring;	// due times of frames in the ring
	uint64_t received = 0;

	for (uint64_t t = 0; t <= kSecond; t++) {
		if (t % 7000 == 0)
			while (!ring.empty() && ring.front() <= t) {
				received += TB5_FRAME_MAX;
				ring.pop_front();
			}
		if (t % 20000 == 0)
			while (ring.size() < 1024)
				ring.push_back(w.send(t, TB5_FRAME_MAX));
		t += 999;	// 1 us steps: both periods are multiples
	}
	// The receiver's last look (at or before 1 s) misses at most 7 us.
	EXPECT_GE(double(received), BytesPerSecond(80) - 7000 * 10.0 -
					    double(w.burst_bytes()));
	EXPECT_LE(double(received), BytesPerSecond(80) + double(w.burst_bytes()));
}

TEST(WireClock, DirectionsAreIndependent)
{
	// Both ends send at once, each on its own clock: each direction
	// carries R, neither takes from the other.
	WireClock ab(40000, 0, false), ba(40000, 0, false);
	uint64_t got_ab = 0, got_ba = 0;

	for (;;) {
		uint64_t d1 = ab.send(0, TB5_FRAME_MAX);
		uint64_t d2 = ba.send(0, TB5_FRAME_MAX);

		if (d1 > kSecond && d2 > kSecond)
			break;
		got_ab += d1 <= kSecond ? TB5_FRAME_MAX : 0;
		got_ba += d2 <= kSecond ? TB5_FRAME_MAX : 0;
	}
	EXPECT_NEAR(double(got_ab), BytesPerSecond(40), double(ab.burst_bytes()));
	EXPECT_NEAR(double(got_ba), BytesPerSecond(40), double(ba.burst_bytes()));
}

TEST(WireClock, DelayIsAddedOnceToEveryFrame)
{
	WireClock w(80000, 2500, false);

	// 48 bytes at 80 Gb/s: 4.8 ns on the wire, rounded up to 5.
	EXPECT_EQ(w.send(1000, 48), 1000u + 5 + 2500);
	// The delay shifts the stream; it does not slow it down.
	WireClock v(80000, 2500, false);
	std::vector<Frame> f = Saturate(v, TB5_FRAME_MAX, kSecond + 2500);
	EXPECT_NEAR(double(DueBy(f, kSecond + 2500)), BytesPerSecond(80),
		    double(v.burst_bytes()));

	// No rate: due after the delay alone; neither: at once (0).
	WireClock d(0, 7000, false), off;
	EXPECT_TRUE(d.active());
	EXPECT_EQ(d.send(123, TB5_FRAME_MAX), 7123u);
	EXPECT_FALSE(off.active());
	EXPECT_EQ(off.send(123, TB5_FRAME_MAX), 0u);
}

TEST(WireClock, Usb4PacketHeaders)
{
	WireClock w(80000, 0, true);

	EXPECT_EQ(w.wire_bytes(TB5_FRAME_MAX), 4160u);	// 16 packets
	EXPECT_EQ(w.wire_bytes(48), 52u);
	EXPECT_EQ(w.wire_bytes(256), 260u);
	EXPECT_EQ(w.wire_bytes(257), 265u);
	EXPECT_EQ(w.burst_bytes(), 4160u);
	// 80 Gb/s of wire bytes is 78.77 Gb/s of full frames.
	std::vector<Frame> f = Saturate(w, TB5_FRAME_MAX, kSecond);
	const double frames = double(DueBy(f, kSecond)) / 4160;
	EXPECT_NEAR(frames * TB5_FRAME_MAX, BytesPerSecond(80) * 4096 / 4160,
		    double(TB5_FRAME_MAX));
}

TEST(WireClock, ResetEmptiesTheWire)
{
	WireClock w(8, 0, false);	// 1 byte per us

	EXPECT_EQ(w.send(0, 1000), 1'000'000u);
	w.reset();
	EXPECT_EQ(w.send(0, 1000), 1'000'000u);
}

} // namespace
