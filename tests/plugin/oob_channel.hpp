// SPDX-License-Identifier: MIT
//
// oob_channel.hpp - how two ranks of the ABI harness in different processes
// (or on different hosts) tell each other what NCCL's bootstrap would carry:
// handles, device counts, "done". Pipes between a parent and its child, or
// a serial line between two VMs.
#ifndef TB5_PLUGIN_OOB_CHANNEL_HPP
#define TB5_PLUGIN_OOB_CHANNEL_HPP

#include <cstddef>
#include <deque>
#include <string>
#include <utility>

namespace tb5plugintest {

class Channel {
public:
	virtual ~Channel() = default;
	virtual bool Send(const void *p, size_t n) = 0;
	virtual bool Recv(void *p, size_t n, double timeout_s) = 0;
};

// Two pipes, one each way.
class PipeChannel : public Channel {
public:
	PipeChannel(int wfd, int rfd) : wfd_(wfd), rfd_(rfd) {}
	bool Send(const void *p, size_t n) override;
	bool Recv(void *p, size_t n, double timeout_s) override;

private:
	int wfd_, rfd_;
};

// A serial line to the other host. A line loses what arrives before the
// other end has opened its port (opening a UART clears its FIFO) and may
// carry noise from then, so: text lines "TB5OOB <word> <arg>" that the
// reader picks out of whatever else comes, and before anything else a
// handshake (HELLO until the other side answers READY, which it does to
// every HELLO it ever sees) so that neither side sends data before the
// other listens. Opened once for the whole run (the tests follow one
// another over it), raw when it is a terminal: no echo, no line editing.
//
// Data (DATA lines) is for the step both sides are at. Sync() keeps two
// hosts running one test suite in step: a test that fails on one host
// jumps to its end barrier, and the other host's next wait sees that
// (a DATA wait or a mid-test barrier fails at once instead of timing out
// for each remaining step) and meets it there.
class LineChannel : public Channel {
public:
	// The line at @path, opened on the first call (nullptr and errno when
	// it cannot be); later calls return the same one.
	static LineChannel *Get(const char *path, const std::string &role);

	// Both sides listen: HELLO every half second until READY comes.
	bool Handshake(double timeout_s);
	bool Send(const void *p, size_t n) override;
	// False on timeout, on data of another length, and when the other side
	// reached an end barrier (it gave up on the step we are at).
	bool Recv(void *p, size_t n, double timeout_s) override;

	// A barrier named @tag. An end barrier (@end) passes over whatever the
	// other side sent before reaching it; a mid barrier fails (false) if
	// the other side is at an end barrier instead, leaving that for ours.
	bool Sync(const std::string &tag, bool end, double timeout_s);

private:
	LineChannel(int fd, const std::string &role) : fd_(fd), role_(role) {}
	bool Put(const std::string &word, const std::string &arg);
	// The next line of ours that is not part of the handshake, stashed
	// ones first; answers HELLOs on the way.
	bool Next(std::string *word, std::string *arg, double timeout_s);
	bool Take(std::string *word, std::string *arg, double timeout_s);

	int fd_;
	std::string role_;
	std::string buf_;
	bool synced_ = false;
	std::deque<std::pair<std::string, std::string>> early_;	// not yet wanted
};

} // namespace tb5plugintest

#endif // TB5_PLUGIN_OOB_CHANNEL_HPP
