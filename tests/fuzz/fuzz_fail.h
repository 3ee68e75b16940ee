// SPDX-License-Identifier: MIT
//
// fuzz_fail.h - how the harness reports a broken promise of the core: a line
// on stderr that says which, then abort(), which libFuzzer records as a crash
// with the input that caused it.
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

	fputs("tb5-fuzz: core contract broken: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

} // namespace tb5fuzz

#endif // TB5_FUZZ_FAIL_H
