// SPDX-License-Identifier: MIT
//
// errors.hpp - how tb5-perf fails. Everything below main() throws; main()
// turns the exception into a message and an exit status:
//   Error        a test failed, the peer went away, a library call failed: 1
//   UsageError   bad options or arguments: 2
//   Interrupted  SIGINT/SIGTERM: 1 for a client, 0 for a server
#ifndef TB5_PERF_ERRORS_HPP
#define TB5_PERF_ERRORS_HPP

#include <stdexcept>
#include <string>

namespace tb5perf {

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;

class Error : public std::runtime_error {
public:
	using std::runtime_error::runtime_error;
};

class UsageError : public Error {
public:
	using Error::Error;
};

class Interrupted : public Error {
public:
	Interrupted() : Error("interrupted") {}
};

// "<what>: <tb5_strerror(err)> (<tb5_last_error()>)". Call it on the thread
// that made the failed call, right after it: the detail is per thread.
std::string api_message(const std::string &what, int err);

[[noreturn]] void throw_api(const std::string &what, int err);

// Throws for a negative return value; passes counts through.
inline int check(int ret, const char *what)
{
	if (ret < 0)
		throw_api(what, ret);
	return ret;
}

// Set by the SIGINT/SIGTERM handler (main.cc); every wait loop looks at it.
bool stop_requested();
void install_stop_handlers();

} // namespace tb5perf

#endif // TB5_PERF_ERRORS_HPP
