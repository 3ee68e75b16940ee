// SPDX-License-Identifier: MIT
//
// report.hpp - what tb5-selftest prints: a header (versions, host, kernel,
// date), one line per check (PASS, FAIL with what to do, SKIP with the
// reason) and a summary; or, with --json, one JSON document with the same.
#ifndef TB5_SELFTEST_REPORT_HPP
#define TB5_SELFTEST_REPORT_HPP

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace tb5selftest {

enum class Status { kPass, kFail, kSkip };

const char *status_name(Status status);

// One check's outcome. The name is "<check>" or "<check>:<subject>", e.g.
// "module", "node:tb5_0", "roundtrip:tb5_0<->tb5_1"; names are stable.
struct Result {
	std::string name;
	Status status = Status::kPass;
	std::string detail;		// what was found
	std::string reason;		// SKIP: why it was skipped
	std::string hint;		// FAIL: what to do about it
	nlohmann::ordered_json data = nlohmann::ordered_json::object(); // extra figures for --json
	std::vector<std::string> log;	// extra lines shown with --verbose
};

Result pass(std::string name, std::string detail);
Result fail(std::string name, std::string detail, std::string hint = "");
Result skip(std::string name, std::string detail, std::string reason);

class Report {
public:
	Report(bool json, bool verbose);

	// Prints the header lines (text mode) and remembers them for --json.
	void header();
	// Records a check; text mode prints its line at once.
	void add(Result result);
	// Prints the summary (or the JSON document); returns the exit status:
	// 0 when nothing failed, 1 otherwise.
	int finish();

	bool verbose() const { return verbose_; }

private:
	bool json_;
	bool verbose_;
	nlohmann::ordered_json header_ = nlohmann::ordered_json::object();
	std::vector<Result> results_;
};

// printf into a std::string.
std::string format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
// "0x..." of a host id.
std::string hex(uint64_t value);
// "4095 B", "4 KiB", "1 MiB".
std::string bytes(uint64_t n);
// The value of TB5_SIM, or "" when it is not set.
std::string simulator_env();

} // namespace tb5selftest

#endif // TB5_SELFTEST_REPORT_HPP
