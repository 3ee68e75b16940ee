// SPDX-License-Identifier: MIT
//
// collect.hpp - one snapshot of this host: libtb5's links and their
// counters, and the NCCL plugin's live counters.
#pragma once

#include "metrics.hpp"

namespace tb5exporter {

Snapshot collect();

} // namespace tb5exporter
