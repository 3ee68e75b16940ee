// SPDX-License-Identifier: MIT
//
// measure.hpp - the two families of tests, each a client's and a server's
// half of one run (RunSpec). The client returns what it measured; the
// server answers with DONE (sent by the caller).
//
// bw, bibw and streams (bandwidth.cc): the client sends `count` messages on
// each of `streams` data endpoints (bibw: and the server as many back), with
// `window` in flight per endpoint and the receives posted ahead. The client
// times from READY (the server's receives are posted) to DONE (the server
// received everything).
//
// lat, jitter and lat-load (latency.cc): ping-pong on data endpoint 0. The
// client sends ping i and waits for pong i; one-way latency is half the
// round trip. Two receives stay posted ahead on both sides, so that the
// clear-to-send of the next message is on its way before the message is.
// lat-load adds a bulk stream client -> server on data endpoint 1 (the
// same direction as the pings) for as long as the pings run; the client
// then tells the server with END how many bulk messages it sent.
#ifndef TB5_PERF_MEASURE_HPP
#define TB5_PERF_MEASURE_HPP

#include "conn.hpp"
#include "run.hpp"

namespace tb5perf {

RunResult client_bandwidth(Conn &conn, const RunSpec &spec);
CtlMsg server_bandwidth(Conn &conn, const RunSpec &spec);

RunResult client_ping_pong(Conn &conn, const RunSpec &spec);
CtlMsg server_ping_pong(Conn &conn, const RunSpec &spec);

} // namespace tb5perf

#endif // TB5_PERF_MEASURE_HPP
