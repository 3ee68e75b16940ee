// SPDX-License-Identifier: MIT
//
// error.hpp - the calling thread's last error message (tb5_last_error()).
#ifndef TB5_LIB_ERROR_HPP
#define TB5_LIB_ERROR_HPP

namespace tb5 {

// Records a printf-style message for tb5_last_error() and returns @err
// (a negative errno), so that failures read `return fail(-EINVAL, ...)`.
[[gnu::format(printf, 2, 3)]] int fail(int err, const char *fmt, ...);
// Forget the last message: called at the start of every API call.
void clear_error();

} // namespace tb5

#endif // TB5_LIB_ERROR_HPP
