// SPDX-License-Identifier: MIT
//
// core_bench.cc - tb5-core-bench: how fast the transport core moves messages
// over the ring model, single thread, next to memcpy as the ceiling.
//
//   core/<size>:   A sends to B over two links wired back to back (ring size
//                  4096). Each iteration is one message: receives and sends
//                  are kept in flight (16 up to 64 KiB, 4 at 1 MiB, 1 at
//                  64 MiB) and tb5_rm_step() is driven until the next one
//                  completed.
//   memcpy/<size>: memcpy of the same size between buffers touched before.
//
// Both report msgs/s (items_per_second) and GB/s (the rate counter "GB": 1e9
// bytes per second, beside the library's 1024-based bytes_per_second); a
// table at the end puts them side by side. --benchmark_format=json works as
// usual (the table then goes to stderr). Without --benchmark_min_time the
// run takes 0.5 s per benchmark, about 10 s in all.
#include "ring_pair.h"
#include "table_reporter.h"

#include <benchmark/benchmark.h>

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tb5bench {
namespace {

constexpr uint32_t kRingSize = 4096;
constexpr uint32_t kTag = 7;
const std::vector<int64_t> kSizes = {8, 4 << 10, 64 << 10, 1 << 20, 64 << 20};
const char kDefaultMinTime[] = "--benchmark_min_time=0.5";

// Messages in flight: enough to keep the rings busy, without 16 x 64 MiB.
uint32_t Depth(uint64_t size)
{
	if (size <= (64u << 10))
		return 16;
	if (size <= (1u << 20))
		return 4;
	return 1;
}

// Page-touched buffers, kept across the repeated calls Google Benchmark
// makes of one benchmark, so that allocation and page faults stay out of
// the measurement.
uint8_t *Buffer(uint64_t size, uint32_t index)
{
	static std::map<std::pair<uint64_t, uint32_t>,
			std::unique_ptr<uint8_t[]>> buffers;
	auto &b = buffers[{size, index}];

	if (!b) {
		b.reset(new uint8_t[size]);
		memset(b.get(), static_cast<int>(index + 1), size);
	}
	return b.get();
}

RingPair *Pair()
{
	static RingPair pair(kRingSize);

	return pair.error().empty() ? &pair : nullptr;
}

tb5_mem Mem(const void *p)
{
	return {nullptr, reinterpret_cast<uintptr_t>(p)};
}

void SetRates(benchmark::State &state, uint64_t size, uint32_t depth)
{
	const double bytes = static_cast<double>(state.iterations()) *
			     static_cast<double>(size);

	state.SetItemsProcessed(state.iterations());
	state.SetBytesProcessed(static_cast<int64_t>(bytes));
	state.counters["GB"] = benchmark::Counter(bytes / 1e9,
						    benchmark::Counter::kIsRate);
	if (depth)
		state.SetLabel(std::to_string(depth));
}

void BM_Core(benchmark::State &state)
{
	const uint64_t size = static_cast<uint64_t>(state.range(0));
	const uint32_t depth = Depth(size);
	RingPair *pair = Pair();

	if (!pair) {
		state.SkipWithError("ring pair setup failed");
		return;
	}
	EpCtx &sc = pair->sender_ctx();
	EpCtx &rc = pair->receiver_ctx();
	// Slot i: send buffer 2i, receive buffer 2i + 1; user_id = i.
	std::vector<uint8_t> busy(depth, 0);
	std::vector<uint8_t> sent(depth, 0), received(depth, 0);
	uint32_t next = 0;	// messages complete in posting order
	bool failed = false;

	sc.done.clear();
	rc.done.clear();
	auto post = [&](uint32_t i) {
		const tb5_mem s = Mem(Buffer(size, 2 * i));
		const tb5_mem r = Mem(Buffer(size, 2 * i + 1));

		if (tb5_post_recv(pair->receiver(), &r, size, kTag, i) ||
		    tb5_post_send(pair->sender(), &s, size, kTag, i))
			return false;
		busy[i] = 1;
		sent[i] = received[i] = 0;
		return true;
	};
	// Drive the rings until slot @i's send and receive both completed.
	auto wait = [&](uint32_t i) {
		while (!(sent[i] && received[i])) {
			const uint32_t work = pair->Step();

			for (uint64_t id : sc.done)
				sent[id] = 1;
			for (uint64_t id : rc.done)
				received[id] = 1;
			sc.done.clear();
			rc.done.clear();
			if (sc.first_error || rc.first_error || !work)
				return false;	// failed, or stalled
		}
		busy[i] = 0;
		return true;
	};

	for (auto _ : state) {
		for (uint32_t i = 0; i < depth; i++)
			if (!busy[i] && !post(i)) {
				failed = true;
				break;
			}
		if (failed || !wait(next)) {
			failed = true;
			break;
		}
		next = (next + 1) % depth;
	}
	// Drain what is still in flight, outside the measurement.
	for (uint32_t n = 0; n < depth && !failed; n++, next = (next + 1) % depth)
		if (busy[next] && !wait(next))
			failed = true;
	if (failed) {
		state.SkipWithError(sc.first_error || rc.first_error
					    ? "a message failed"
					    : "the rings stalled");
		return;
	}
	SetRates(state, size, depth);
}

void BM_Memcpy(benchmark::State &state)
{
	const uint64_t size = static_cast<uint64_t>(state.range(0));
	uint8_t *src = Buffer(size, 1000);
	uint8_t *dst = Buffer(size, 1001);

	for (auto _ : state) {
		memcpy(dst, src, size);
		benchmark::DoNotOptimize(dst);
		benchmark::ClobberMemory();
	}
	SetRates(state, size, 0);
}

const char kFooter[] =
	"in flight: messages kept posted at once (core).\n"
	"The ring model copies every payload byte twice: TX ring -> RX "
	"descriptor\n(as the DMA engine) and RX descriptor -> posted buffer "
	"(the core's copy_to),\nso about half of memcpy is the ceiling here; "
	"small messages are bound by\nper-message work (CTS, DATA header, "
	"completions), not by copying.\nmemcpy up to 1 MiB copies the same "
	"two buffers each time, from cache;\nat 64 MiB both sides run at memory "
	"bandwidth.\n";

// The format --benchmark_format asks for (the library keeps its flags to
// itself, so look before it parses them).
std::string Format(int argc, char **argv)
{
	const std::string flag = "--benchmark_format=";
	std::string format = "console";

	for (int i = 1; i < argc; i++)
		if (std::string(argv[i]).rfind(flag, 0) == 0)
			format = argv[i] + flag.size();
	return format;
}

bool HasMinTime(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (std::string(argv[i]).rfind("--benchmark_min_time", 0) == 0)
			return true;
	return false;
}

} // namespace
} // namespace tb5bench

int main(int argc, char **argv)
{
	using namespace tb5bench;
	std::vector<char *> args(argv, argv + argc);
	std::string min_time = kDefaultMinTime;

	// A short default that the command line can still override.
	if (!HasMinTime(argc, argv))
		args.insert(args.begin() + 1, min_time.data());
	int n = static_cast<int>(args.size());
	const std::string format = Format(n, args.data());

	benchmark::Initialize(&n, args.data());
	if (benchmark::ReportUnrecognizedArguments(n, args.data()))
		return 2;

	for (int64_t size : kSizes)
		benchmark::RegisterBenchmark("core", BM_Core)
			->Arg(size)->UseRealTime()->Unit(benchmark::kMicrosecond);
	for (int64_t size : kSizes)
		benchmark::RegisterBenchmark("memcpy", BM_Memcpy)
			->Arg(size)->UseRealTime()->Unit(benchmark::kMicrosecond);

	std::unique_ptr<benchmark::BenchmarkReporter> inner;
	std::ostream *table = &std::cout;
	if (format == "json") {
		inner = std::make_unique<benchmark::JSONReporter>();
		table = &std::cerr;
	} else if (format == "console") {
		inner = std::make_unique<benchmark::ConsoleReporter>(
			isatty(STDOUT_FILENO)
				? benchmark::ConsoleReporter::OO_ColorTabular
				: benchmark::ConsoleReporter::OO_Tabular);
	} else {
		// CSV and whatever comes later: the library's own choice.
		benchmark::RunSpecifiedBenchmarks();
		benchmark::Shutdown();
		return 0;
	}
	TableReporter reporter(std::move(inner), table, kFooter);
	benchmark::RunSpecifiedBenchmarks(&reporter);
	benchmark::Shutdown();
	return 0;
}
