// SPDX-License-Identifier: MIT
//
// table_reporter.cc - the core-versus-memcpy table (see table_reporter.h).
#include "table_reporter.h"

#include <cinttypes>
#include <cstdio>
#include <set>
#include <utility>

namespace tb5bench {
namespace {

std::string SizeName(uint64_t n)
{
	char buf[32];

	if (n >= (1u << 20) && !(n % (1u << 20)))
		snprintf(buf, sizeof(buf), "%" PRIu64 " MiB", n >> 20);
	else if (n >= 1024 && !(n % 1024))
		snprintf(buf, sizeof(buf), "%" PRIu64 " KiB", n >> 10);
	else
		snprintf(buf, sizeof(buf), "%" PRIu64 " B", n);
	return buf;
}

double Counter(const benchmark::BenchmarkReporter::Run &run, const char *name)
{
	const auto it = run.counters.find(name);

	return it == run.counters.end() ? 0.0 : it->second.value;
}

} // namespace

TableReporter::TableReporter(std::unique_ptr<benchmark::BenchmarkReporter> inner,
			     std::ostream *table, std::string footer)
	: inner_(std::move(inner)), table_(table), footer_(std::move(footer))
{
}

bool TableReporter::ReportContext(const Context &context)
{
	inner_->SetOutputStream(&GetOutputStream());
	inner_->SetErrorStream(&GetErrorStream());
	return inner_->ReportContext(context);
}

void TableReporter::ReportRuns(const std::vector<Run> &runs)
{
	inner_->ReportRuns(runs);
	for (const Run &run : runs) {
		if (run.error_occurred)
			continue;
		const bool mean = run.run_type == Run::RT_Aggregate;
		if (mean && run.aggregate_name != "mean")
			continue;
		// Names are "<benchmark>/<size>".
		const std::string &args = run.run_name.args;
		if (args.empty())
			continue;
		const uint64_t size = std::stoull(args);
		Result &r = results_[{run.run_name.function_name, size}];
		if (r.mean && !mean)
			continue;	// a mean of repetitions wins
		r.msgs_per_s = Counter(run, "items_per_second");
		r.gb_per_s = Counter(run, "GB");
		r.label = run.report_label;
		r.mean = mean;
	}
}

void TableReporter::Finalize()
{
	inner_->Finalize();
	PrintTable();
}

void TableReporter::PrintTable()
{
	std::set<uint64_t> sizes;
	char line[160];

	for (const auto &[key, r] : results_)
		sizes.insert(key.second);
	if (sizes.empty())
		return;

	std::ostream &out = *table_;
	out << "\ntb5 core over the ring model vs memcpy, one thread "
	       "(GB/s = 1e9 bytes/s)\n";
	snprintf(line, sizeof(line), "%-8s %-12s %14s %11s %13s %12s\n", "size",
		 "in flight", "core msgs/s", "core GB/s", "memcpy GB/s",
		 "core/memcpy");
	out << line;
	for (uint64_t size : sizes) {
		const auto core = results_.find({"core", size});
		const auto copy = results_.find({"memcpy", size});
		char c_msgs[32] = "-", c_gb[32] = "-", m_gb[32] = "-",
		     ratio[32] = "-";

		if (core != results_.end()) {
			snprintf(c_msgs, sizeof(c_msgs), "%.3g",
				 core->second.msgs_per_s);
			snprintf(c_gb, sizeof(c_gb), "%.3f",
				 core->second.gb_per_s);
		}
		if (copy != results_.end())
			snprintf(m_gb, sizeof(m_gb), "%.3f",
				 copy->second.gb_per_s);
		if (core != results_.end() && copy != results_.end() &&
		    copy->second.gb_per_s > 0)
			snprintf(ratio, sizeof(ratio), "%.1f%%",
				 100.0 * core->second.gb_per_s /
					 copy->second.gb_per_s);
		snprintf(line, sizeof(line), "%-8s %-12s %14s %11s %13s %12s\n",
			 SizeName(size).c_str(),
			 core != results_.end() ? core->second.label.c_str()
						: "-",
			 c_msgs, c_gb, m_gb, ratio);
		out << line;
	}
	out << footer_ << std::flush;
}

} // namespace tb5bench
