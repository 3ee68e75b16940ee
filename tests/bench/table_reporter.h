// SPDX-License-Identifier: MIT
//
// table_reporter.h - a reporter that passes every run on to the usual one
// (console, JSON or CSV, as --benchmark_format says) and, once all ran,
// prints per message size the core's GB/s, memcpy's GB/s and their ratio
// side by side. The table goes to stdout after the console output, or to
// stderr when stdout carries JSON or CSV, so that stays machine-readable.
#ifndef TB5_BENCH_TABLE_REPORTER_H
#define TB5_BENCH_TABLE_REPORTER_H

#include <benchmark/benchmark.h>

#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <string>

namespace tb5bench {

class TableReporter : public benchmark::BenchmarkReporter {
public:
	// @inner: the reporter that prints the runs; @table: where the table
	// goes; @footer: printed under it.
	TableReporter(std::unique_ptr<benchmark::BenchmarkReporter> inner,
		      std::ostream *table, std::string footer);

	bool ReportContext(const Context &context) override;
	void ReportRuns(const std::vector<Run> &runs) override;
	void Finalize() override;

private:
	struct Result {
		double msgs_per_s = 0;
		double gb_per_s = 0;
		std::string label;
		bool mean = false;	// from a "mean" aggregate
	};

	void PrintTable();

	std::unique_ptr<benchmark::BenchmarkReporter> inner_;
	std::ostream *table_;
	std::string footer_;
	// (benchmark name, message size) -> result
	std::map<std::pair<std::string, uint64_t>, Result> results_;
};

} // namespace tb5bench

#endif // TB5_BENCH_TABLE_REPORTER_H
