// SPDX-License-Identifier: MIT
//
// errors.hpp - how the tools fail (docs/architecture.md, "C++ style"):
// code below main() throws an Error with the message the user reads, and
// main() (or a loop that goes on past one failed item: a server's
// connection, a selftest check) catches it. main() turns it into an exit
// status:
//   Error        a test or check failed, the peer went away, a library
//                call failed: kExitFailed
//   UsageError   bad options, arguments or configuration: kExitUsage
//   Interrupted  SIGINT/SIGTERM: as the tool documents it
// Nothing here is thrown into libtb5 or the plugin: the functions of
// src/common that the plugin calls too return a negative errno.
#ifndef TB5_COMMON_ERRORS_HPP
#define TB5_COMMON_ERRORS_HPP

#include <stdexcept>
#include <string>

namespace tb5::tools {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 2;

class Error : public std::runtime_error {
public:
	// @code: the negative errno behind it, 0 when there is none.
	explicit Error(const std::string &what, int code = 0)
		: std::runtime_error(what), code_(code)
	{
	}
	int code() const { return code_; }

private:
	int code_;
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

// Throws Error(api_message(@what, @err), @err).
[[noreturn]] void throw_api(const std::string &what, int err);

// Throws for a negative return value of libtb5; passes counts through.
inline int check(int ret, const char *what)
{
	if (ret < 0)
		throw_api(what, ret);
	return ret;
}

} // namespace tb5::tools

#endif // TB5_COMMON_ERRORS_HPP
