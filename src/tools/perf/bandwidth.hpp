// SPDX-License-Identifier: MIT
//
// bandwidth.hpp - bw, bibw and streams: the client sends `count` messages on
// each of `streams` data endpoints (bibw: and the server as many back), with
// `window` in flight per endpoint and the receives posted ahead. The client
// times from READY (the server's receives are posted) to DONE (the server
// received everything).
#ifndef TB5_PERF_BANDWIDTH_HPP
#define TB5_PERF_BANDWIDTH_HPP

#include "conn.hpp"
#include "run.hpp"

namespace tb5perf {

RunResult client_bandwidth(Conn &conn, const RunSpec &spec);
// Answers with DONE (sent by the caller).
CtlMsg server_bandwidth(Conn &conn, const RunSpec &spec);

} // namespace tb5perf

#endif // TB5_PERF_BANDWIDTH_HPP
