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

#include <sys/types.h>

#include <string>

#include "options.hpp"

namespace tb5perf {

// A fabric name no other run uses, "<prefix>-<pid>-<random>":
// [A-Za-z0-9_.-], at most 64 characters.
std::string unique_fabric(const char *prefix);
// A TB5_SIM value: @fabric, then --sim-options, then @ours (which decide).
// Throws UsageError for --sim-options that name a fabric.
std::string sim_spec(const std::string &fabric, const Options &opt,
		    const std::string &ours);
// Sets TB5_SIM to @spec; throws Error when it cannot.
void set_sim(const std::string &spec);

// fork() for a child that dies with this process, however it ends
// (PR_SET_PDEATHSIG): 0 in the child, its pid here. Throws Error when
// fork() fails.
pid_t fork_child();

int run_loop(const Options &opt);
int run_sim(const Options &opt);
// --list: one line per link.
int list_links_command();
// --counters: the NCCL plugin's live per-link counters (table, or JSON).
int counters_command(bool json);

} // namespace tb5perf

#endif // TB5_PERF_LAUNCH_HPP
