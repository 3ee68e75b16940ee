// SPDX-License-Identifier: MIT
//
// checks_kernel.cc - the checks of the kernel side: module (loaded, its
// version against libtb5's), abi (libtb5 opens a device of it), params
// (ring_size, loopback) and, for every link end, node:<n> (/dev/tb5_<n> is
// the right character device and the caller can open it) and perms:<n>
// (group tb5, mode 0660, never world-accessible).
#include "checks.hpp"

#include "tb5/tb5.h"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

namespace tb5selftest {
namespace {

// Where the module shows itself. Tests point these at a fake tree:
// TB5_SYSFS_CLASS and TB5_DEV_DIR are libtb5's own (it opens what the
// checks look at), TB5_SYSFS_MODULE is this tool's.
std::string from_env(const char *name, const char *fallback)
{
	const char *value = getenv(name);

	return value && *value ? value : fallback;
}

std::string module_dir()
{
	return from_env("TB5_SYSFS_MODULE", "/sys/module/tb5");
}

std::string class_dir()
{
	return from_env("TB5_SYSFS_CLASS", "/sys/class/tb5");
}

std::string dev_dir()
{
	return from_env("TB5_DEV_DIR", "/dev");
}

// The first line of a sysfs file, without trailing white space.
bool read_line(const std::string &path, std::string *out)
{
	std::ifstream in(path);

	if (!in || !std::getline(in, *out))
		return false;
	while (!out->empty() && isspace(static_cast<unsigned char>(out->back())))
		out->pop_back();
	return true;
}

bool parse_unsigned(const std::string &s, unsigned long *value)
{
	char *end = nullptr;

	if (s.empty() || !isdigit(static_cast<unsigned char>(s[0])))
		return false;
	errno = 0;
	*value = strtoul(s.c_str(), &end, 10);
	return !errno && end && !*end;
}

// "0.1.0" -> {0, 1}; false when it is not a version.
bool major_minor(const std::string &version, std::pair<unsigned long, unsigned long> *mm)
{
	unsigned long major = 0, minor = 0;
	char dot = 0;
	std::istringstream in(version);

	if (!(in >> major >> dot) || dot != '.' || !(in >> minor))
		return false;
	*mm = {major, minor};
	return true;
}

// Why the kernel checks do not apply, or "" when they do.
std::string kernel_skip_reason(const Environment &env)
{
	if (env.module_loaded)
		return "";
	if (!env.sim.empty())
		return std::string(tb5_backend_str(TB5_BACKEND_SIM)) + " selected (TB5_SIM=" + env.sim +
		       ")";
	return "module not loaded";
}

// Where modules.dep of the running kernel puts tb5.ko, or "".
std::string installed_module()
{
	struct utsname uts {};

	if (uname(&uts))
		return "";
	std::ifstream dep(std::string("/lib/modules/") + uts.release + "/modules.dep");
	std::string line;
	while (std::getline(dep, line)) {
		const std::string path = line.substr(0, line.find(':'));
		const size_t slash = path.rfind('/');
		const std::string base = path.substr(slash == std::string::npos ? 0 : slash + 1);

		if (base == "tb5.ko" || base.rfind("tb5.ko.", 0) == 0)
			return path;
	}
	return "";
}

// The link ends /sys/class/tb5/tb5_<n>, sorted by <n>.
std::vector<std::pair<unsigned long, std::string>> link_ends()
{
	std::vector<std::pair<unsigned long, std::string>> ends;
	DIR *dir = opendir(class_dir().c_str());

	if (!dir)
		return ends;
	while (const struct dirent *de = readdir(dir)) {
		const std::string name = de->d_name;
		unsigned long n = 0;

		if (name.rfind("tb5_", 0) == 0 && parse_unsigned(name.substr(4), &n))
			ends.emplace_back(n, name);
	}
	closedir(dir);
	std::sort(ends.begin(), ends.end());
	return ends;
}

std::string user_name()
{
	const struct passwd *pw = getpwuid(geteuid());

	return pw ? pw->pw_name : format("uid %u", static_cast<unsigned>(geteuid()));
}

bool process_in_group(gid_t gid)
{
	if (getegid() == gid)
		return true;
	const int n = getgroups(0, nullptr);
	if (n <= 0)
		return false;
	std::vector<gid_t> groups(static_cast<size_t>(n));
	const int got = getgroups(n, groups.data());
	return got > 0 && std::find(groups.begin(), groups.begin() + got, gid) != groups.begin() + got;
}

bool group_lists_user(const struct group *gr, const std::string &user)
{
	for (char **m = gr->gr_mem; m && *m; m++) {
		if (user == *m)
			return true;
	}
	return false;
}

std::string group_name(gid_t gid)
{
	const struct group *gr = getgrgid(gid);

	return gr ? gr->gr_name : format("%u", static_cast<unsigned>(gid));
}

std::string owner_name(uid_t uid)
{
	const struct passwd *pw = getpwuid(uid);

	return pw ? pw->pw_name : format("%u", static_cast<unsigned>(uid));
}

const char kUdevHint[] =
	"install tb5-dkms (its udev rule gives the nodes group tb5, mode 0660), "
	"then: udevadm control --reload && udevadm trigger --subsystem-match=tb5";

void check_module(const Environment &env, Report &report)
{
	if (!env.module_loaded) {
		if (!env.sim.empty()) {
			report.add(skip("module", "", kernel_skip_reason(env)));
			return;
		}
		struct utsname uts {};
		uname(&uts);
		const std::string installed = installed_module();
		if (!installed.empty())
			report.add(fail("module", "tb5 is not loaded (" + installed + " is installed)",
					"modprobe tb5 (add loopback=1 for a loop pair without a cable)"));
		else
			report.add(fail("module",
					format("tb5 is not loaded, and no tb5.ko is installed for kernel %s",
					       uts.release),
					format("install tb5-dkms (DKMS builds tb5.ko for every installed kernel; "
					       "it needs the headers: linux-headers-%s), then modprobe tb5",
					       uts.release)));
		return;
	}

	const std::string lib = tb5_version();
	std::string state;
	std::string version;

	if (read_line(module_dir() + "/initstate", &state) && state != "live") {
		report.add(fail("module", "tb5 is loaded but " + state + " (not live)",
				"wait for modprobe/rmmod to finish; see dmesg | grep tb5"));
		return;
	}
	if (!read_line(module_dir() + "/version", &version)) {
		report.add(pass("module", "tb5 loaded (it reports no version; libtb5 " + lib + ")"));
		return;
	}
	Result r;
	std::pair<unsigned long, unsigned long> mod_mm, lib_mm;
	if (version == lib) {
		r = pass("module", "tb5 " + version + " loaded, the same release as libtb5");
	} else if (major_minor(version, &mod_mm) && major_minor(lib, &lib_mm) && mod_mm == lib_mm) {
		r = pass("module", "tb5 " + version + " loaded; libtb5 is " + lib +
			 " (same major.minor, patch levels differ)");
	} else {
		r = fail("module", "tb5 " + version + " loaded but libtb5 is " + lib,
			 "install tb5-dkms and libtb5 of one release; if they are, the old module is "
			 "still loaded: modprobe -r tb5 && modprobe tb5");
	}
	r.data["module_version"] = version;
	r.data["library_version"] = lib;
	report.add(std::move(r));
}

void check_abi(const Environment &env, Report &report)
{
	const std::string why_skip = kernel_skip_reason(env);

	if (!why_skip.empty()) {
		report.add(skip("abi", "", why_skip));
		return;
	}
	if (!env.sim.empty()) {
		report.add(skip("abi", "", "TB5_SIM=" + env.sim +
				" makes libtb5 open simulator links only; unset TB5_SIM to check the module's ABI"));
		return;
	}
	const auto ends = link_ends();
	if (ends.empty()) {
		report.add(skip("abi", "", "no /dev/tb5_* to open: no cable and no loop pair"));
		return;
	}
	std::string denied;
	for (const auto &[index, name] : ends) {
		tb5_device *dev = nullptr;
		const int err = tb5_open(name.c_str(), &dev);

		if (!err) {
			tb5_close(dev);
			report.add(pass("abi", "libtb5 " + std::string(tb5_version()) + " opened " + name +
					": the module speaks its ABI"));
			return;
		}
		if (err == -EPROTONOSUPPORT) {
			// A version mismatch, not a protocol break: the
			// message names both ABI versions.
			report.add(fail("abi", std::string("ABI version mismatch opening ") + name +
					": " + tb5_last_error(),
					"install tb5-dkms and libtb5 of one release, then reload the module "
					"(modprobe -r tb5 && modprobe tb5)"));
			return;
		}
		if (err == -EACCES || err == -EPERM) {
			denied = name;
			continue;
		}
		report.add(fail("abi", "tb5_open(" + name + "): " + tb5_strerror(err) + ": " +
				tb5_last_error(),
				err == -ENOTTY ? "the node is not the tb5 module's device: see node:" + name
					       : std::string("see dmesg | grep tb5")));
		return;
	}
	report.add(skip("abi", "", "could not open any /dev/tb5_*: permission denied (see node:" + denied + ")"));
}

void check_params(const Environment &env, Report &report)
{
	const std::string why_skip = kernel_skip_reason(env);
	const std::string dir = module_dir() + "/parameters/";
	const char not_ours[] = "this tb5 module is not the one of tb5-dkms; install tb5-dkms and reload it";

	if (!why_skip.empty()) {
		report.add(skip("params", "", why_skip));
		return;
	}
	std::string ring_s, loop_s;
	unsigned long ring = 0, loop = 0;
	if (!read_line(dir + "ring_size", &ring_s) || !read_line(dir + "loopback", &loop_s)) {
		report.add(fail("params", "no ring_size or loopback in " + dir, not_ours));
		return;
	}
	if (!parse_unsigned(ring_s, &ring) || ring < 64 || ring > 16384 || (ring & (ring - 1))) {
		report.add(fail("params", "ring_size=" + ring_s + " is not a power of two in 64..16384",
				not_ours));
		return;
	}
	if (!parse_unsigned(loop_s, &loop) || loop > 16) {
		report.add(fail("params", "loopback=" + loop_s + " is not in 0..16", not_ours));
		return;
	}
	Result r = pass("params", format("ring_size=%lu loopback=%lu", ring, loop));
	r.data["ring_size"] = ring;
	r.data["loopback"] = loop;
	report.add(std::move(r));
}

// What to do when the caller may not open a node.
std::string access_hint(const struct stat &st, const struct group *tb5)
{
	const std::string user = user_name();

	if (!tb5)
		return "no group tb5 exists: " + std::string(kUdevHint);
	if (st.st_gid != tb5->gr_gid)
		return "the node is not group tb5 (see the perms check): " + std::string(kUdevHint);
	if (group_lists_user(tb5, user) && !process_in_group(tb5->gr_gid))
		return user + " is in group tb5 but this session is not: log in again (or run newgrp tb5)";
	return "add yourself to group tb5: sudo usermod -aG tb5 " + user + ", then log in again";
}

void check_node(const std::string &name, const struct group *tb5, Report &report)
{
	const std::string path = dev_dir() + "/" + name;
	const std::string check = "node:" + name;
	const std::string sys_dev = class_dir() + "/" + name + "/dev";
	std::string want;
	unsigned maj = 0, min = 0;
	struct stat st {};

	if (!read_line(sys_dev, &want) || sscanf(want.c_str(), "%u:%u", &maj, &min) != 2) {
		report.add(fail(check, "cannot read " + sys_dev, "see dmesg | grep tb5"));
		return;
	}
	if (stat(path.c_str(), &st)) {
		const int err = errno;
		report.add(fail(check, path + ": " + strerror(err),
				err == ENOENT ? "udev did not create it: check that systemd-udevd runs, then "
						"udevadm trigger --subsystem-match=tb5"
					      : ""));
		return;
	}
	if (!S_ISCHR(st.st_mode)) {
		report.add(fail(check, path + " is not a character device",
				"remove it and run udevadm trigger --subsystem-match=tb5"));
		return;
	}
	if (major(st.st_rdev) != maj || minor(st.st_rdev) != min) {
		report.add(fail(check, format("%s is %u:%u but the module's %s is %u:%u", path.c_str(),
					      major(st.st_rdev), minor(st.st_rdev), name.c_str(), maj, min),
				"a stale node: remove it and run udevadm trigger --subsystem-match=tb5"));
		return;
	}
	const std::string what = format("%s char %u:%u, %s:%s %04o", path.c_str(), maj, min,
					owner_name(st.st_uid).c_str(), group_name(st.st_gid).c_str(),
					static_cast<unsigned>(st.st_mode & 07777));
	const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		const int err = errno;
		report.add(fail(check, what + "; " + user_name() + " cannot open it read-write: " + strerror(err),
				err == EACCES || err == EPERM ? access_hint(st, tb5) : "see dmesg | grep tb5"));
		return;
	}
	close(fd);
	report.add(pass(check, what + ", opens read-write"));
}

void check_perms(const std::string &name, const struct group *tb5, Report &report)
{
	const std::string path = dev_dir() + "/" + name;
	const std::string check = "perms:" + name;
	struct stat st {};

	if (stat(path.c_str(), &st)) {
		report.add(skip(check, "", path + " missing (see node:" + name + ")"));
		return;
	}
	const unsigned mode = st.st_mode & 07777;
	const std::string what = format("%s:%s %04o", owner_name(st.st_uid).c_str(),
					group_name(st.st_gid).c_str(), mode);
	if (mode & 0007) {
		report.add(fail(check, what + ": every user of this host can use the link", kUdevHint));
		return;
	}
	if (!tb5) {
		report.add(skip(check, what + ", not world-accessible",
				"no group tb5: udev rules of tb5-dkms not installed"));
		return;
	}
	if (st.st_gid != tb5->gr_gid || (mode & 0777) != 0660) {
		report.add(fail(check, what + ", expected group tb5 mode 0660", kUdevHint));
		return;
	}
	report.add(pass(check, what + ", not world-accessible"));
}

void check_nodes(const Environment &env, Report &report)
{
	const std::string why_skip = kernel_skip_reason(env);

	if (!why_skip.empty()) {
		report.add(skip("nodes", "", why_skip));
		return;
	}
	struct stat st {};
	if (stat(class_dir().c_str(), &st)) {
		report.add(fail("nodes", "module loaded but " + class_dir() + " is missing",
				"reload it: modprobe -r tb5 && modprobe tb5; see dmesg | grep tb5"));
		return;
	}
	const auto ends = link_ends();
	if (ends.empty()) {
		report.add(skip("nodes", "", "no link ends: no cable and no loop pair "
				"(modprobe tb5 loopback=1 makes one)"));
		return;
	}
	// getgrnam's result is overwritten by the next call: keep a copy.
	const struct group *gr = getgrnam("tb5");
	struct group tb5 {};
	std::vector<std::string> members;
	std::vector<char *> member_ptrs;
	if (gr) {
		for (char **m = gr->gr_mem; m && *m; m++)
			members.emplace_back(*m);
		for (std::string &m : members)
			member_ptrs.push_back(m.data());
		member_ptrs.push_back(nullptr);
		tb5.gr_gid = gr->gr_gid;
		tb5.gr_mem = member_ptrs.data();
	}
	for (const auto &[index, name] : ends) {
		check_node(name, gr ? &tb5 : nullptr, report);
		check_perms(name, gr ? &tb5 : nullptr, report);
	}
}

} // namespace

Environment detect_environment()
{
	Environment env;
	struct stat st {};

	env.sim = simulator_env();
	env.module_loaded = !stat(module_dir().c_str(), &st) && S_ISDIR(st.st_mode);
	return env;
}

void run_kernel_checks(const Environment &env, const Options &opt, Report &report)
{
	(void)opt;
	check_module(env, report);
	check_abi(env, report);
	check_params(env, report);
	check_nodes(env, report);
}

} // namespace tb5selftest
