// SPDX-License-Identifier: MIT
//
// state.hpp - what the plugin's files share, and nothing outside the
// plugin sees: the objects behind NCCL's opaque pointers (links opened as
// tb5 devices, comms, requests, listeners, regions), the process-wide
// state they live in, and the helpers each file offers the others.
//
// Who holds what: devices.cc lists the links and opens them (and answers
// devices/getProperties), connect.cc sets connections up and routes them
// to a cable, data_path.cc moves requests, memory.cc registers regions,
// stats.cc traces and times. Locks: g.mu guards the listing, the open
// links and their reference counts; a Device's poll_mu lets one thread at
// a time poll it (and closing an endpoint waits for that thread).
#ifndef TB5_PLUGIN_STATE_HPP
#define TB5_PLUGIN_STATE_HPP

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <tb5/tb5.h>

#include "handles.hpp"
#include "live_counters.hpp"
#include "net.hpp"

namespace tb5net {

namespace live = ::tb5::live;
using tb5::tools::DevicePtr;
using tb5::tools::EndpointPtr;

// ---- objects ---------------------------------------------------------------

// One opened link, shared by every comm on it in this process.
struct Device {
	std::string name;
	DevicePtr dev;
	tb5_link_info info{};
	int refs = 0;			// comms, listeners and regions (g.mu)
	std::mutex poll_mu;		// one poller at a time; close waits for it
	tb5_mr *scratch = nullptr;	// for zero-byte operations
	alignas(16) uint8_t scratch_buf[64] = {};
	live::ShmLink *live = nullptr;
	std::vector<tb5_mr *> deferred;	// regions busy when deregistered (g.mu)
	// TB5_NCCL_STATS=1: where the proxy threads' time goes, logged when
	// the link is closed (under poll_mu).
	std::chrono::steady_clock::time_point opened;
	std::atomic<uint64_t> next_poll_ns{0};	// progress() rests until then
	uint64_t polls = 0, busy_polls = 0, completions = 0, poll_ns = 0, busy_ns = 0;
	// isend's tb5_send() and irecv's tb5_post() (any thread: atomics).
	std::atomic<uint64_t> sends{0}, send_ns{0}, posts{0}, post_ns{0};
};

// A registered region. Zero-byte regions have no tb5 region of their own:
// zero-byte operations use the device's scratch region.
struct Mr {
	Device *dev;
	tb5_mr *mr;
	uintptr_t base;
	size_t len;
};

enum class Kind : uint8_t { kSend, kRecv };

struct Comm;

// One NCCL request: a send, or a group of up to kMaxRecvs receives. The
// low 4 bits of a tb5 operation's user_data say which of the group it is.
struct alignas(16) Request {
	Comm *comm = nullptr;
	int n = 0;
	std::atomic<int> pending{0};
	std::atomic<int> error{0};
	uint64_t bytes[kMaxRecvs] = {};
};

struct Comm {
	Kind kind;
	Device *dev = nullptr;
	EndpointPtr ep;			// closed by delete_comm() under poll_mu
	uint64_t peer_host = 0;
	int max_ops = 0;		// the endpoint's sends (or receives) in flight
	int ops = 0;			// posted and not yet returned by test()
	uint32_t used = 0;		// bit i: reqs[i] in use
	uint32_t stalls = 0;		// test() calls without progress
	std::chrono::steady_clock::time_point started;	// connect attempts
	std::array<Request, NCCL_NET_MAX_REQUESTS> reqs;
};

struct Listener {
	std::vector<std::pair<Device *, EndpointPtr>> eps;
	uint64_t host = 0;
	uint64_t service = 0;
};

// An NCCL device: one link.
struct NetDev {
	std::string name;
	std::string pci_path;		// empty: no PCI device (loop, simulator)
	uint64_t guid = 0;
	std::vector<int> links;		// indexes into Global::links
};

struct Global {
	std::mutex mu;
	int inits = 0;
	bool listed = false;
	std::vector<tb5_link_info> links;	// as listed at the first init
	std::vector<NetDev> devs;		// one per link
	std::map<std::string, std::unique_ptr<Device>> open;
	std::set<Comm *> connecting;		// attempts a handle may name
	// Connects waiting for a link to come up, by (host, service): since when.
	std::map<std::pair<uint64_t, uint64_t>, std::chrono::steady_clock::time_point> waits;
	std::unique_ptr<live::Publisher> live;

	// Every link still open, closed (finalize, or unloading). mu held,
	// or no other thread left.
	void close_links();

	// A plugin unloaded without finalize() (v7..v10, or a crashed job's
	// teardown): give the links back.
	~Global();
};

extern Global g;

// ---- devices.cc: links, opened and listed ----------------------------------

// libtb5's message for the last failure on this thread, never empty.
const char *last_error();
// A negative errno as NCCL's result: the peer's doing, misuse, or ours.
ncclResult_t from_errno(int err);
// Open (or share) the tb5 device of a link; nullptr (logged) when it
// cannot be opened. acquire_locked: g.mu held.
Device *acquire_locked(const std::string &name);
Device *acquire(const std::string &name);
// Drop one reference; the last closes the link. release_locked: g.mu held.
void release_locked(Device *d);
void release(Device *d);
// NCCL device @dev's link name, or "" when there is no such device.
std::string device_link_name(int dev);
// This host's links and their peers, for messages.
std::string describe_links();
// This host's id (the first link's local end), 0 when it has no links.
uint64_t local_host();
// This machine's host name, "" when it has none.
std::string this_host_name();
// A host name from the wire (a handle): its printable characters up to the
// first NUL within @size, "" when none.
std::string host_name(const char *wire, size_t size);
// "host <self> (<name>) has no cable to host <peers...> (<peer_name>)
// (this host's links: ...); cable the pair or leave one of them out of
// the job": a name where known (@peer_name only with one peer).
std::string no_cable(uint64_t self, const std::vector<uint64_t> &peers,
		     const std::string &peer_name = {});
// NCCL named device @dev, which this host does not have: logged for
// @call, with the hosts of this machine's other ranks that this one has
// no cable to when that explains it. g.mu held.
ncclResult_t no_device_locked(const char *call, int dev);

// ---- hosts.cc: this machine's tb5 hosts and their cables ----------------------

// Tell the other processes on this machine (<live dir>/tb5hosts.<pid>)
// this host's id and its cables' peers, when they changed. g.mu held.
void publish_host_locked();
// Take this process's file away (at the last finalize; when @exiting, not
// if it reported a missing cable: the other end of it may still read it).
void unpublish_host(bool exiting);
// The hosts of the other processes on this machine that this host has no
// cable to, as far as is known now, in order; *@unknown: this host's links
// that are not up yet (their peers unknown, so not ruled out). Waits up
// to half a second for them. g.mu held.
std::vector<uint64_t> hosts_without_cable_locked(std::string *unknown);

// ---- data_path.cc: comms and their requests -----------------------------------

Comm *new_comm(Kind kind, Device *d, EndpointPtr ep);
// Closes the comm's endpoint (close_endpoint) and drops its link.
void delete_comm(Comm *c);
// Close an endpoint while no thread is between reaping and dispatching a
// completion of it: after this no completion names the comm's requests.
void close_endpoint(Device *d, EndpointPtr ep);
// Run the device: move frames (simulator), reap completions. Another
// thread already polling makes the progress for us.
void progress(Device *d);

// ---- memory.cc: registered regions ------------------------------------------

// The region and offset of [data, data + size) for an operation on @c:
// 0, or -EINVAL (logged) when @mhandle does not cover it.
int locate(Comm *c, void *mhandle, void *data, size_t size, tb5_mr **mr, uint64_t *offset);
// Regions that were busy at deregistration; retried when comms go. g.mu held.
void retry_deferred_locked(Device *d);

// ---- stats.cc: tracing and timing (TB5_NCCL_TRACE, TB5_NCCL_STATS) -------

uint64_t now_ns();
// TB5_NCCL_STATS is set.
bool stats_on();
// One tb5_poll(), timed when TB5_NCCL_STATS is set. poll_mu held.
int poll(Device *d, tb5_wc *wc, int max);
// What the link carried (the live counters) and, with TB5_NCCL_STATS,
// where its time went: logged when it closes.
void log_totals(Device *d);
void log_stats(Device *d);

// TB5_NCCL_TRACE=<prefix>: a timeline of the data path, written to
// <prefix>.<pid> at exit. Off, trace_ev() costs one load and a branch.
extern std::atomic<bool> g_trace_on;
void trace_record(char kind, const void *comm, const void *req, uint64_t bytes);

// @kind: S isend, R irecv, s/r completion, T test done, P poll.
inline void trace_ev(char kind, const void *comm, const void *req, uint64_t bytes)
{
	if (!g_trace_on.load(std::memory_order_relaxed)) [[likely]]
		return;
	trace_record(kind, comm, req, bytes);
}

} // namespace tb5net

#endif // TB5_PLUGIN_STATE_HPP
