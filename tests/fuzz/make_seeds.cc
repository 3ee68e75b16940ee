// SPDX-License-Identifier: MIT
//
// make_seeds.cc - writes tb5-fuzz-rx's seed corpus: one small input per
// protocol path worth starting from (handshakes both ways, a CTS and a full
// data burst, truncation, close, hello and restart, faults, floods).
// Without seeds the fuzzer would spend most of a short run learning the
// header format; with them it starts inside the protocol.
//
//   tb5-fuzz-make-seeds tests/fuzz/corpus
//
// The committed corpus is this program's output, and the campaign-* files:
// the inputs of a long campaign (docs/emulated-fabric.md) that reach
// branches these seeds do not. Rerun this when the input format
// (fuzz_actions.h) changes, and drop the campaign-* files then.
#include "fuzz_actions.h"
#include "seed_files.h"

extern "C" {
#include "tb5_core.h"
#include "tb5_wire.h"
}

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

using namespace tb5fuzz;

namespace {

// Who the peer is: its host and boot epoch, and the endpoint id it uses.
constexpr uint64_t kPeerHost = 0xb;
constexpr uint64_t kPeerEpoch = 0x5eed;
constexpr uint32_t kPeerEp = 7;
constexpr uint8_t kTag = 1;

// Endpoint selectors (fuzz_rx.cc picks among open endpoints in creation
// order): the listener on service 1 is first, the next one made second.
constexpr uint8_t kListener = 0;
constexpr uint8_t kSecond = 1;

constexpr Setup kDefault = {0, 0, kLinkRingSize - 1, kTeardownDrain};

// Header actions. type is stored so that 1 + type % TB5_WIRE_TYPE_MAX
// gives the wire type back.
HeaderAction Hdr(uint8_t wire_type, uint8_t derive)
{
	HeaderAction h{};

	h.type = static_cast<uint8_t>(wire_type - 1);
	h.derive = derive;
	h.src = kPeerEp;
	return h;
}

void Hello(Writer &w, uint64_t epoch = kPeerEpoch)
{
	HeaderAction h = Hdr(TB5_WIRE_HELLO, 0);

	h.src = 0;
	h.a = kPeerHost;
	h.b = epoch;
	h.d = kLinkRingSize;
	w.header(h);
}

// The peer connects to our listener on service 1, with the right cookie
// when @good.
void PeerConnect(Writer &w, uint32_t src = kPeerEp, bool good = true)
{
	HeaderAction h = Hdr(TB5_WIRE_CONNECT,
			     kDeriveDst | (good ? kDeriveKeys : 0));

	h.src = src;
	h.a = 1;
	h.b = 0xbadc00c1e;
	h.c = 0xc0c0 + src;
	w.header(h);
}

void Local(Writer &w, Act a, uint8_t arg)
{
	w.act(a);
	w.u8(arg);
}

void TxDoneAll(Writer &w, int times = 1)
{
	for (int i = 0; i < times; i++)
		Local(w, kTxDone, 0);
}

void PostRecv(Writer &w, uint8_t ep, uint32_t len, uint8_t tag = kTag)
{
	w.act(kPostRecv);
	w.u8(ep);
	w.u32(len);
	w.u8(tag);
}

void PostSend(Writer &w, uint8_t ep, uint32_t len, uint8_t tag = kTag)
{
	w.act(kPostSend);
	w.u8(ep);
	w.u32(len);
	w.u8(tag);
}

void Connect(Writer &w, uint64_t service = 9, uint64_t cookie = 0x1234)
{
	w.act(kConnect);
	w.u64(service);
	w.u64(cookie);
}

// The peer accepts our newest CONNECT.
void PeerAccept(Writer &w)
{
	w.header(Hdr(TB5_WIRE_ACCEPT, kDeriveDst | kDeriveKeys));
}

// The peer grants @len bytes with @tag to our newest endpoint frame.
void PeerCts(Writer &w, uint32_t len, uint8_t tag = kTag, uint8_t reply_to = 0)
{
	HeaderAction h = Hdr(TB5_WIRE_CTS, kDeriveDst | kDeriveSrc |
					   kDeriveSeq | kDeriveLen);

	h.reply_to = reply_to;
	h.a = len;
	h.e = tag;
	w.header(h);
}

// The peer answers our newest CTS with the next burst of up to @chunk bytes.
void PeerData(Writer &w, uint32_t chunk, uint8_t extra = 0,
	      uint8_t reply_to = 0)
{
	HeaderAction h = Hdr(TB5_WIRE_DATA,
			     kDeriveDst | kDeriveSrc | kDeriveSeq |
				     kDeriveLen | kAutoPayload | extra);

	h.reply_to = reply_to;
	h.c = chunk;
	w.header(h);
}

void PeerClose(Writer &w, int32_t status = TB5_WIRE_ST_CONNRESET)
{
	HeaderAction h = Hdr(TB5_WIRE_CLOSE, kDeriveDst | kDeriveSrc);

	h.d = static_cast<uint32_t>(status);
	w.header(h);
}

void Raw(Writer &w, uint8_t sof, uint8_t eof, const std::vector<uint8_t> &b)
{
	w.act(kRxRaw);
	w.u8(sof);
	w.u8(eof);
	w.u16(static_cast<uint16_t>(b.size()));
	for (uint8_t v : b)
		w.u8(v);
}

// Hello, the peer connects, we accept: our accepted endpoint is kSecond.
void Accepted(Writer &w)
{
	Hello(w);
	PeerConnect(w);
	Local(w, kAccept, kListener);
	TxDoneAll(w);
}

// Hello, we connect, the peer accepts: our connector is kSecond.
void Connected(Writer &w)
{
	Hello(w);
	Connect(w);
	TxDoneAll(w);
	PeerAccept(w);
}

// A status no frame type carries (a raw errno the peer would like to hand
// over): the frame counts as malformed and its operation fails -EPROTO.
constexpr int32_t kBadStatus = -EIO;

// The peer aborts the receive it was granted, with @status.
void RecvAbort(Writer &w, int32_t status)
{
	Accepted(w);
	PostRecv(w, kSecond, 5000);
	TxDoneAll(w);
	HeaderAction h = Hdr(TB5_WIRE_ABORT,
			     kDeriveDst | kDeriveSrc | kDeriveSeq);
	h.e = static_cast<uint32_t>(status);
	w.header(h);
	w.act(kQuery);
}

// The peer closes a connection with a receive and a send posted.
void PeerCloseBusy(Writer &w, int32_t status)
{
	Accepted(w);
	PostRecv(w, kSecond, 5000);
	PostSend(w, kSecond, 5000);
	TxDoneAll(w);
	PeerClose(w, status);
	TxDoneAll(w);
	w.act(kQuery);
}

// The peer refuses our connect, with @status.
void Reject(Writer &w, int32_t status)
{
	Hello(w);
	Connect(w);
	TxDoneAll(w);
	HeaderAction h = Hdr(TB5_WIRE_REJECT, kDeriveDst | kDeriveKeys);
	h.d = static_cast<uint32_t>(status);
	w.header(h);
	w.act(kQuery);
}

const std::vector<Seed<Setup>> &Seeds()
{
	static const std::vector<Seed<Setup>> seeds = {
	{"hello", kDefault, [](Writer &w) {
		Hello(w);
		TxDoneAll(w);
		w.act(kQuery);
	}},
	{"hello-restart", kDefault, [](Writer &w) {
		Accepted(w);
		PostRecv(w, kSecond, 4096);
		Hello(w, kPeerEpoch + 1);	// the peer rebooted
		TxDoneAll(w);
		w.act(kQuery);
	}},
	{"accept", kDefault, [](Writer &w) {
		Accepted(w);
		w.act(kQuery);
	}},
	{"connect", kDefault, [](Writer &w) {
		Connected(w);
		w.act(kQuery);
	}},
	{"recv-small", kDefault, [](Writer &w) {
		Accepted(w);
		PostRecv(w, kSecond, 1000);
		TxDoneAll(w);
		PeerData(w, 1000);
		w.act(kQuery);
	}},
	{"recv-bursts", kDefault, [](Writer &w) {
		Accepted(w);
		PostRecv(w, kSecond, 200 * 1024);
		TxDoneAll(w);
		for (int i = 0; i < 4; i++)
			PeerData(w, 64 * 1024);
		w.act(kQuery);
	}},
	{"recv-zero", kDefault, [](Writer &w) {
		Accepted(w);
		PostRecv(w, kSecond, 0);
		TxDoneAll(w);
		PeerData(w, 0);
		w.act(kQuery);
	}},
	{"recv-many", kDefault, [](Writer &w) {
		Accepted(w);
		for (int i = 0; i < 8; i++)
			PostRecv(w, kSecond, 3000 + i * 1000);
		TxDoneAll(w);
		for (int i = 7; i >= 0; i--)
			PeerData(w, 16384, 0, static_cast<uint8_t>(i));
		w.act(kQuery);
	}},
	{"send-accepted", kDefault, [](Writer &w) {
		Accepted(w);
		PostSend(w, kSecond, 100000);
		PeerCts(w, 100000);
		TxDoneAll(w, 4);
		w.act(kQuery);
	}},
	{"send-full-burst", kDefault, [](Writer &w) {
		Connected(w);
		PostSend(w, kSecond, kMaxMsg);
		PeerCts(w, kMaxMsg);
		for (int i = 0; i < 8; i++) {
			TxDoneAll(w);
			w.act(kKick);
		}
		w.act(kQuery);
	}},
	{"send-one-frame-bursts", {1, 0, 7, kTeardownDrain}, [](Writer &w) {
		Connected(w);
		PostSend(w, kSecond, 20000);
		PostSend(w, kSecond, 0);
		PeerCts(w, 20000);
		PeerCts(w, 0);
		TxDoneAll(w, 8);
		w.act(kQuery);
	}},
	// A grant repeated (its seq again, not derived): not newer than the
	// last, so dropped; the next send waits for the next real grant.
	{"send-cts-replayed", kDefault, [](Writer &w) {
		Connected(w);
		PostSend(w, kSecond, 5000);
		PeerCts(w, 5000);
		TxDoneAll(w, 4);
		HeaderAction h = Hdr(TB5_WIRE_CTS, kDeriveDst | kDeriveSrc);
		h.a = 5000;
		h.e = kTag;
		w.header(h);	// seq d = 0: the first grant's
		PostSend(w, kSecond, 3000);
		TxDoneAll(w);
		PeerCts(w, 3000);
		TxDoneAll(w, 4);
		w.act(kQuery);
	}},
	{"send-msgsize", kDefault, [](Writer &w) {
		Connected(w);
		PostSend(w, kSecond, 5000);
		PeerCts(w, 100);
		TxDoneAll(w);
		w.act(kQuery);
	}},
	{"send-ring-full", {0, 0, 3, kTeardownDrainDown}, [](Writer &w) {
		Connected(w);
		Local(w, kTxRefuse, 3);
		PostSend(w, kSecond, 30000);
		PeerCts(w, 30000);
		for (int i = 0; i < 3; i++)	// nothing queued: only kicks retry
			w.act(kKick);
		TxDoneAll(w, 12);
		w.act(kQuery);
	}},
	{"recv-truncated", kDefault, [](Writer &w) {
		Accepted(w);
		PostRecv(w, kSecond, 10000);
		TxDoneAll(w);
		PeerData(w, 10000, kTruncate);
		PeerCts(w, 10, kTag, 0x80);	// a header cuts the burst short
		w.act(kQuery);
	}},
	{"recv-wrong-eof", kDefault, [](Writer &w) {
		Accepted(w);
		PostRecv(w, kSecond, 5000);
		TxDoneAll(w);
		PeerData(w, 5000, kFlipEof);
		w.act(kRxPayload);	// frames, last_len, fill, mode
		w.u8(1);
		w.u16(904);
		w.u8(0x5a);
		w.u8(kPayloadLastMore);
		w.act(kQuery);
	}},
	{"recv-abort", kDefault, [](Writer &w) {
		RecvAbort(w, TB5_WIRE_ST_MSGSIZE);
	}},
	{"recv-abort-bad-status", kDefault, [](Writer &w) {
		RecvAbort(w, kBadStatus);
	}},
	{"peer-close", kDefault, [](Writer &w) {
		PeerCloseBusy(w, TB5_WIRE_ST_CONNRESET);
	}},
	{"peer-close-bad-status", kDefault, [](Writer &w) {
		PeerCloseBusy(w, kBadStatus);
	}},
	{"close-in-flight", kDefault, [](Writer &w) {
		Connected(w);
		PostSend(w, kSecond, 200 * 1024);
		PostRecv(w, kSecond, 1000);
		PeerCts(w, 200 * 1024);
		Local(w, kTxDone, 8);
		Local(w, kClose, kSecond);
		TxDoneAll(w, 8);
	}},
	{"link-down-midway", {0, 0, 31, kTeardownDrainDown}, [](Writer &w) {
		Accepted(w);
		PostRecv(w, kSecond, 100000);
		PostSend(w, kSecond, 100000);
		TxDoneAll(w);
		PeerCts(w, 100000);
		PeerData(w, 40000);
		Local(w, kLinkDown, 0);
		w.act(kLinkUp);
		Hello(w);
		TxDoneAll(w);
		w.act(kQuery);
	}},
	{"reject", kDefault, [](Writer &w) {
		Reject(w, TB5_WIRE_ST_CONNREFUSED);
	}},
	{"reject-bad-status", kDefault, [](Writer &w) {
		Reject(w, kBadStatus);
	}},
	{"connect-bad-cookie", kDefault, [](Writer &w) {
		Hello(w);
		PeerConnect(w, kPeerEp, false);
		TxDoneAll(w);
		Local(w, kAccept, kListener);
	}},
	{"accept-nobody", kDefault, [](Writer &w) {
		Hello(w);
		HeaderAction h = Hdr(TB5_WIRE_ACCEPT, 0);
		h.dst = 0x10003;
		h.a = 0x1234;
		w.header(h);
		TxDoneAll(w);
	}},
	{"listener-close-backlog", kDefault, [](Writer &w) {
		Hello(w);
		PeerConnect(w, 7);
		PeerConnect(w, 8);
		Local(w, kClose, kListener);
		TxDoneAll(w, 2);
	}},
	{"backlog-flood", {0, 0, 3, kTeardownDropDown}, [](Writer &w) {
		Hello(w);
		for (uint32_t i = 1; i <= 70; i++)
			PeerConnect(w, i);
		Local(w, kAccept, kListener);
		TxDoneAll(w, 4);
	}},
	{"reply-flood", {0, 0, 0, kTeardownDropDown}, [](Writer &w) {
		// A TX ring of one frame, never completed: refusals pile up
		// beyond what the core keeps.
		Hello(w);
		for (uint32_t i = 1; i <= 140; i++)
			PeerConnect(w, i, false);
	}},
	{"ops-exhausted", kDefault, [](Writer &w) {
		Connected(w);
		for (int i = 0; i < 65; i++)
			PostRecv(w, kSecond, 16);
		for (int i = 0; i < 65; i++)
			PeerCts(w, 16, 2);
		TxDoneAll(w, 2);
	}},
	{"endpoints-exhausted", {0, 2, 63, kTeardownDrain}, [](Writer &w) {
		Hello(w);
		Local(w, kListen, 2);
		PeerConnect(w, 7);
		PeerConnect(w, 8);
		Local(w, kAccept, kListener);
		Local(w, kAccept, kListener);
		Connect(w);
		TxDoneAll(w);
	}},
	{"faults", kDefault, [](Writer &w) {
		Hello(w);
		PeerConnect(w);
		Local(w, kFault, 0);	// the accept's allocation fails
		Local(w, kAccept, kListener);
		Local(w, kAccept, kListener);
		TxDoneAll(w);
		PostRecv(w, kSecond, 9000);
		TxDoneAll(w);
		Local(w, kFault, 1);	// the first copy_to fails
		PeerData(w, 9000);
		w.act(kQuery);
	}},
	{"raw-frames", kDefault, [](Writer &w) {
		Hello(w);
		Raw(w, TB5_SOF_PAYLOAD, TB5_EOF_LAST, {1, 2, 3});
		Raw(w, TB5_SOF_HEADER, TB5_EOF_LAST,
		    {0xb5, 0x35, 1, TB5_WIRE_CTS, 32, 0});
		Raw(w, TB5_SOF_HEADER, TB5_EOF_LAST,
		    {0xb5, 0x35, 2, TB5_WIRE_HELLO, 40, 0, 0, 0,
		     0, 0, 0, 0, 0, 0, 0, 0});
		Raw(w, 9, TB5_EOF_MORE, {0});
		Raw(w, TB5_SOF_HEADER, 0, {});
		w.act(kQuery);
	}},
	{"teardown-down", {0, 0, 15, kTeardownDown}, [](Writer &w) {
		Accepted(w);
		PostRecv(w, kSecond, 50000);
		PostSend(w, kSecond, 50000);
		PeerCts(w, 50000);
		TxDoneAll(w);
		PeerData(w, 20000);
	}},
	};
	return seeds;
}

} // namespace

int main(int argc, char **argv)
{
	return WriteSeeds(argc, argv, Seeds(), WriteSetup);
}
