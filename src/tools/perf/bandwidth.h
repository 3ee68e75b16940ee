// SPDX-License-Identifier: MIT
//
// bandwidth.h - bw, bibw and streams: the client sends `count` messages on
// each of `streams` data endpoints (bibw: and the server as many back), with
// `window` in flight per endpoint and the receives posted ahead. The client
// times from READY (the server's receives are posted) to DONE (the server
// received everything).
#ifndef TB5_PERF_BANDWIDTH_H
#define TB5_PERF_BANDWIDTH_H

#include "conn.h"
#include "run.h"

namespace tb5perf {

RunResult ClientBandwidth(Conn &conn, const RunSpec &spec);
// Answers with DONE (sent by the caller).
CtlMsg ServerBandwidth(Conn &conn, const RunSpec &spec);

} // namespace tb5perf

#endif // TB5_PERF_BANDWIDTH_H
