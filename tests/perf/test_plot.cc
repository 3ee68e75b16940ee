// SPDX-License-Identifier: MIT
//
// test_plot.cc - tb5-perf --plot: the format from the file's extension, the
// gnuplot script for known rows (every series, the line rate as a
// reference, the title from the environment), finding gnuplot
// (TB5_GNUPLOT), and render_plot() against stand-ins for gnuplot that print
// an image, fail or print nothing, and against a file that cannot be
// written. Where the real gnuplot is installed, it draws one.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "errors.hpp"
#include "plot.hpp"

namespace {

using tb5perf::find_gnuplot;
using tb5perf::PlotFormat;
using tb5perf::plot_format_of;
using tb5perf::plot_script;
using tb5perf::render_plot;
using tb5perf::Row;
using Kind = tb5perf::Test;

Row BwRow(Kind t, uint64_t size, double gbps, std::optional<double> line)
{
	Row r;

	r.test = t;
	r.size = size;
	r.gbps = gbps;
	r.line_gbps = line;
	if (line)
		r.line_fraction = gbps / *line;
	return r;
}

Row LatRow(uint64_t size, double p50_ns, double p99_ns)
{
	Row r;
	tb5perf::LatencySummary l;

	r.test = Kind::kLat;
	r.size = size;
	l.samples = 100;
	l.min = p50_ns / 2;
	l.p50 = p50_ns;
	l.p99 = p99_ns;
	l.max = p99_ns * 2;
	r.lat = l;
	return r;
}

std::vector<Row> KnownRows()
{
	return {
		BwRow(Kind::kBw, 4096, 1.5, 10.0),
		BwRow(Kind::kBw, 1 << 20, 9.75, 10.0),
		BwRow(Kind::kBibw, 1 << 20, 14.5, 10.0),
		LatRow(8, 1500, 4250),
		LatRow(65536, 16000, 30000),
	};
}

nlohmann::json KnownEnv()
{
	return {
		{"mode", "sim"},
		{"date", "2026-11-25T06:00:00Z"},
		{"tool_version", "0.1.0"},
		{"simulator", "tb5perf-1-2:hosts=2,host=0,loop=0,rate=80"},
		{"host", {{"name", "build\"box"}}},
		{"link", {{"name", "sim_h1"}, {"backend", "simulator"}}},
	};
}

bool Has(const std::string &text, const std::string &what)
{
	return text.find(what) != std::string::npos;
}

// Sets an environment variable for a test's lifetime.
class ScopedEnv {
public:
	ScopedEnv(const char *name, const std::string &value) : name_(name)
	{
		if (const char *old = getenv(name))
			old_ = old;
		setenv(name, value.c_str(), 1);
	}
	~ScopedEnv()
	{
		if (old_)
			setenv(name_, old_->c_str(), 1);
		else
			unsetenv(name_);
	}

private:
	const char *name_;
	std::optional<std::string> old_;
};

// A folder of its own, with executable stand-ins for gnuplot in it.
class PlotDir : public testing::Test {
protected:
	void SetUp() override
	{
		char tmpl[] = "/tmp/tb5-test-plot.XXXXXX";
		ASSERT_NE(mkdtemp(tmpl), nullptr);
		dir_ = tmpl;
	}
	void TearDown() override
	{
		(void)!system(("rm -rf '" + dir_ + "'").c_str());
	}
	std::string Script(const std::string &name, const std::string &body)
	{
		const std::string path = dir_ + "/" + name;
		std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
		chmod(path.c_str(), 0755);
		return path;
	}
	static std::string Read(const std::string &path)
	{
		std::ifstream f(path, std::ios::binary);
		std::ostringstream s;
		s << f.rdbuf();
		return s.str();
	}

	std::string dir_;
};

TEST(PlotFormat, FromTheExtension)
{
	EXPECT_EQ(plot_format_of("out.svg"), PlotFormat::kSvg);
	EXPECT_EQ(plot_format_of("a/b.c/out.SVG"), PlotFormat::kSvg);
	EXPECT_EQ(plot_format_of("out.png"), PlotFormat::kPng);
	EXPECT_EQ(plot_format_of("/tmp/x.Png"), PlotFormat::kPng);
	EXPECT_FALSE(plot_format_of("out.pdf"));
	EXPECT_FALSE(plot_format_of("out"));
	EXPECT_FALSE(plot_format_of("out.svg.gz"));
	EXPECT_FALSE(plot_format_of("dir.svg/out"));
	EXPECT_FALSE(plot_format_of(""));
}

TEST(PlotScript, HasEverySeriesAndTheLineRate)
{
	const std::string s =
		plot_script(KnownRows(), KnownEnv(), PlotFormat::kSvg);

	EXPECT_TRUE(Has(s, "set terminal svg")) << s;
	// The rows inline, sorted by size: bw, bibw, lat (p50, p99 in us).
	EXPECT_TRUE(Has(s, "$bw << EOD\n# size GB/s\n4096 1.5\n1048576 9.75\nEOD\n")) << s;
	EXPECT_TRUE(Has(s, "$bibw << EOD\n# size GB/s\n1048576 14.5\nEOD\n")) << s;
	EXPECT_TRUE(Has(s, "$lat << EOD\n")) << s;
	EXPECT_TRUE(Has(s, "8 1.5 4.25 0.75 8.5\n")) << s;
	EXPECT_TRUE(Has(s, "65536 16 30 8 60\n")) << s;
	EXPECT_TRUE(Has(s, "$bw using 1:2")) << s;
	EXPECT_TRUE(Has(s, "title \"bw\"")) << s;
	EXPECT_TRUE(Has(s, "$bibw using 1:2")) << s;
	EXPECT_TRUE(Has(s, "$lat using 1:2")) << s;
	EXPECT_TRUE(Has(s, "title \"lat p50\"")) << s;
	EXPECT_TRUE(Has(s, "$lat using 1:3")) << s;
	EXPECT_TRUE(Has(s, "title \"lat p99\"")) << s;
	// The reference: the line rate, the model's rate= named; bibw's
	// ceiling twice that.
	EXPECT_TRUE(Has(s, "10 with lines")) << s;
	EXPECT_TRUE(Has(s, "line rate 10 GB/s per direction (simulator rate=80)")) << s;
	EXPECT_TRUE(Has(s, "20 with lines")) << s;
	// Two panels, a log2 x axis labelled in human units.
	EXPECT_TRUE(Has(s, "set multiplot layout 2,1")) << s;
	EXPECT_TRUE(Has(s, "set logscale x 2")) << s;
	EXPECT_TRUE(Has(s, "\"4 KiB\" 4096")) << s;
	EXPECT_TRUE(Has(s, "\"1 MiB\" 1048576")) << s;
	EXPECT_TRUE(Has(s, "\"16 B\" 16, \"64 B\" 64, ")) << s;
	EXPECT_TRUE(Has(s, "\"64 KiB\" 65536)")) << s;
	// The title: mode, link, model, host (its quote escaped), date.
	EXPECT_TRUE(Has(s, "sim_h1 (simulator link, rate=80)")) << s;
	EXPECT_TRUE(Has(s, "rate=80)\\nbuild\\\"box, 2026-11-25T06:00:00Z")) << s;
}

TEST(PlotScript, PngFallsBackToGd)
{
	const std::string s = plot_script(KnownRows(), {}, PlotFormat::kPng);

	EXPECT_TRUE(Has(s, "set terminal pngcairo")) << s;
	EXPECT_TRUE(Has(s, "set terminal png ")) << s;
	EXPECT_FALSE(Has(s, "set terminal svg")) << s;
}

TEST(PlotScript, ManySizesThinTheLabels)
{
	std::vector<Row> rows;
	for (uint64_t size = 1; size <= (256u << 20); size *= 2)
		rows.push_back(BwRow(Kind::kBw, size, 1, std::nullopt));
	const std::string s = plot_script(rows, {}, PlotFormat::kSvg);

	// 29 sizes: every 4th power of two, from 1 B.
	EXPECT_TRUE(Has(s, "set xtics (\"1 B\" 1, \"16 B\" 16, \"256 B\" 256, "
			"\"4 KiB\" 4096, \"64 KiB\" 65536, \"1 MiB\" 1048576, "
			"\"16 MiB\" 16777216, \"256 MiB\" 268435456)\n"))
		<< s;
}

TEST(PlotScript, NoLineRateNoReference)
{
	const std::vector<Row> rows = {BwRow(Kind::kBw, 4096, 1.5, std::nullopt),
				       BwRow(Kind::kStreams, 4096, 3, std::nullopt)};
	const std::string s = plot_script(rows, {}, PlotFormat::kSvg);

	EXPECT_FALSE(Has(s, "line rate")) << s;
	EXPECT_TRUE(Has(s, "$streams << EOD")) << s;
	// One panel: bandwidth only.
	EXPECT_TRUE(Has(s, "set multiplot layout 1,1")) << s;
	EXPECT_FALSE(Has(s, "latency")) << s;
}

TEST(PlotScript, LatencyOnly)
{
	Row load = LatRow(64, 2000, 9000);
	load.test = Kind::kLatLoad;
	const std::string s =
		plot_script({LatRow(8, 1500, 4250), load}, {}, PlotFormat::kSvg);

	EXPECT_TRUE(Has(s, "set multiplot layout 1,1")) << s;
	EXPECT_TRUE(Has(s, "$lat_load << EOD")) << s;
	EXPECT_TRUE(Has(s, "title \"lat-load p99\"")) << s;
	EXPECT_FALSE(Has(s, "bandwidth")) << s;
}

TEST_F(PlotDir, FindGnuplotHonoursTB5_GNUPLOT)
{
	{
		ScopedEnv env("TB5_GNUPLOT", "/nonexistent");
		EXPECT_FALSE(find_gnuplot());
		EXPECT_TRUE(Has(tb5perf::no_gnuplot_message(),
				"--plot needs gnuplot: TB5_GNUPLOT=/nonexistent"));
		EXPECT_TRUE(Has(tb5perf::plot_preflight(dir_ + "/x.svg"),
				"--plot needs gnuplot"));
	}
	const std::string fake = Script("fake-gnuplot", "exit 0");
	{
		ScopedEnv env("TB5_GNUPLOT", fake);
		EXPECT_EQ(find_gnuplot(), fake);
		EXPECT_EQ(tb5perf::plot_preflight(dir_ + "/x.svg"), "");
		EXPECT_TRUE(Has(tb5perf::plot_preflight(dir_ + "/no/x.svg"),
				"--plot: cannot write " + dir_ + "/no/x.svg"));
	}
	{
		// A bare name is looked up in PATH.
		ScopedEnv path("PATH", dir_);
		ScopedEnv env("TB5_GNUPLOT", "fake-gnuplot");
		EXPECT_EQ(find_gnuplot(), fake);
	}
	{
		ScopedEnv path("PATH", dir_);
		ScopedEnv env("TB5_GNUPLOT", "");	// empty: not set
		EXPECT_FALSE(find_gnuplot());
		EXPECT_TRUE(Has(tb5perf::no_gnuplot_message(),
				"--plot needs gnuplot (apt install gnuplot-nox)"));
	}
}

TEST_F(PlotDir, RenderWritesWhatGnuplotPrints)
{
	// The stand-in prints its script's terminal line and the options it
	// was given.
	const std::string fake =
		Script("gp", "echo \"<svg>$1</svg>\"; grep -m1 terminal \"$2\"");
	const std::string out = dir_ + "/out.svg";

	render_plot(fake, plot_script(KnownRows(), {}, PlotFormat::kSvg), out);
	const std::string image = Read(out);
	EXPECT_TRUE(Has(image, "<svg>-d</svg>\nset terminal svg")) << image;
}

TEST_F(PlotDir, RenderFailuresAreNamed)
{
	const std::string script = plot_script(KnownRows(), {}, PlotFormat::kSvg);
	const std::string ok = Script("ok", "echo '<svg/>'");
	auto message = [&](const std::string &gnuplot, const std::string &path) {
		try {
			render_plot(gnuplot, script, path);
		} catch (const tb5perf::Error &e) {
			return std::string(e.what());
		}
		return std::string("no error");
	};

	EXPECT_TRUE(Has(message(Script("bad", "exit 3"), dir_ + "/a.svg"),
			"failed (exit status 3"));
	EXPECT_TRUE(Has(message(Script("mute", "exit 0"), dir_ + "/a.svg"),
			"drew nothing"));
	EXPECT_TRUE(Has(message(ok, dir_ + "/no/such/dir/a.svg"),
			"--plot: cannot write " + dir_ + "/no/such/dir/a.svg: "
			"No such file or directory"));
	EXPECT_EQ(message(ok, dir_ + "/a.svg"), "no error");
	EXPECT_EQ(access((dir_ + "/a.svg").c_str(), R_OK), 0);
}

TEST_F(PlotDir, RealGnuplotDrawsAnSvgAndAPng)
{
	const auto gnuplot = find_gnuplot();
	if (!gnuplot)
		GTEST_SKIP() << "no gnuplot";
	render_plot(*gnuplot, plot_script(KnownRows(), KnownEnv(), PlotFormat::kSvg),
		   dir_ + "/out.svg");
	const std::string svg = Read(dir_ + "/out.svg");
	EXPECT_TRUE(Has(svg, "<svg")) << svg.substr(0, 200);
	EXPECT_TRUE(Has(svg, "</svg>")) << svg.substr(0, 200);
	EXPECT_TRUE(Has(svg, "line rate 10 GB/s per direction"));

	render_plot(*gnuplot, plot_script(KnownRows(), KnownEnv(), PlotFormat::kPng),
		   dir_ + "/out.png");
	const std::string png = Read(dir_ + "/out.png");
	ASSERT_GE(png.size(), 24u);
	EXPECT_EQ(png.substr(0, 8), "\x89PNG\r\n\x1a\n");
	EXPECT_EQ(png.substr(12, 4), "IHDR");
}

} // namespace
