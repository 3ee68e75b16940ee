// SPDX-License-Identifier: MIT
//
// checks.hpp - the groups of checks, in the order tb5-selftest runs them.
#ifndef TB5_SELFTEST_CHECKS_HPP
#define TB5_SELFTEST_CHECKS_HPP

#include "options.hpp"
#include "report.hpp"

#include <string>

namespace tb5selftest {

// What the environment says about where links come from.
struct Environment {
	std::string sim;		// TB5_SIM, "" when not set
	bool module_loaded = false;	// /sys/module/tb5 exists
};

Environment detect_environment();

// module, abi, params, node:<n>, perms:<n>   (checks_kernel.cc)
void run_kernel_checks(const Environment &env, const Options &opt, Report &report);
// secureboot                                 (checks_secureboot.cc)
void run_secureboot_check(const Environment &env, Report &report);
// link:<name>, roundtrip:<name>              (checks_links.cc)
void run_link_checks(const Environment &env, const Options &opt, Report &report);
// gpu:<name>                                 (checks_gpu.cc)
void run_gpu_checks(const Environment &env, const Options &opt, Report &report);
// plugin                                     (checks_plugin.cc)
void run_plugin_check(const Options &opt, Report &report);
// counters                                   (checks_counters.cc)
void run_counters_check(Report &report);

// --respond                                  (respond.cc): 0, or 1 when a
// connection failed; throws tb5::tools::Error when there is nothing to serve.
int run_responder(const Options &opt);

} // namespace tb5selftest

#endif // TB5_SELFTEST_CHECKS_HPP
