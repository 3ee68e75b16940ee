// SPDX-License-Identifier: MIT
//
// copy_capacity.cc - see copy_capacity.hpp.
#include "copy_capacity.hpp"

#include <sched.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "clock.hpp"
#include "errors.hpp"
#include "units.hpp"

namespace tb5perf {
namespace {

// Two buffers of one thread, unmapped when it is done.
class Buffers {
public:
	explicit Buffers(uint64_t bytes) : len_(bytes)
	{
		void *s = mmap(nullptr, len_, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		void *d = mmap(nullptr, len_, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (s == MAP_FAILED || d == MAP_FAILED) {
			err_ = errno;
			if (s != MAP_FAILED)
				munmap(s, len_);
			if (d != MAP_FAILED)
				munmap(d, len_);
			return;
		}
		src = static_cast<uint8_t *>(s);
		dst = static_cast<uint8_t *>(d);
		// Fault every page in before the clock starts.
		memset(src, 0x5a, len_);
		memset(dst, 0, len_);
	}
	~Buffers()
	{
		if (src) {
			munmap(src, len_);
			munmap(dst, len_);
		}
	}
	Buffers(const Buffers &) = delete;
	Buffers &operator=(const Buffers &) = delete;
	int error() const { return err_; }

	uint8_t *src = nullptr, *dst = nullptr;

private:
	uint64_t len_;
	int err_ = 0;
};

uint32_t usable_cpus()
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
		return uint32_t(CPU_COUNT(&set));
	return std::max(1u, std::thread::hardware_concurrency());
}

} // namespace

std::vector<uint32_t> default_copy_threads()
{
	const uint32_t cpus = usable_cpus();
	std::vector<uint32_t> out;

	for (uint32_t n = 1; n < cpus; n *= 2)
		out.push_back(n);
	out.push_back(cpus);
	return out;
}

CopyCapacity measure_copy_capacity(uint32_t threads, uint64_t size,
				   uint64_t footprint, double duration_s)
{
	// Each thread cycles through at least two copies' worth.
	const uint64_t slots = std::max<uint64_t>(footprint / size, 2);
	const uint64_t bytes = slots * size;
	std::atomic<uint32_t> ready{ 0 }, failed{ 0 };
	std::atomic<bool> go{ false }, stop{ false };
	std::atomic<uint64_t> copied{ 0 }, last_end{ 0 };
	std::atomic<int> err{ 0 };
	std::vector<std::thread> pool;

	pool.reserve(threads);
	for (uint32_t t = 0; t < threads; t++) {
		pool.emplace_back([&] {
			Buffers b(bytes);

			if (!b.src) {
				err.store(b.error());
				failed.fetch_add(1);
				ready.fetch_add(1);
				return;
			}
			ready.fetch_add(1);
			while (!go.load(std::memory_order_acquire))
				std::this_thread::yield();
			uint64_t n = 0, slot = 0;

			while (!stop.load(std::memory_order_relaxed)) {
				memcpy(b.dst + slot * size, b.src + slot * size, size);
				// Keep the compiler from dropping the copies.
				asm volatile("" : : "r"(b.dst) : "memory");
				n += size;
				slot = slot + 1 == slots ? 0 : slot + 1;
			}
			const uint64_t end = now_ns();
			uint64_t seen = last_end.load();

			while (end > seen && !last_end.compare_exchange_weak(seen, end))
				;
			copied.fetch_add(n);
		});
	}
	while (ready.load() < threads)
		std::this_thread::yield();
	const uint64_t t0 = now_ns();

	go.store(true, std::memory_order_release);
	if (!failed.load()) {
		const uint64_t until = t0 + uint64_t(duration_s * 1e9);

		while (now_ns() < until && !stop_requested())
			std::this_thread::sleep_for(std::chrono::microseconds(200));
	}
	stop.store(true);
	for (auto &th : pool)
		th.join();
	if (failed.load())
		throw Error("--copy-capacity: cannot map 2 x " + format_size(bytes) +
			    " for each of " + std::to_string(threads) + " threads: " +
			    strerror(err.load()));
	if (stop_requested())
		throw Interrupted();
	return { threads, size, double(last_end.load() - t0) / 1e9, copied.load() };
}

int run_copy_capacity(const Options &opt)
{
	const std::vector<uint32_t> counts =
		opt.copy_threads.empty() ? default_copy_threads() : opt.copy_threads;
	FILE *table = opt.format == Format::kJson && opt.output.empty() ? stderr : stdout;
	nlohmann::json doc;

	doc["tool"] = "tb5-perf";
	doc["version"] = TB5_PERF_VERSION;
	doc["mode"] = "copy-capacity";
	doc["command"] = opt.command;
	doc["cpus"] = usable_cpus();
	doc["footprint_per_thread"] = opt.memcpy_footprint;
	doc["rows"] = nlohmann::json::array();
	if (!opt.quiet) {
		fprintf(table, "# tb5-perf --copy-capacity: memcpy by N threads at once, "
			"each through 2 x %s of its own, %.2f s a point, %u CPUs usable\n",
			format_size(opt.memcpy_footprint).c_str(), opt.duration_s,
			usable_cpus());
		fprintf(table, "# a simulated fabric copies every byte twice: the hosts "
			"of one machine carry at most half the GB/s below, together\n");
		fprintf(table, "%10s %8s %14s %14s\n", "size", "threads", "GB/s in all",
			"GB/s a thread");
	}
	for (uint64_t size : opt.bw_sizes) {
		for (uint32_t n : counts) {
			const CopyCapacity c = measure_copy_capacity(
				n, size, opt.memcpy_footprint, opt.duration_s);

			if (!opt.quiet) {
				fprintf(table, "%10s %8u %14.1f %14.2f\n",
					format_size(size).c_str(), n, c.gbps(),
					c.gbps() / n);
				fflush(table);
			}
			doc["rows"].push_back({ { "size", size },
						{ "threads", n },
						{ "seconds", c.seconds },
						{ "bytes", c.bytes },
						{ "gbps", c.gbps() },
						{ "gbps_per_thread", c.gbps() / n } });
		}
	}
	if (opt.format == Format::kJson) {
		const std::string text = doc.dump(1) + "\n";

		if (!opt.output.empty()) {
			FILE *f = fopen(opt.output.c_str(), "w");

			if (!f)
				throw Error("--output " + opt.output + ": " + strerror(errno));
			const bool written = fputs(text.c_str(), f) >= 0;

			if (fclose(f) || !written)
				throw Error("--output " + opt.output + ": " + strerror(errno));
		} else {
			fputs(text.c_str(), stdout);
		}
	}
	return kExitOk;
}

} // namespace tb5perf
