// SPDX-License-Identifier: MIT
//
// plot.hpp - --plot FILE: the run's rows drawn by gnuplot as an SVG or PNG.
// Bandwidth against message size (one line per bandwidth test, the link's
// line rate as a reference), one-way latency against message size (p50 and
// p99 of each latency test). The script is built here, with the rows inline,
// and gnuplot writes the image to its stdout; tb5-perf writes the file, so a
// write failure is named as such.
#ifndef TB5_PERF_PLOT_HPP
#define TB5_PERF_PLOT_HPP

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "options.hpp"
#include "report.hpp"

namespace tb5perf {

// The format --plot FILE asks for, from its extension (.svg or .png, any
// case); nothing for any other.
std::optional<PlotFormat> plot_format_of(const std::string &path);

// The gnuplot script that draws @rows (with the environment @env of
// Report, for the title; may be empty) as @format on gnuplot's stdout.
std::string plot_script(const std::vector<Row> &rows, const nlohmann::json &env,
		       PlotFormat format);

// The gnuplot to run: $TB5_GNUPLOT if set (a path, or a name looked up in
// PATH), else "gnuplot" in PATH; nothing if that is not an executable file.
std::optional<std::string> find_gnuplot();

// What tb5-perf says when find_gnuplot() finds nothing.
std::string no_gnuplot_message();

// What would keep --plot @path from being drawn, checked before the run:
// no gnuplot (no_gnuplot_message()), or a folder that cannot be written to.
// Empty if nothing.
std::string plot_preflight(const std::string &path);

// Runs @gnuplot on @script and writes what it prints to @path. Throws
// Error if gnuplot cannot be run, fails or prints nothing, or if @path
// cannot be written.
void render_plot(const std::string &gnuplot, const std::string &script,
		const std::string &path);

// plot_script() and render_plot() for --plot: finds gnuplot (throws Error with
// no_gnuplot_message() if it has gone), draws @rows into opt.plot.
void draw_plot(const Options &opt, const std::vector<Row> &rows,
	      const nlohmann::json &env);

} // namespace tb5perf

#endif // TB5_PERF_PLOT_HPP
