// SPDX-License-Identifier: MIT
//
// oob_channel.cc - see oob_channel.hpp.
#include "oob_channel.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>

#include <fcntl.h>
#include <poll.h>
#include <termios.h>
#include <unistd.h>

namespace tb5plugintest {

namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t0)
{
	return std::chrono::duration<double>(Clock::now() - t0).count();
}

// write() and read() of exactly @n bytes (pipes and lines hand bytes over
// in pieces).
bool WriteFull(int fd, const void *p, size_t n)
{
	const char *c = static_cast<const char *>(p);
	while (n) {
		ssize_t k = write(fd, c, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return false;
		c += k;
		n -= (size_t)k;
	}
	return true;
}

bool ReadFull(int fd, void *p, size_t n, double timeout_s)
{
	char *c = static_cast<char *>(p);
	auto t0 = Clock::now();
	while (n) {
		struct pollfd pfd = {fd, POLLIN, 0};
		if (Since(t0) > timeout_s)
			return false;
		int r = poll(&pfd, 1, 200);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return false;
		if (r == 0)
			continue;
		ssize_t k = read(fd, c, n);
		if (k < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (k <= 0)
			return false;
		c += k;
		n -= (size_t)k;
	}
	return true;
}

} // namespace

bool PipeChannel::Send(const void *p, size_t n) { return WriteFull(wfd_, p, n); }

bool PipeChannel::Recv(void *p, size_t n, double timeout_s) { return ReadFull(rfd_, p, n, timeout_s); }

LineChannel *LineChannel::Get(const char *path, const std::string &role)
{
	static LineChannel *line = nullptr;
	if (!line) {
		int fd = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC);
		if (fd < 0)
			return nullptr;
		struct termios t;
		if (isatty(fd) && !tcgetattr(fd, &t)) {
			cfmakeraw(&t);
			cfsetispeed(&t, B115200);
			cfsetospeed(&t, B115200);
			t.c_cflag |= CLOCAL | CREAD;
			(void)tcsetattr(fd, TCSANOW, &t);
		}
		line = new LineChannel(fd, role);
	}
	return line;
}

bool LineChannel::Handshake(double timeout_s)
{
	auto t0 = Clock::now();
	while (!synced_) {
		if (!Put("HELLO", role_))
			return false;
		std::string word, arg;
		auto t1 = Clock::now();
		while (!synced_ && Since(t1) < 0.5)
			// The other side may be done and sending already.
			if (Take(&word, &arg, 0.1))
				early_.push_back({word, arg});
		if (Since(t0) > timeout_s)
			return false;
	}
	return true;
}

bool LineChannel::Send(const void *p, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	std::string h;
	for (size_t i = 0; i < n; i++) {
		uint8_t b = static_cast<const uint8_t *>(p)[i];
		h += hex[b >> 4];
		h += hex[b & 15];
	}
	return Put("DATA", h);
}

bool LineChannel::Recv(void *p, size_t n, double timeout_s)
{
	auto t0 = Clock::now();
	for (;;) {
		double left = timeout_s - Since(t0);
		if (left <= 0)
			return false;
		std::string word, arg;
		if (!Next(&word, &arg, left))
			continue;
		if (word == "SYNC") {
			// The other side is at a barrier, not sending: out of
			// step. Its barrier is for ours to meet.
			early_.push_front({word, arg});
			return false;
		}
		if (word != "DATA")
			continue;
		if (arg.size() != 2 * n)
			return false;	// out of step: the test fails
		for (size_t i = 0; i < n; i++)
			static_cast<uint8_t *>(p)[i] =
				(uint8_t)std::stoul(arg.substr(2 * i, 2), nullptr, 16);
		return true;
	}
}

bool LineChannel::Sync(const std::string &tag, bool end, double timeout_s)
{
	if (!Put("SYNC", tag))
		return false;
	auto t0 = Clock::now();
	for (;;) {
		double left = timeout_s - Since(t0);
		if (left <= 0)
			return false;
		std::string word, arg;
		if (!Next(&word, &arg, left))
			continue;
		if (word != "SYNC")
			continue;	// data of a step one side gave up on
		if (arg == tag)
			return true;
		if (end)
			continue;	// a barrier of the test the other side left
		if (arg.rfind("end ", 0) == 0)
			early_.push_front({word, arg});
		return false;
	}
}

bool LineChannel::Put(const std::string &word, const std::string &arg)
{
	std::string l = "\nTB5OOB " + word + " " + arg + "\n";
	return WriteFull(fd_, l.data(), l.size());
}

bool LineChannel::Next(std::string *word, std::string *arg, double timeout_s)
{
	if (!early_.empty()) {
		*word = early_.front().first;
		*arg = early_.front().second;
		early_.pop_front();
		return true;
	}
	return Take(word, arg, timeout_s);
}

bool LineChannel::Take(std::string *word, std::string *arg, double timeout_s)
{
	auto t0 = Clock::now();
	for (;;) {
		size_t nl;
		while ((nl = buf_.find('\n')) != std::string::npos) {
			std::string l = buf_.substr(0, nl);
			buf_.erase(0, nl + 1);
			size_t at = l.find("TB5OOB ");
			if (at == std::string::npos)
				continue;
			l.erase(0, at + 7);
			size_t sp = l.find(' ');
			std::string w = l.substr(0, sp);
			std::string a = sp == std::string::npos ? "" : l.substr(sp + 1);
			if (w == "HELLO") {
				Put("READY", role_);
				continue;
			}
			if (w == "READY") {
				synced_ = true;
				continue;
			}
			*word = w;
			*arg = a;
			return true;
		}
		double left = timeout_s - Since(t0);
		if (left <= 0)
			return false;
		struct pollfd pfd = {fd_, POLLIN, 0};
		int r = poll(&pfd, 1, (int)std::max(1.0, std::min(left * 1000, 200.0)));
		if (r <= 0)
			continue;
		char c[512];
		ssize_t k = read(fd_, c, sizeof(c));
		if (k > 0)
			buf_.append(c, (size_t)k);
		else if (k == 0 || (errno != EINTR && errno != EAGAIN))
			return false;
	}
}

} // namespace tb5plugintest
