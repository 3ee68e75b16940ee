// SPDX-License-Identifier: MIT
//
// names.hpp - the names of tb5-perf's enums (tests, memory kinds) and their
// numbers on the wire: one table per enum, looked up either way.
#ifndef TB5_PERF_NAMES_HPP
#define TB5_PERF_NAMES_HPP

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace tb5perf {

template <typename E>
struct Named {
	E value;
	std::string_view name;
};

// @table's name for @value; "?" for a value it lacks.
template <typename E, size_t N>
constexpr std::string_view name_of(const Named<E> (&table)[N], E value)
{
	for (const Named<E> &n : table)
		if (n.value == value)
			return n.name;
	return "?";
}

// The value named @name in @table.
template <typename E, size_t N>
constexpr std::optional<E> by_name(const Named<E> (&table)[N], std::string_view name)
{
	for (const Named<E> &n : table)
		if (n.name == name)
			return n.value;
	return std::nullopt;
}

// The value of @table whose number (as sent on the wire) is @number.
template <typename E, size_t N>
constexpr std::optional<E> by_number(const Named<E> (&table)[N], uint64_t number)
{
	for (const Named<E> &n : table)
		if (static_cast<uint64_t>(n.value) == number)
			return n.value;
	return std::nullopt;
}

} // namespace tb5perf

#endif // TB5_PERF_NAMES_HPP
