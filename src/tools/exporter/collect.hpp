// SPDX-License-Identifier: MIT
//
// collect.hpp - one snapshot of this host: libtb5's links and their
// counters, and the NCCL plugin's live counters.
#ifndef TB5_EXPORTER_COLLECT_HPP
#define TB5_EXPORTER_COLLECT_HPP

#include "metrics.hpp"

namespace tb5exporter {

Snapshot collect();

} // namespace tb5exporter

#endif // TB5_EXPORTER_COLLECT_HPP
