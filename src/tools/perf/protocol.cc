// SPDX-License-Identifier: MIT
//
// protocol.cc - control messages.
#include "protocol.hpp"

#include <algorithm>
#include <cstring>

#include "errors.hpp"

namespace tb5perf {

CtlMsg make_ctl(CtlType type)
{
	CtlMsg msg;

	msg.type = static_cast<uint16_t>(type);
	return msg;
}

const char *ctl_type_name(uint16_t type)
{
	switch (static_cast<CtlType>(type)) {
	case CtlType::kHello: return "HELLO";
	case CtlType::kWelcome: return "WELCOME";
	case CtlType::kBusy: return "BUSY";
	case CtlType::kOpen: return "OPEN";
	case CtlType::kJoin: return "JOIN";
	case CtlType::kOpened: return "OPENED";
	case CtlType::kRun: return "RUN";
	case CtlType::kReady: return "READY";
	case CtlType::kDone: return "DONE";
	case CtlType::kEnd: return "END";
	case CtlType::kClose: return "CLOSE";
	case CtlType::kClosed: return "CLOSED";
	case CtlType::kBye: return "BYE";
	case CtlType::kError: return "ERROR";
	}
	return "unknown";
}

void set_text(CtlMsg &msg, const std::string &text)
{
	const size_t n = std::min(text.size(), sizeof(msg.text) - 1);

	memset(msg.text, 0, sizeof(msg.text));
	memcpy(msg.text, text.data(), n);
}

std::string text(const CtlMsg &msg)
{
	return std::string(msg.text, strnlen(msg.text, sizeof(msg.text)));
}

void validate_ctl(const CtlMsg &msg)
{
	if (msg.magic != kCtlMagic)
		throw Error("the peer is not a tb5-perf of this protocol (bad "
			    "magic in a control message)");
	if (msg.version != kCtlVersion)
		throw Error("the peer speaks tb5-perf control protocol version " +
			    std::to_string(msg.version) + ", this one " +
			    std::to_string(kCtlVersion));
}

} // namespace tb5perf
