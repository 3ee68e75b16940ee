// SPDX-License-Identifier: MIT
//
// env.hpp - the plugin's settings from the environment (TB5_NCCL_*), read
// one way everywhere: a bad value is logged and its default kept.
#ifndef TB5_PLUGIN_ENV_HPP
#define TB5_PLUGIN_ENV_HPP

namespace tb5net {

// @name as a number (decimal, 0x hex, 0 octal) in [@lo, @hi]; @def when
// unset or empty, and when not such a number (with an NCCL WARN that
// names the variable and the range).
long env_long(const char *name, long def, long lo, long hi);

// Is @name set to exactly @value?
bool env_is(const char *name, const char *value);

} // namespace tb5net

#endif // TB5_PLUGIN_ENV_HPP
