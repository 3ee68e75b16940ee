// SPDX-License-Identifier: MIT
//
// sysfs.cc - reading /sys/class/tb5.
#include "kernel/sysfs.hpp"

#include <dirent.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "tb5_uapi.h"

namespace tb5::kernel {
namespace {

std::string env_or(const char *var, const char *def)
{
	const char *v = getenv(var);

	return v && *v ? v : def;
}

bool parse_u64(const std::string &s, uint64_t &out)
{
	char *end = nullptr;

	errno = 0;
	out = strtoull(s.c_str(), &end, 0);
	return !errno && end != s.c_str() && *end == '\0';
}

} // namespace

std::string class_dir()
{
	return env_or("TB5_SYSFS_CLASS", "/sys/class/tb5");
}

std::string dev_dir()
{
	return env_or("TB5_DEV_DIR", "/dev");
}

std::optional<unsigned> parse_link_name(const std::string &name)
{
	if (name.size() < 5 || name.size() > 12 || name.compare(0, 4, "tb5_"))
		return std::nullopt;
	unsigned n = 0;

	for (size_t i = 4; i < name.size(); i++) {
		if (name[i] < '0' || name[i] > '9')
			return std::nullopt;
		n = n * 10 + unsigned(name[i] - '0');
	}
	if (name.size() > 5 && name[4] == '0')
		return std::nullopt;	// no leading zeros: one name per link
	return n;
}

std::vector<std::string> link_names()
{
	std::vector<std::pair<unsigned, std::string>> found;
	DIR *d = opendir(class_dir().c_str());

	if (!d)
		return {};
	while (struct dirent *e = readdir(d)) {
		if (auto n = parse_link_name(e->d_name))
			found.emplace_back(*n, e->d_name);
	}
	closedir(d);
	std::sort(found.begin(), found.end());
	std::vector<std::string> names;

	for (auto &[n, name] : found)
		names.push_back(name);
	return names;
}

std::optional<std::string> read_attr(const std::string &path)
{
	std::ifstream f(path);
	std::string line;

	if (!f || !std::getline(f, line))
		return std::nullopt;
	return line;
}

bool read_link(const std::string &name, tb5_link_info &info)
{
	const std::string dir = class_dir() + "/" + name + "/";
	auto n = parse_link_name(name);
	auto state = read_attr(dir + "state");
	uint64_t v = 0;

	if (!n || !state)
		return false;
	info = {};
	snprintf(info.name, sizeof(info.name), "%s", name.c_str());
	info.backend = TB5_BACKEND_KERNEL;
	info.index = *n;
	info.state = *state == "ready" ? TB5_LINK_STATE_READY :
		     *state == "up"    ? TB5_LINK_STATE_UP :
					 TB5_LINK_STATE_DOWN;
	if (auto s = read_attr(dir + "host_id"); s && parse_u64(*s, v))
		info.local_host = v;
	if (auto s = read_attr(dir + "peer_id"); s && parse_u64(*s, v) &&
	    info.state == TB5_LINK_STATE_READY)
		info.peer_host = v;
	if (auto s = read_attr(dir + "ring_size"); s && parse_u64(*s, v))
		info.ring_size = uint32_t(v);
	if (auto s = read_attr(dir + "speed_mbps"); s && parse_u64(*s, v))
		info.speed_mbps = uint32_t(v);
	info.max_frame = TB5_UAPI_FRAME_MAX;
	info.max_ops = TB5_UAPI_EP_OPS_MAX;
	info.max_msg = TB5_UAPI_MSG_MAX;
	info.caps = TB5_CAP_HOST_MEM | TB5_CAP_DMABUF;
	if (read_attr(dir + "plugged"))
		info.caps |= TB5_CAP_LOOP;
	return true;
}

} // namespace tb5::kernel
