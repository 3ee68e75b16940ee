// SPDX-License-Identifier: MIT
//
// sysfs.hpp - the kernel module's links as /sys/class/tb5 describes them.
#ifndef TB5_KERNEL_SYSFS_HPP
#define TB5_KERNEL_SYSFS_HPP

#include <optional>
#include <string>
#include <vector>

#include "tb5/tb5.h"

namespace tb5::kernel {

// Where the module's class and device nodes are; the environment may move
// them (TB5_SYSFS_CLASS, TB5_DEV_DIR) so that tests can use fakes.
std::string class_dir();
std::string dev_dir();

// "tb5_<n>" with n decimal: the only names the kernel backend opens.
std::optional<unsigned> parse_link_name(const std::string &name);

// The link names under class_dir(), by number.
std::vector<std::string> link_names();

// A link's description from its attributes; false if it vanished.
bool read_link(const std::string &name, tb5_link_info &info);

// The first line of a sysfs file, or nullopt.
std::optional<std::string> read_attr(const std::string &path);

} // namespace tb5::kernel

#endif // TB5_KERNEL_SYSFS_HPP
