// SPDX-License-Identifier: MIT
//
// report.hpp - results out: a table per test in the spirit of nccl-tests
// (printed row by row as sizes finish), and at the end one JSON document
// (environment, settings, every row, a summary) or CSV (one line per row).
#ifndef TB5_PERF_REPORT_HPP
#define TB5_PERF_REPORT_HPP

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "options.hpp"
#include "progress.hpp"
#include "run.hpp"
#include "stats.hpp"
#include "test_kind.hpp"

namespace tb5perf {

// One run (the RunSpec that was asked for) and what it measured.
struct Row : RunSpec {
	double seconds = 0;
	uint64_t bytes = 0;		// payload, both directions for bibw
	uint64_t messages = 0;
	double gbps = 0;		// 1e9 bytes per second
	double msgs_per_s = 0;
	std::optional<double> memcpy_gbps;
	// Bandwidth tests over a link that reports its speed: its line rate
	// in GB/s per direction, and the fraction of it reached (bibw: per
	// direction, half the sum).
	std::optional<double> line_gbps;
	std::optional<double> line_fraction;
	// Bandwidth tests: CPU seconds per GB moved, i.e. cores kept busy
	// per GB/s, of the client's and the server's process.
	std::optional<double> cpu_client;
	std::optional<double> cpu_server;
	std::optional<LatencySummary> lat;	// ns
	std::vector<HistogramBucket> histogram;
	double load_gbps = 0;		// lat-load
	bool verified = false;
};

// The JSON or CSV document of a run: into @output's file (an Error that
// names it when it cannot be written), or onto stdout when @output is
// empty.
void emit_document(const std::string &output, const std::string &text);

class Report {
public:
	Report(const Options &opt, Progress &progress);

	// The environment (tool, library, link, peer, host, settings); its
	// essentials are printed above the first table.
	void set_environment(nlohmann::json env);
	void begin_test(Test test);
	void add_row(const Row &row);
	// Prints the summary, and the JSON or CSV. Throws if the output file
	// cannot be written.
	void finish();
	// finish() after a failure: the rows so far, and @why in the JSON.
	void fail(const std::string &why);

	// What --plot draws (plot.hpp).
	const std::vector<Row> &rows() const { return rows_; }
	const nlohmann::json &environment() const { return env_; }

private:
	void print(const char *fmt, ...) __attribute__((format(printf, 2, 3)));
	void print_header(Test test);
	void print_row(const Row &row);
	void print_histogram(const Row &row);
	nlohmann::json summary() const;
	static nlohmann::json row_json(const Row &row);
	std::string csv() const;

	const Options &opt_;
	Progress &progress_;
	FILE *table_ = nullptr;		// stdout, stderr or none
	nlohmann::json env_;
	std::vector<Row> rows_;
	std::string error_;
};

} // namespace tb5perf

#endif // TB5_PERF_REPORT_HPP
