// SPDX-License-Identifier: MIT
//
// launch.hpp - the one-command modes, which start both sides themselves.
//   --loop: finds a loop pair among the local links (two links that are
//     each other's other end: one's peer_host is the other's local_host), runs the server in a thread on one end and the client on
//     the other. With --sim: over the simulator's in-process loop pair, on a
//     fabric of its own.
//   --sim: puts this process in slot 0 of a new simulated fabric
//     (TB5_SIM=<unique>:hosts=2,host=0), starts `tb5-perf --server --once`
//     as a child process in slot 1, and runs the client over the mesh link
//     sim_h1: a measurement across two processes. The child dies with us,
//     whatever way we end.
#ifndef TB5_PERF_LAUNCH_HPP
#define TB5_PERF_LAUNCH_HPP

#include "options.hpp"

namespace tb5perf {

int run_loop(const Options &opt);
int run_sim(const Options &opt);
// --list: one line per link.
int list_links_command();
// --counters: the NCCL plugin's live per-link counters (table, or JSON).
int counters_command(bool json);

} // namespace tb5perf

#endif // TB5_PERF_LAUNCH_HPP
