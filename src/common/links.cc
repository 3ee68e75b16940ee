// SPDX-License-Identifier: MIT
//
// links.cc - the links of this host, copied out of libtb5's list.
#include "links.hpp"

#include <cstddef>

namespace tb5::tools {

int list_links(std::vector<tb5_link_info> *links)
{
	tb5_link_info *list = nullptr;
	size_t count = 0;

	links->clear();
	if (const int err = tb5_list_links(&list, &count); err < 0)
		return err;
	links->assign(list, list + count);
	tb5_free_link_list(list);
	return 0;
}

} // namespace tb5::tools
