// SPDX-License-Identifier: MIT
//
// fuzz_fail.h - how a harness reports a broken promise of the code under
// test: a line on stderr that says which, then abort(), which libFuzzer
// records as a crash with the input that caused it; and whether it traces.
#ifndef TB5_FUZZ_FAIL_H
#define TB5_FUZZ_FAIL_H

#include <cstdarg>
#include <cstdio>
#include <cstdlib>

namespace tb5fuzz {

[[noreturn]] __attribute__((format(printf, 1, 2))) inline void
Fail(const char *fmt, ...)
{
	va_list ap;

	fputs("tb5-fuzz: contract broken: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

// TB5_FUZZ_TRACE=1 prints what the code under test reported, to check that
// a seed reaches the path it was written for.
inline bool Tracing()
{
	static const bool on = getenv("TB5_FUZZ_TRACE") != nullptr;

	return on;
}

} // namespace tb5fuzz

#endif // TB5_FUZZ_FAIL_H
