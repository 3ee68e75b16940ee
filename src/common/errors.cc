// SPDX-License-Identifier: MIT
//
// errors.cc - library error messages for the tools' Error (errors.hpp).
#include "errors.hpp"

#include "tb5/tb5.h"

namespace tb5::tools {

std::string api_message(const std::string &what, int err)
{
	const char *detail = tb5_last_error();
	std::string msg = what + ": " + tb5_strerror(err);

	if (detail && *detail)
		msg += std::string(" (") + detail + ")";
	return msg;
}

void throw_api(const std::string &what, int err)
{
	throw Error(api_message(what, err), err);
}

} // namespace tb5::tools
