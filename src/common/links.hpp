// SPDX-License-Identifier: MIT
//
// links.hpp - the links of this host, as the tools want them: a vector,
// nothing to free.
#ifndef TB5_COMMON_LINKS_HPP
#define TB5_COMMON_LINKS_HPP

#include <vector>

#include "tb5/tb5.h"

namespace tb5::tools {

// tb5_list_links() into @links (cleared first); 0 or its negative errno.
int list_links(std::vector<tb5_link_info> *links);

} // namespace tb5::tools

#endif // TB5_COMMON_LINKS_HPP
