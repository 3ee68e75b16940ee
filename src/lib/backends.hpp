// SPDX-License-Identifier: MIT
//
// backends.hpp - what api.cc needs from each backend.
#pragma once

#include <vector>

#include "objects.hpp"

namespace tb5 {

namespace kernel {
int list_links(std::vector<tb5_link_info> &out);
int open(const char *name, tb5_device **dev);
} // namespace kernel

namespace sim {
// True while the environment selects the simulator (TB5_SIM is set).
bool selected();
int list_links(std::vector<tb5_link_info> &out);
int open(const char *name, tb5_device **dev);
} // namespace sim

} // namespace tb5
