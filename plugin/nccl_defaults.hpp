// SPDX-License-Identifier: MIT
//
// nccl_defaults.hpp - NCCL settings the plugin gives a job that leaves
// them unset (nccl_defaults.cc).
#ifndef TB5_PLUGIN_NCCL_DEFAULTS_HPP
#define TB5_PLUGIN_NCCL_DEFAULTS_HPP

namespace tb5net {

// Sets, once per process and only where neither the environment nor
// TB5_NCCL_DEFAULTS=0 says otherwise, the NCCL variables that suit a
// Thunderbolt link. Called from init() once tb5 has links to offer.
void apply_nccl_defaults();

} // namespace tb5net

#endif // TB5_PLUGIN_NCCL_DEFAULTS_HPP
