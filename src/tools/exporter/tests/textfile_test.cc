// SPDX-License-Identifier: MIT
//
// textfile_test.cc - tb5.prom for the node exporter's textfile collector:
// written whole, replaced whole, nothing else left in the directory.
#include "textfile.hpp"

#include "errors.hpp"

#include <gtest/gtest.h>

#include <dirent.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::vector<std::string> entries(const std::string &dir)
{
	std::vector<std::string> out;
	DIR *d = opendir(dir.c_str());
	if (!d)
		return out;
	while (struct dirent *e = readdir(d))
		if (std::string(e->d_name) != "." && std::string(e->d_name) != "..")
			out.push_back(e->d_name);
	closedir(d);
	return out;
}

std::string read(const std::string &path)
{
	std::ifstream in(path);
	std::ostringstream s;
	s << in.rdbuf();
	return s.str();
}

TEST(Textfile, WrittenAndReplacedWhole)
{
	char tmpl[] = "/tmp/tb5-textfile-XXXXXX";
	const char *dir = mkdtemp(tmpl);
	ASSERT_TRUE(dir);
	tb5exporter::write_textfile(dir, "tb5_up 1\n");
	EXPECT_EQ(read(std::string(dir) + "/tb5.prom"), "tb5_up 1\n");
	tb5exporter::write_textfile(dir, "tb5_up 0\n");
	EXPECT_EQ(read(std::string(dir) + "/tb5.prom"), "tb5_up 0\n");
	EXPECT_EQ(entries(dir), std::vector<std::string>{"tb5.prom"});
	struct stat st;
	ASSERT_EQ(stat((std::string(dir) + "/tb5.prom").c_str(), &st), 0);
	EXPECT_EQ(st.st_mode & 0777, 0644u);
	(void)!std::system(("rm -rf '" + std::string(dir) + "'").c_str());
}

TEST(Textfile, ADirectoryItCannotWriteIsNamed)
{
	try {
		tb5exporter::write_textfile("/nonexistent-tb5-dir", "x\n");
		ADD_FAILURE() << "written";
	} catch (const tb5::tools::Error &e) {
		EXPECT_NE(std::string(e.what()).find("/nonexistent-tb5-dir"), std::string::npos)
			<< e.what();
	}
}

} // namespace
