// SPDX-License-Identifier: MIT
//
// latency.hpp - lat, jitter and lat-load: ping-pong on data endpoint 0. The
// client sends ping i and waits for pong i; one-way latency is half the
// round trip. Two receives stay posted ahead on both sides, so that the
// clear-to-send of the next message is on its way before the message is.
// lat-load adds a bulk stream client -> server on data endpoint 1 (the
// same direction as the pings) for as long as the pings run; the client
// then tells the server with END how many bulk messages it sent.
#ifndef TB5_PERF_LATENCY_HPP
#define TB5_PERF_LATENCY_HPP

#include "conn.hpp"
#include "run.hpp"

namespace tb5perf {

RunResult client_ping_pong(Conn &conn, const RunSpec &spec);
// Answers with DONE (sent by the caller).
CtlMsg server_ping_pong(Conn &conn, const RunSpec &spec);

} // namespace tb5perf

#endif // TB5_PERF_LATENCY_HPP
