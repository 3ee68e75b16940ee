// SPDX-License-Identifier: MIT
//
// progress.hpp - one line on stderr, rewritten in place, that says what runs
// now; on when stderr is a terminal or with --progress.
#ifndef TB5_PERF_PROGRESS_HPP
#define TB5_PERF_PROGRESS_HPP

#include <cstdint>
#include <string>

namespace tb5perf {

class Progress {
public:
	explicit Progress(bool enabled);
	~Progress();

	bool enabled() const { return enabled_; }
	// Shows @line (at most ten times a second unless @force).
	void update(const std::string &line, bool force = false);
	// Removes the line, before anything else is printed to the terminal.
	void clear();

private:
	bool enabled_;
	bool tty_;
	bool shown_ = false;
	uint64_t last_ns_ = 0;
	uint64_t start_ns_ = 0;
};

} // namespace tb5perf

#endif // TB5_PERF_PROGRESS_HPP
