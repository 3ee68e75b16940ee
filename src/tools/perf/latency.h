// SPDX-License-Identifier: MIT
//
// latency.h - lat, jitter and lat-load: ping-pong on data endpoint 0. The
// client sends ping i and waits for pong i; one-way latency is half the
// round trip. Two receives stay posted ahead on both sides, so that the
// clear-to-send of the next message is on its way before the message is.
// lat-load adds a bulk stream client -> server on data endpoint 1 (the
// same direction as the pings) for as long as the pings run; the client
// then tells the server with END how many bulk messages it sent.
#ifndef TB5_PERF_LATENCY_H
#define TB5_PERF_LATENCY_H

#include "conn.h"
#include "run.h"

namespace tb5perf {

RunResult ClientPingPong(Conn &conn, const RunSpec &spec);
// Answers with DONE (sent by the caller).
CtlMsg ServerPingPong(Conn &conn, const RunSpec &spec);

} // namespace tb5perf

#endif // TB5_PERF_LATENCY_H
