// SPDX-License-Identifier: MIT
//
// copy_capacity.cc - see copy_capacity.hpp.
#include "copy_capacity.hpp"

#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "clock.hpp"
#include "errors.hpp"
#include "report.hpp"
#include "units.hpp"

namespace tb5perf {
namespace {

// @bytes of anonymous memory, faulted in with @fill; @shared: also mapped
// in a child forked later. Unmapped when done.
class Mapping {
public:
	Mapping(uint64_t bytes, int fill, bool shared) : len_(bytes)
	{
		void *p = mmap(nullptr, len_, PROT_READ | PROT_WRITE,
			       (shared ? MAP_SHARED : MAP_PRIVATE) | MAP_ANONYMOUS,
			       -1, 0);
		if (p == MAP_FAILED) {
			err_ = errno;
			return;
		}
		base = static_cast<uint8_t *>(p);
		// Fault every page in before the clock starts.
		memset(base, fill, len_);
	}
	~Mapping()
	{
		if (base)
			munmap(base, len_);
	}
	Mapping(const Mapping &) = delete;
	Mapping &operator=(const Mapping &) = delete;
	int error() const { return err_; }

	uint8_t *base = nullptr;

private:
	uint64_t len_;
	int err_ = 0;
};

// The sources of process_vm_readv: a child process that holds @bytes
// (shared with us, so at the same address) and only waits; killed and
// reaped at the end, and by the kernel if we die first.
class SourceProcess {
public:
	explicit SourceProcess(uint64_t bytes) : mem(bytes, 0x5a, true)
	{
		if (!mem.base)
			return;
		const pid_t parent = getpid();

		pid = fork();
		if (pid == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() != parent)
				_exit(0);
			for (;;)
				pause();
		}
	}
	~SourceProcess()
	{
		if (pid > 0) {
			kill(pid, SIGKILL);
			waitpid(pid, nullptr, 0);
		}
	}
	SourceProcess(const SourceProcess &) = delete;
	SourceProcess &operator=(const SourceProcess &) = delete;

	Mapping mem;
	pid_t pid = -1;
};

uint32_t usable_cpus()
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
		return uint32_t(CPU_COUNT(&set));
	return std::max(1u, std::thread::hardware_concurrency());
}

// One copy of @len bytes; 0 or an errno.
int copy_once(CopyMethod m, pid_t from, uint8_t *dst, const uint8_t *src,
	      uint64_t len)
{
	if (m == CopyMethod::kMemcpy) {
		memcpy(dst, src, len);
		// Keep the compiler from dropping the copies.
		asm volatile("" : : "r"(dst) : "memory");
		return 0;
	}
	struct iovec local = { dst, len };
	struct iovec remote = { const_cast<uint8_t *>(src), len };
	const ssize_t n = process_vm_readv(from, &local, 1, &remote, 1, 0);

	if (n < 0)
		return errno;
	return uint64_t(n) == len ? 0 : EIO;
}

std::string cannot_map(uint64_t bytes, uint32_t threads, int err)
{
	return "--copy-capacity: cannot map " + format_size(bytes) + " for each of " +
	       std::to_string(threads) + " threads: " + strerror(err);
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
				   uint64_t footprint, double duration_s,
				   CopyMethod method)
{
	// Each thread cycles through at least two copies' worth.
	const uint64_t slots = std::max<uint64_t>(footprint / size, 2);
	const uint64_t bytes = slots * size;
	const bool cma = method == CopyMethod::kProcessVmReadv;
	CopyCapacity out{ threads, size, 0, 0, {} };
	// process_vm_readv's sources live in another process, one region a
	// thread; memcpy's in each thread's own.
	std::unique_ptr<SourceProcess> source;

	if (cma) {
		source = std::make_unique<SourceProcess>(bytes * threads);
		if (!source->mem.base)
			throw Error(cannot_map(bytes, threads, source->mem.error()));
		if (source->pid < 0)
			throw Error(std::string("--copy-capacity: fork: ") + strerror(errno));
		uint8_t probe;

		if (int e = copy_once(method, source->pid, &probe, source->mem.base, 1)) {
			out.error = std::string("process_vm_readv: ") + strerror(e);
			return out;
		}
	}
	std::atomic<uint32_t> ready{ 0 }, failed{ 0 };
	std::atomic<bool> go{ false }, stop{ false };
	std::atomic<uint64_t> copied{ 0 }, last_end{ 0 };
	std::atomic<int> map_err{ 0 }, copy_err{ 0 };
	std::vector<std::thread> pool;

	pool.reserve(threads);
	for (uint32_t t = 0; t < threads; t++) {
		pool.emplace_back([&, t] {
			Mapping dst(bytes, 0, false);
			std::unique_ptr<Mapping> own_src;
			const uint8_t *src = nullptr;

			if (cma) {
				src = source->mem.base + t * bytes;
			} else {
				own_src = std::make_unique<Mapping>(bytes, 0x5a, false);
				src = own_src->base;
			}
			if (!dst.base || !src) {
				map_err.store(dst.base ? own_src->error() : dst.error());
				failed.fetch_add(1);
				ready.fetch_add(1);
				return;
			}
			ready.fetch_add(1);
			while (!go.load(std::memory_order_acquire))
				std::this_thread::yield();
			const pid_t from = cma ? source->pid : 0;
			uint64_t n = 0, slot = 0;

			while (!stop.load(std::memory_order_relaxed)) {
				if (int e = copy_once(method, from, dst.base + slot * size,
						      src + slot * size, size)) {
					copy_err.store(e);
					break;
				}
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

		while (now_ns() < until && !stop_requested() && !copy_err.load())
			std::this_thread::sleep_for(std::chrono::microseconds(200));
	}
	stop.store(true);
	for (auto &th : pool)
		th.join();
	if (failed.load())
		throw Error(cannot_map(bytes, threads, map_err.load()));
	if (stop_requested())
		throw Interrupted();
	if (int e = copy_err.load()) {
		out.error = std::string(cma ? "process_vm_readv: " : "memcpy: ") +
			    strerror(e);
		return out;
	}
	out.seconds = double(last_end.load() - t0) / 1e9;
	out.bytes = copied.load();
	return out;
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
		fprintf(table, "# tb5-perf --copy-capacity: N threads copying at once, each "
			"through %s of its own, %.2f s a point, %u CPUs usable\n",
			format_size(opt.memcpy_footprint).c_str(), opt.duration_s,
			usable_cpus());
		fprintf(table, "# the simulator copies every byte twice (memcpy): hosts "
			"simulated on this machine carry at most '2 copies' together; "
			"process_vm_readv: one copy from another process\n");
		fprintf(table, "%10s %8s %12s %10s %10s %12s %10s\n", "size", "threads",
			"memcpy GB/s", "a thread", "2 copies", "vm_readv", "a thread");
	}
	std::string refused;

	for (uint64_t size : opt.bw_sizes) {
		for (uint32_t n : counts) {
			const CopyCapacity m = measure_copy_capacity(
				n, size, opt.memcpy_footprint, opt.duration_s,
				CopyMethod::kMemcpy);
			const CopyCapacity v = measure_copy_capacity(
				n, size, opt.memcpy_footprint, opt.duration_s,
				CopyMethod::kProcessVmReadv);
			nlohmann::json row = { { "size", size },
					       { "threads", n },
					       { "memcpy_seconds", m.seconds },
					       { "memcpy_bytes", m.bytes },
					       { "memcpy_gbps", m.gbps() },
					       { "two_copy_gbps", m.gbps() / 2 } };

			if (v.error.empty()) {
				row["vm_readv_seconds"] = v.seconds;
				row["vm_readv_bytes"] = v.bytes;
				row["vm_readv_gbps"] = v.gbps();
			} else {
				row["vm_readv_error"] = v.error;
				refused = v.error;
			}
			if (!opt.quiet) {
				char vr[32] = "-", vt[32] = "-";

				if (v.error.empty()) {
					snprintf(vr, sizeof(vr), "%.1f", v.gbps());
					snprintf(vt, sizeof(vt), "%.2f", v.gbps() / n);
				}
				fprintf(table, "%10s %8u %12.1f %10.2f %10.1f %12s %10s\n",
					format_size(size).c_str(), n, m.gbps(),
					m.gbps() / n, m.gbps() / 2, vr, vt);
				fflush(table);
			}
			doc["rows"].push_back(row);
		}
	}
	if (!refused.empty() && !opt.quiet)
		fprintf(table, "# vm_readv not measured: %s (a container's seccomp "
			"profile, or Yama's ptrace_scope)\n", refused.c_str());
	if (opt.format == Format::kJson)
		emit_document(opt.output, doc.dump(1) + "\n");
	return kExitOk;
}

} // namespace tb5perf
