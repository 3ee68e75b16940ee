// SPDX-License-Identifier: MIT
//
// plot.cc - --plot: a gnuplot script with the rows inline, run through
// gnuplot, the image it prints written to the file.
#include "plot.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "errors.hpp"
#include "units.hpp"

extern char **environ;

namespace tb5perf {
namespace {

constexpr Test kBwTests[] = {Test::kBw, Test::kBibw, Test::kStreams};
constexpr Test kLatTests[] = {Test::kLat, Test::kJitter, Test::kLatLoad};
// Most labelled sizes on an x axis before they are thinned out.
constexpr int kMaxXTics = 12;

const char *color(Test t)
{
	switch (t) {
	case Test::kBw: return "#1f77b4";
	case Test::kBibw: return "#ff7f0e";
	case Test::kStreams: return "#2ca02c";
	case Test::kLat: return "#1f77b4";
	case Test::kJitter: return "#9467bd";
	case Test::kLatLoad: return "#d62728";
	}
	return "black";
}

// A gnuplot double-quoted string: backslashes and quotes escaped, a
// newline as \n, other control characters (there should be none) as
// spaces.
std::string quote(const std::string &s)
{
	std::string q = "\"";

	for (char c : s) {
		if (c == '\n') {
			q += "\\n";
			continue;
		}
		if (c == '\\' || c == '"')
			q += '\\';
		q += static_cast<unsigned char>(c) < 0x20 ? ' ' : c;
	}
	return q + "\"";
}

std::string num(double v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%.6g", v);
	return buf;
}

// A rate for a label: "10", "9.99", "4.995".
std::string rate(double gbps)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%.4g", gbps);
	return buf;
}

std::string block(Test t)
{
	// (built up with append: gcc 12 at -O3 warns, wrongly, that the
	// memcpy of operator+(const char *, string &&) may overlap)
	std::string name = "$";
	name.append(test_name(t));

	std::replace(name.begin(), name.end(), '-', '_');
	return name;
}

std::vector<const Row *> rows_of(const std::vector<Row> &rows, Test t)
{
	std::vector<const Row *> out;

	for (const Row &r : rows)
		if (r.test == t && (!is_latency_test(t) || r.lat))
			out.push_back(&r);
	std::sort(out.begin(), out.end(),
		  [](const Row *a, const Row *b) { return a->size < b->size; });
	return out;
}

// The rows of @t as an inline data block: "$<test> << EOD", a comment that
// names the @columns after the size, a line per row (its size, then
// @values(row)), "EOD". Nothing when @t has no rows.
template <typename Values>
void data_block(std::ostream &s, const std::vector<Row> &rows, Test t, const char *columns,
		Values values)
{
	const auto rs = rows_of(rows, t);

	if (rs.empty())
		return;
	s << block(t) << " << EOD\n# size " << columns << "\n";
	for (const Row *r : rs)
		s << r->size << " " << values(*r) << "\n";
	s << "EOD\n";
}

// The env's string at @key of @obj ("" if absent or not a string).
std::string str(const nlohmann::json &env, const char *obj, const char *key)
{
	const nlohmann::json *j = &env;

	if (obj) {
		if (!env.is_object() || !env.contains(obj))
			return "";
		j = &env[obj];
	}
	if (!j->is_object() || !j->contains(key) || !(*j)[key].is_string())
		return "";
	return (*j)[key].get<std::string>();
}

// The link model's settings of TB5_SIM ("rate=80,usb4=1"): what follows
// the fabric's name, less the slots tb5-perf sets itself.
std::string sim_model(const nlohmann::json &env)
{
	const std::string sim = str(env, nullptr, "simulator");
	const size_t colon = sim.find(':');
	std::string out;

	if (colon == std::string::npos)
		return "";
	std::istringstream in(sim.substr(colon + 1));
	std::string kv;
	while (std::getline(in, kv, ',')) {
		const std::string key = kv.substr(0, kv.find('='));
		if (kv.empty() || key == "hosts" || key == "host" || key == "loop")
			continue;
		out += (out.empty() ? "" : ",") + kv;
	}
	return out;
}

std::string title(const nlohmann::json &env)
{
	std::string first = "tb5-perf";
	const std::string mode = str(env, nullptr, "mode");
	const std::string link = str(env, "link", "name");
	const std::string backend = str(env, "link", "backend");
	const std::string model = sim_model(env);

	if (!mode.empty())
		first += " (" + mode + ")";
	if (!link.empty())
		first += " over " + link;
	if (!backend.empty() || !model.empty()) {
		first += " (";
		if (!backend.empty())
			first += backend + " link";
		if (!model.empty())
			first += (backend.empty() ? "" : ", ") + model;
		first += ")";
	}
	std::string second;
	for (const std::string &part :
	     {str(env, "host", "name"), str(env, nullptr, "date"),
	      str(env, nullptr, "tool_version").empty()
		      ? std::string()
		      : "tb5-perf " + str(env, nullptr, "tool_version")})
		if (!part.empty())
			second += (second.empty() ? "" : ", ") + part;
	return second.empty() ? first : first + "\n" + second;
}

// x range and labelled sizes of a panel from @lo to @hi bytes: the powers
// of two between, or every 2nd, 4th... of them (multiples of that in the
// exponent, so that KiB and MiB fall on a label) when there would be too
// many.
void x_axis(std::ostringstream &s, uint64_t lo, uint64_t hi)
{
	int a = 0, b = 0;

	while (a < 62 && (1ull << (a + 1)) <= lo)
		a++;
	while (b < 62 && (1ull << b) < hi)
		b++;
	int step = 1;
	while ((b - a) / step + 1 > kMaxXTics)
		step *= 2;
	s << "set xrange [" << num(static_cast<double>(lo) / 1.3) << ":"
	  << num(static_cast<double>(hi) * 1.3) << "]\n";
	s << "set xtics (";
	bool first = true;
	for (int e = (a + step - 1) / step * step; e <= b; e += step) {
		s << (first ? "" : ", ") << quote(format_size(1ull << e)) << " "
		  << (1ull << e);
		first = false;
	}
	s << ")\n";
}

void size_range(const std::vector<Row> &rows, const Test (&tests)[3],
	       uint64_t &lo, uint64_t &hi)
{
	lo = UINT64_MAX;
	hi = 0;
	for (Test t : tests)
		for (const Row *r : rows_of(rows, t)) {
			lo = std::min(lo, r->size);
			hi = std::max(hi, r->size);
		}
}

void bandwidth_panel(std::ostringstream &s, const std::vector<Row> &rows,
		    const nlohmann::json &env)
{
	uint64_t lo, hi;
	std::optional<double> line;
	bool bibw = false;
	std::vector<std::string> plots;

	double top = 0;

	size_range(rows, kBwTests, lo, hi);
	for (Test t : kBwTests) {
		const auto rs = rows_of(rows, t);
		if (rs.empty())
			continue;
		for (const Row *r : rs) {
			if (r->line_gbps && *r->line_gbps > 0)
				line = std::max(line.value_or(0), *r->line_gbps);
			top = std::max(top, r->gbps);
		}
		bibw |= t == Test::kBibw;
		std::string title(test_name(t));
		if (t == Test::kBibw)
			title += " (sum of both directions)";
		else if (t == Test::kStreams)
			title += " (" + std::to_string(rs.front()->streams) +
				 " endpoints, sum)";
		plots.push_back(block(t) + " using 1:2 with linespoints lw 2 "
			       "pt 7 ps 0.6 lc rgb " + quote(color(t)) +
			       " title " + quote(title));
	}
	if (line) {
		std::string title = "line rate " + rate(*line) +
				    " GB/s per direction";
		const std::string model = sim_model(env);
		if (!model.empty())
			title += " (simulator " + model + ")";
		plots.push_back(num(*line) + " with lines dt 2 lw 2 lc rgb "
			       "\"#555555\" title " + quote(title));
		if (bibw)
			plots.push_back(num(2 * *line) + " with lines dt 3 lw 2 "
				       "lc rgb \"#999999\" title " +
				       quote("2 x line rate (bibw's ceiling)"));
	}
	// Room above the highest line for the key and the references.
	if (line)
		top = std::max(top, (bibw ? 2 : 1) * *line);
	s << "set title \"bandwidth\"\n";
	x_axis(s, lo, hi);
	s << "set xlabel \"message size\"\n"
	     "set ylabel \"GB/s (1e9 bytes/s)\"\n"
	     "unset logscale y\n"
	  << (top > 0 ? "set yrange [0:" + num(top * 1.25) + "]\n"
		      : std::string("set yrange [0:*]\n"))
	  << "set key top left Left reverse\n"
	     "plot ";
	for (size_t i = 0; i < plots.size(); i++)
		s << (i ? ", \\\n     " : "") << plots[i];
	s << "\n";
}

void latency_panel(std::ostringstream &s, const std::vector<Row> &rows)
{
	uint64_t lo, hi;
	bool positive = true;
	std::vector<std::string> plots;

	size_range(rows, kLatTests, lo, hi);
	for (Test t : kLatTests) {
		const auto rs = rows_of(rows, t);
		if (rs.empty())
			continue;
		for (const Row *r : rs)
			positive &= r->lat->p50 > 0 && r->lat->p99 > 0;
		const std::string name(test_name(t));
		const std::string lc = " lc rgb " + quote(color(t));
		plots.push_back(block(t) + " using 1:2 with linespoints lw 2 "
			       "pt 7 ps 0.6" + lc + " title " +
			       quote(name + " p50"));
		plots.push_back(block(t) + " using 1:3 with linespoints dt 2 "
			       "lw 1.5 pt 6 ps 0.6" + lc + " title " +
			       quote(name + " p99"));
	}
	s << "set title \"one-way latency (half the round trip)\"\n";
	x_axis(s, lo, hi);
	s << "set xlabel \"message size\"\n"
	     "set ylabel \"us\"\n"
	  << (positive ? "set logscale y 10\n" : "unset logscale y\n")
	  << "set yrange [*:*]\n"
	     "set key top left Left reverse\n"
	     "plot ";
	for (size_t i = 0; i < plots.size(); i++)
		s << (i ? ", \\\n     " : "") << plots[i];
	s << "\n";
}

bool executable(const std::string &path)
{
	struct stat st;

	return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
	       access(path.c_str(), X_OK) == 0;
}

std::optional<std::string> in_path(const std::string &name)
{
	if (name.find('/') != std::string::npos)
		return executable(name) ? std::optional(name) : std::nullopt;
	const char *path = getenv("PATH");
	std::istringstream in(path ? path : "/usr/local/bin:/usr/bin:/bin");
	std::string dir;
	while (std::getline(in, dir, ':')) {
		const std::string full = (dir.empty() ? "." : dir) + "/" + name;
		if (executable(full))
			return full;
	}
	return std::nullopt;
}

// A temporary file that holds the script, removed when done.
class ScriptFile {
public:
	explicit ScriptFile(const std::string &text)
	{
		const char *tmp = getenv("TMPDIR");
		path_ = std::string(tmp && *tmp ? tmp : "/tmp") +
			"/tb5-perf-plot-XXXXXX.gp";
		const int fd = mkstemps(path_.data(), 3);
		if (fd < 0)
			throw Error("--plot: cannot create " + path_ + ": " +
				    strerror(errno));
		size_t done = 0;
		while (done < text.size()) {
			const ssize_t n = write(fd, text.data() + done,
						text.size() - done);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				const int err = errno;
				close(fd);
				unlink(path_.c_str());
				throw Error("--plot: cannot write " + path_ +
					    ": " + strerror(err));
			}
			done += static_cast<size_t>(n);
		}
		close(fd);
	}
	~ScriptFile() { unlink(path_.c_str()); }
	ScriptFile(const ScriptFile &) = delete;
	ScriptFile &operator=(const ScriptFile &) = delete;
	const std::string &path() const { return path_; }

private:
	std::string path_;
};

} // namespace

std::optional<PlotFormat> plot_format_of(const std::string &path)
{
	const size_t dot = path.rfind('.');
	if (dot == std::string::npos || path.find('/', dot) != std::string::npos)
		return std::nullopt;
	std::string ext = path.substr(dot + 1);
	for (char &c : ext)
		c = static_cast<char>(tolower(static_cast<unsigned char>(c)));
	if (ext == "svg")
		return PlotFormat::kSvg;
	if (ext == "png")
		return PlotFormat::kPng;
	return std::nullopt;
}

std::string plot_script(const std::vector<Row> &rows, const nlohmann::json &env,
		       PlotFormat format)
{
	std::ostringstream s;
	bool have_bw = false, have_lat = false;

	for (Test t : kBwTests)
		have_bw |= !rows_of(rows, t).empty();
	for (Test t : kLatTests)
		have_lat |= !rows_of(rows, t).empty();
	const int panels = have_bw + have_lat;
	const std::string size = panels == 2 ? "size 900,1000" : "size 900,560";

	s << "# tb5-perf --plot: the run's rows, drawn on stdout\n";
	if (format == PlotFormat::kSvg) {
		s << "set terminal svg " << size << " dynamic noenhanced "
		     "font \"sans,12\" background rgb \"white\"\n";
	} else {
		// gnuplot-nox has cairo; a gnuplot built without it has gd.
		s << "if (strstrt(GPVAL_TERMINALS, \"pngcairo\") > 0) {\n"
		     "    set terminal pngcairo " << size << " noenhanced "
		     "font \"sans,10\" background rgb \"white\"\n"
		     "} else {\n"
		     "    set terminal png " << size << " noenhanced "
		     "background rgb \"white\"\n"
		     "}\n";
	}
	s << "set encoding utf8\n";
	for (Test t : kBwTests)
		data_block(s, rows, t, "GB/s", [](const Row &r) { return num(r.gbps); });
	for (Test t : kLatTests)
		data_block(s, rows, t, "p50(us) p99(us) min(us) max(us)", [](const Row &r) {
			return num(r.lat->p50 / 1000) + " " + num(r.lat->p99 / 1000) + " " +
			       num(r.lat->min / 1000) + " " + num(r.lat->max / 1000);
		});
	s << "set grid\n"
	     "set logscale x 2\n"
	     "set multiplot layout " << std::max(panels, 1) << ",1 title "
	  << quote(title(env)) << "\n";
	if (have_bw)
		bandwidth_panel(s, rows, env);
	if (have_lat)
		latency_panel(s, rows);
	if (!panels)
		s << "unset logscale x\n"
		     "set label \"no results\" at graph 0.5, graph 0.5 center\n"
		     "unset xtics\nunset ytics\n"
		     "plot [0:1] NaN notitle\n";
	s << "unset multiplot\n";
	return s.str();
}

std::optional<std::string> find_gnuplot()
{
	const char *over = getenv("TB5_GNUPLOT");

	return in_path(over && *over ? over : "gnuplot");
}

std::string no_gnuplot_message()
{
	const char *over = getenv("TB5_GNUPLOT");

	if (over && *over)
		return std::string("--plot needs gnuplot: TB5_GNUPLOT=") + over +
		       " is not an executable file";
	return "--plot needs gnuplot (apt install gnuplot-nox): there is "
	       "none in PATH";
}

std::string plot_preflight(const std::string &path)
{
	if (!find_gnuplot())
		return no_gnuplot_message();
	const size_t slash = path.rfind('/');
	const std::string dir = slash == std::string::npos ? "."
				: slash == 0 ? "/" : path.substr(0, slash);
	if (access(dir.c_str(), W_OK) < 0)
		return "--plot: cannot write " + path + ": " + dir + ": " +
		       strerror(errno);
	return "";
}

void render_plot(const std::string &gnuplot, const std::string &script,
		const std::string &path)
{
	const ScriptFile file(script);
	int out[2];

	if (pipe2(out, O_CLOEXEC) < 0)
		throw Error(std::string("--plot: pipe: ") + strerror(errno));
	posix_spawn_file_actions_t actions;
	posix_spawnattr_t attr;
	sigset_t def;
	posix_spawn_file_actions_init(&actions);
	posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
	posix_spawnattr_init(&attr);
	// tb5-perf ignores SIGPIPE; gnuplot gets the defaults back.
	sigemptyset(&def);
	sigaddset(&def, SIGPIPE);
	sigaddset(&def, SIGINT);
	sigaddset(&def, SIGTERM);
	sigaddset(&def, SIGHUP);
	posix_spawnattr_setsigdefault(&attr, &def);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);
	// -d: no ~/.gnuplot, the same picture for everyone.
	std::string arg0 = gnuplot, arg1 = "-d", arg2 = file.path();
	char *argv[] = {arg0.data(), arg1.data(), arg2.data(), nullptr};
	pid_t pid;
	const int err = posix_spawn(&pid, gnuplot.c_str(), &actions, &attr,
				    argv, environ);
	posix_spawn_file_actions_destroy(&actions);
	posix_spawnattr_destroy(&attr);
	close(out[1]);
	if (err) {
		close(out[0]);
		throw Error("--plot: cannot run " + gnuplot + ": " +
			    strerror(err));
	}
	std::string image;
	char buf[65536];
	for (;;) {
		const ssize_t n = read(out[0], buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		image.append(buf, static_cast<size_t>(n));
	}
	close(out[0]);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFSIGNALED(status))
		throw Error("--plot: " + gnuplot + " was killed by signal " +
			    std::to_string(WTERMSIG(status)));
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		throw Error("--plot: " + gnuplot + " failed (exit status " +
			    std::to_string(WEXITSTATUS(status)) +
			    "; its messages are above)");
	if (image.empty())
		throw Error("--plot: " + gnuplot + " drew nothing");

	std::ofstream f(path, std::ios::binary | std::ios::trunc);
	if (f)
		f.write(image.data(), static_cast<std::streamsize>(image.size()));
	f.close();
	if (!f)
		throw Error("--plot: cannot write " + path + ": " +
			    strerror(errno));
}

void draw_plot(const Options &opt, const std::vector<Row> &rows,
	      const nlohmann::json &env)
{
	const auto gnuplot = find_gnuplot();

	if (!gnuplot)
		throw Error(no_gnuplot_message());
	render_plot(*gnuplot, plot_script(rows, env, opt.plot_format), opt.plot);
}

} // namespace tb5perf
