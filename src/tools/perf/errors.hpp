// SPDX-License-Identifier: MIT
//
// errors.hpp - how tb5-perf fails: the tools' errors (common/errors.hpp),
// named in tb5perf. Everything below main() throws; main() turns the
// exception into a message and an exit status:
//   Error        a test failed, the peer went away, a library call failed: 1
//   UsageError   bad options or arguments: 2
//   Interrupted  SIGINT/SIGTERM: 1 for a client, 0 for a server
#ifndef TB5_PERF_ERRORS_HPP
#define TB5_PERF_ERRORS_HPP

#include "common/errors.hpp"

namespace tb5perf {

using tb5::tools::api_message;
using tb5::tools::check;
using tb5::tools::Error;
using tb5::tools::Interrupted;
using tb5::tools::kExitFailed;
using tb5::tools::kExitOk;
using tb5::tools::kExitUsage;
using tb5::tools::throw_api;
using tb5::tools::UsageError;

// Set by the SIGINT/SIGTERM handler (main.cc); every wait loop looks at it.
bool stop_requested();
void install_stop_handlers();

} // namespace tb5perf

#endif // TB5_PERF_ERRORS_HPP
