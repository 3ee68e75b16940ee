// SPDX-License-Identifier: MIT
//
// textfile.cc - see textfile.hpp.
#include "textfile.hpp"

#include "errors.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace tb5exporter {

void write_textfile(const std::string &dir, const std::string &body)
{
	const std::string final_path = dir + "/" + kTextfileName;
	// The collector reads *.prom only: the temporary name is not one.
	std::string tmp = dir + "/." + kTextfileName + ".XXXXXX";
	const int fd = mkostemp(tmp.data(), O_CLOEXEC);
	if (fd < 0)
		throw tb5::tools::Error("cannot create a file in " + dir + ": " + std::strerror(errno),
					-errno);
	const char *p = body.data();
	size_t left = body.size();
	int err = 0;
	while (left && !err) {
		const ssize_t n = write(fd, p, left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n < 0 ? errno : EIO;
			break;
		}
		p += n;
		left -= (size_t)n;
	}
	if (!err && fchmod(fd, 0644))
		err = errno;
	if (!err && fsync(fd))
		err = errno;
	if (close(fd) && !err)
		err = errno;
	if (!err && rename(tmp.c_str(), final_path.c_str()))
		err = errno;
	if (err) {
		unlink(tmp.c_str());
		throw tb5::tools::Error("cannot write " + final_path + ": " + std::strerror(err), -err);
	}
}

} // namespace tb5exporter
