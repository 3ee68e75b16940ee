// SPDX-License-Identifier: MIT
//
// plot.h - --plot FILE: the run's rows drawn by gnuplot as an SVG or PNG.
// Bandwidth against message size (one line per bandwidth test, the link's
// line rate as a reference), one-way latency against message size (p50 and
// p99 of each latency test). The script is built here, with the rows inline,
// and gnuplot writes the image to its stdout; tb5-perf writes the file, so a
// write failure is named as such.
#ifndef TB5_PERF_PLOT_H
#define TB5_PERF_PLOT_H

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "options.h"
#include "report.h"

namespace tb5perf {

// The format --plot FILE asks for, from its extension (.svg or .png, any
// case); nothing for any other.
std::optional<PlotFormat> PlotFormatOf(const std::string &path);

// The gnuplot script that draws @rows (with the environment @env of
// Report, for the title; may be empty) as @format on gnuplot's stdout.
std::string PlotScript(const std::vector<Row> &rows, const nlohmann::json &env,
		       PlotFormat format);

// The gnuplot to run: $TB5_GNUPLOT if set (a path, or a name looked up in
// PATH), else "gnuplot" in PATH; nothing if that is not an executable file.
std::optional<std::string> FindGnuplot();

// What tb5-perf says when FindGnuplot() finds nothing.
std::string NoGnuplotMessage();

// What would keep --plot @path from being drawn, checked before the run:
// no gnuplot (NoGnuplotMessage()), or a folder that cannot be written to.
// Empty if nothing.
std::string PlotPreflight(const std::string &path);

// Runs @gnuplot on @script and writes what it prints to @path. Throws
// Error if gnuplot cannot be run, fails or prints nothing, or if @path
// cannot be written.
void RenderPlot(const std::string &gnuplot, const std::string &script,
		const std::string &path);

// PlotScript() and RenderPlot() for --plot: finds gnuplot (throws Error with
// NoGnuplotMessage() if it has gone), draws @rows into opt.plot.
void DrawPlot(const Options &opt, const std::vector<Row> &rows,
	      const nlohmann::json &env);

} // namespace tb5perf

#endif // TB5_PERF_PLOT_H
