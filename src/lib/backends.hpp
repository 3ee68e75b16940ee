// SPDX-License-Identifier: MIT
//
// backends.hpp - what api.cc needs from each backend.
#ifndef TB5_LIB_BACKENDS_HPP
#define TB5_LIB_BACKENDS_HPP

#include <cstdint>
#include <vector>

#include "objects.hpp"
#include "tb5_core.h"

namespace tb5 {

// The completion queue a device asks for, in entries: TB5_CQ_ENTRIES if set,
// else TB5_CQ_ENTRIES_DEFAULT. One number for both backends, which refuse
// (-EINVAL) what is not a power of two in 64..65536 by the same rule
// (tb5_cq_acct_init() of the core).
uint32_t cq_entries();
// -ENOSPC with the same message from both backends: @what (a post, a
// listen...) on the device of link @name found no completion queue entry
// left to promise.
int fail_cq_full(const char *name, uint32_t entries, const char *what);
// A link's drop counters from its counts by kind, indexed by the core's
// enum tb5_drop_kind (the module's TB5_UAPI_DROP_* are the same numbers:
// both the module and the kernel backend assert it).
template <typename Count>
void fill_drops(const Count (&by_kind)[TB5_DROP_KINDS], tb5_drops *d)
{
	*d = {};
	d->malformed = by_kind[TB5_DROP_MALFORMED];
	d->unknown_connection = by_kind[TB5_DROP_UNKNOWN_CONN];
	d->out_of_window = by_kind[TB5_DROP_OUT_OF_WINDOW];
	d->ring_overflow = by_kind[TB5_DROP_OVERFLOW];
	d->sequence_gap = by_kind[TB5_DROP_SEQ_GAP];
}

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

#endif // TB5_LIB_BACKENDS_HPP
