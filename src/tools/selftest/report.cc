// SPDX-License-Identifier: MIT
//
// report.cc - the header, the check lines and the summary (see report.hpp).
#include "report.hpp"

#include "tb5/tb5.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <utility>

#ifndef TB5_SELFTEST_VERSION
#define TB5_SELFTEST_VERSION "unknown"
#endif

namespace tb5selftest {
namespace {

constexpr int kNameWidth = 24;

Result make(Status status, std::string name, std::string detail)
{
	Result r;

	r.name = std::move(name);
	r.status = status;
	r.detail = std::move(detail);
	return r;
}

} // namespace

const char *status_name(Status status)
{
	switch (status) {
	case Status::kPass:
		return "PASS";
	case Status::kFail:
		return "FAIL";
	case Status::kSkip:
		return "SKIP";
	}
	return "?";
}

Result pass(std::string name, std::string detail)
{
	return make(Status::kPass, std::move(name), std::move(detail));
}

Result fail(std::string name, std::string detail, std::string hint)
{
	Result r = make(Status::kFail, std::move(name), std::move(detail));

	r.hint = std::move(hint);
	return r;
}

Result skip(std::string name, std::string detail, std::string reason)
{
	Result r = make(Status::kSkip, std::move(name), std::move(detail));

	r.reason = std::move(reason);
	return r;
}

std::string format(const char *fmt, ...)
{
	va_list ap;
	char small[256];

	va_start(ap, fmt);
	const int n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return "";
	if (static_cast<size_t>(n) < sizeof(small))
		return std::string(small, static_cast<size_t>(n));
	std::string out(static_cast<size_t>(n) + 1, '\0');
	va_start(ap, fmt);
	vsnprintf(out.data(), out.size(), fmt, ap);
	va_end(ap);
	out.resize(static_cast<size_t>(n));
	return out;
}

std::string hex(uint64_t value)
{
	return format("0x%" PRIx64, value);
}

std::string bytes(uint64_t n)
{
	if (n >= (1u << 20) && !(n % (1u << 20)))
		return format("%" PRIu64 " MiB", n >> 20);
	if (n >= 1024 && !(n % 1024))
		return format("%" PRIu64 " KiB", n >> 10);
	return format("%" PRIu64 " B", n);
}

std::string simulator_env()
{
	const char *sim = getenv("TB5_SIM");

	return sim ? sim : "";
}

Report::Report(bool json, bool verbose) : json_(json), verbose_(verbose)
{
}

void Report::header()
{
	struct utsname uts {};
	char host[256] = "";
	char date[64] = "";
	const time_t now = time(nullptr);
	struct tm tm {};

	uname(&uts);
	gethostname(host, sizeof(host) - 1);
	gmtime_r(&now, &tm);
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", &tm);
	const std::string sim = simulator_env();

	header_["tool"] = "tb5-selftest";
	header_["version"] = TB5_SELFTEST_VERSION;
	header_["library_version"] = tb5_version();
	header_["host"] = host;
	header_["kernel"] = uts.release;
	header_["machine"] = uts.machine;
	header_["date"] = date;
	header_["simulator"] = sim.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(sim);
	if (json_)
		return;
	printf("tb5-selftest %s (libtb5 %s)\n", TB5_SELFTEST_VERSION, tb5_version());
	printf("host %s, kernel %s %s, %s\n", host, uts.release, uts.machine, date);
	if (!sim.empty())
		printf("backend: simulator (TB5_SIM=%s)\n", sim.c_str());
	fflush(stdout);
}

void Report::add(Result result)
{
	if (!json_) {
		std::string line = status_name(result.status);
		line += "  ";
		line += result.name;
		line += "  ";
		if (result.name.size() + 2 < kNameWidth)
			line.append(kNameWidth - result.name.size() - 2, ' ');
		line += result.detail;
		if (result.status == Status::kSkip && !result.reason.empty())
			line += result.detail.empty() ? result.reason : " (" + result.reason + ")";
		if (result.status == Status::kFail && !result.hint.empty())
			line += "; fix: " + result.hint;
		printf("%s\n", line.c_str());
		if (verbose_) {
			for (const std::string &l : result.log)
				printf("      %s\n", l.c_str());
		}
		fflush(stdout);
	}
	results_.push_back(std::move(result));
}

int Report::finish()
{
	unsigned passed = 0, failed = 0, skipped = 0;

	for (const Result &r : results_) {
		if (r.status == Status::kPass)
			passed++;
		else if (r.status == Status::kFail)
			failed++;
		else
			skipped++;
	}
	const int status = failed ? 1 : 0;

	if (!json_) {
		printf("%u passed, %u failed, %u skipped\n", passed, failed, skipped);
		fflush(stdout);
		return status;
	}
	nlohmann::ordered_json doc = header_;
	nlohmann::ordered_json checks = nlohmann::ordered_json::array();
	for (const Result &r : results_) {
		nlohmann::ordered_json c;
		const size_t colon = r.name.find(':');

		c["name"] = r.name;
		c["check"] = r.name.substr(0, colon);
		if (colon != std::string::npos)
			c["subject"] = r.name.substr(colon + 1);
		c["status"] = status_name(r.status);
		c["detail"] = r.detail;
		if (r.status == Status::kSkip)
			c["reason"] = r.reason;
		if (r.status == Status::kFail && !r.hint.empty())
			c["hint"] = r.hint;
		for (const auto &[key, value] : r.data.items())
			c[key] = value;
		if (verbose_ && !r.log.empty())
			c["log"] = r.log;
		checks.push_back(std::move(c));
	}
	doc["checks"] = std::move(checks);
	doc["summary"] = {{"passed", passed}, {"failed", failed}, {"skipped", skipped}};
	doc["exit_status"] = status;
	std::cout << doc.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << std::endl;
	return status;
}

} // namespace tb5selftest
