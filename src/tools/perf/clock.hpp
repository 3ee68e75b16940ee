// SPDX-License-Identifier: MIT
//
// clock.hpp - the one clock tb5-perf measures with: CLOCK_MONOTONIC in
// nanoseconds (a vDSO call, no system call); and the process's CPU time,
// for the CPU cost of moving data.
#ifndef TB5_PERF_CLOCK_HPP
#define TB5_PERF_CLOCK_HPP

#include <time.h>

#include <cstdint>

namespace tb5perf {

inline uint64_t now_ns()
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull +
	       static_cast<uint64_t>(ts.tv_nsec);
}

// CPU time of every thread of this process (user and system), so that
// the simulator's copy workers count with the polling thread.
inline uint64_t process_cpu_ns()
{
	struct timespec ts;

	if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts))
		return 0;
	return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull +
	       static_cast<uint64_t>(ts.tv_nsec);
}

inline double seconds(uint64_t ns)
{
	return static_cast<double>(ns) / 1e9;
}

} // namespace tb5perf

#endif // TB5_PERF_CLOCK_HPP
