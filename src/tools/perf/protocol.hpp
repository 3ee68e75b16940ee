// SPDX-License-Identifier: MIT
//
// protocol.hpp - how a tb5-perf client tells a server what to run.
//
// A session is one control endpoint (the client's first connection) and, per
// test, data endpoints. Control messages are fixed 192-byte CtlMsg structs
// sent with tag kTagCtl; data uses the other tags, so the two never pair up.
//
//   client                               server
//   connect, HELLO(session, bytes)  ->   registers buffers of that size
//                                   <-   WELCOME(its link, memory, version)
//   OPEN(n), connect n endpoints,
//   JOIN(session, i) on each        ->   accepts them; data endpoint i
//                                   <-   OPENED
//   RUN(test, size, count, ...)     ->   posts its receives
//                                   <-   READY
//   ... the test's messages ...
//   [END(count): lat-load only]     ->
//                                   <-   DONE(status, results)
//   CLOSE                           ->   closes the data endpoints
//                                   <-   CLOSED
//   BYE                             ->   ends the session
//
// Every message carries magic and version; a server that does not speak the
// client's version answers ERROR with a text. Byte order: both ends are
// little-endian (checked at compile time).
#ifndef TB5_PERF_PROTOCOL_HPP
#define TB5_PERF_PROTOCOL_HPP

#include <bit>
#include <cstdint>
#include <string>

namespace tb5perf {

static_assert(std::endian::native == std::endian::little,
	      "the control protocol is little-endian");

constexpr uint32_t kCtlMagic = 0x66503554;	// "T5Pf"
constexpr uint16_t kCtlVersion = 1;

// Tags. Sends and receives pair up per tag, in posting order.
constexpr uint32_t kTagCtl = 0x7462;
constexpr uint32_t kTagData = 1;	// bw, bibw, streams, lat-load bulk
constexpr uint32_t kTagPing = 2;	// client -> server
constexpr uint32_t kTagPong = 3;	// server -> client

enum class CtlType : uint16_t {
	kHello = 1,
	kWelcome,
	kBusy,
	kOpen,
	kJoin,
	kOpened,
	kRun,
	kReady,
	kDone,
	kEnd,
	kClose,
	kClosed,
	kBye,
	kError,
};

// RUN flags.
constexpr uint32_t kRunVerify = 1u << 0;
constexpr uint32_t kRunWait = 1u << 1;

struct CtlMsg {
	uint32_t magic = kCtlMagic;
	uint16_t version = kCtlVersion;
	uint16_t type = 0;	// CtlType
	uint32_t test = 0;	// RUN: Test
	uint32_t flags = 0;	// RUN: kRun*
	uint64_t session = 0;	// HELLO, JOIN
	uint64_t size = 0;	// RUN: message size; HELLO: buffer bytes
	uint64_t count = 0;	// RUN: messages per stream; END: bulk messages
	uint32_t window = 0;	// RUN: messages in flight per endpoint
	uint32_t streams = 0;	// OPEN, RUN: data endpoints
	uint32_t index = 0;	// JOIN: which data endpoint
	int32_t status = 0;	// DONE: 0 or a negative errno
	uint64_t aux = 0;	// RUN lat-load: bulk message size; DONE of
				// bw, bibw, streams: the server process's CPU
				// ns from READY to DONE (0: not measured);
				// WELCOME: the server's Memory
	uint64_t v[5] = {};	// WELCOME, DONE: see below
	char text[88] = {};	// WELCOME: library version; DONE, ERROR: why
};
static_assert(sizeof(CtlMsg) == 192);
constexpr uint32_t kCtlSize = sizeof(CtlMsg);

// WELCOME values.
enum : unsigned { kWelHost, kWelMaxOps, kWelRing, kWelSpeed, kWelBackend };
// DONE values.
enum : unsigned { kDoneBytes, kDoneMessages, kDoneErrors, kDoneNs, kDoneBulk };

CtlMsg make_ctl(CtlType type);
const char *ctl_type_name(uint16_t type);
void set_text(CtlMsg &msg, const std::string &text);
std::string text(const CtlMsg &msg);
// Checks magic and version; throws Error when they are wrong.
void validate_ctl(const CtlMsg &msg);

// user_data of posted operations: what the operation is in the top byte,
// the owner below (a pipe, a control slot) and a slot number.
enum UdKind : uint64_t {
	kUdCtl = 1,	// a control send or receive: slot in the low bits
	kUdPending = 2,	// server: first message of an accepted endpoint
	kUdPipe = 3,	// a bandwidth pipe: owner = pipe id, slot
	kUdPing = 4,	// ping-pong: slot
	kUdPong = 5,
};
constexpr uint64_t make_ud(UdKind kind, uint32_t owner, uint32_t slot)
{
	return (static_cast<uint64_t>(kind) << 56) |
	       (static_cast<uint64_t>(owner & 0xffffff) << 32) | slot;
}
constexpr UdKind ud_kind_of(uint64_t ud) { return static_cast<UdKind>(ud >> 56); }
constexpr uint32_t ud_owner(uint64_t ud) { return (ud >> 32) & 0xffffff; }
constexpr uint32_t ud_slot(uint64_t ud) { return static_cast<uint32_t>(ud); }

// Endpoint contexts (events carry them in user_data).
enum CtxKind : uint64_t {
	kCtxListener = 0x11,
	kCtxCtl = 0x12,
	kCtxData = 0x13,	// owner = data endpoint index
	kCtxPending = 0x14,	// owner = pending id
};
constexpr uint64_t make_ctx(CtxKind kind, uint32_t owner)
{
	return (static_cast<uint64_t>(kind) << 56) | owner;
}
constexpr CtxKind ctx_kind_of(uint64_t ctx) { return static_cast<CtxKind>(ctx >> 56); }
constexpr uint32_t ctx_owner(uint64_t ctx) { return static_cast<uint32_t>(ctx); }

} // namespace tb5perf

#endif // TB5_PERF_PROTOCOL_HPP
