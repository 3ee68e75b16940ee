// SPDX-License-Identifier: MIT
//
// test_wire.cc - the frame header format: every type encodes to the layout
// tb5_wire.h documents (checked byte by byte against that table, not against
// the decoder), decodes back to the same fields, and the decoder refuses what
// version 1 must refuse without reading past the frame. The status codes of
// REJECT, CLOSE and ABORT map to a fixed set of errnos, and nothing else does.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "guarded_buffer.hpp"

#include "tb5_wire.h"

namespace {

using tb5test::GuardedBuffer;

constexpr uint8_t kTypes[] = {
	TB5_WIRE_HELLO, TB5_WIRE_CONNECT, TB5_WIRE_ACCEPT, TB5_WIRE_REJECT,
	TB5_WIRE_CLOSE, TB5_WIRE_CTS,	  TB5_WIRE_DATA,   TB5_WIRE_ABORT,
};

// Header bytes per type, from the table in tb5_wire.h.
uint32_t documented_len(uint8_t type)
{
	switch (type) {
	case TB5_WIRE_HELLO: return 40;
	case TB5_WIRE_CONNECT: return 40;
	case TB5_WIRE_ACCEPT: return 24;
	case TB5_WIRE_REJECT: return 32;
	case TB5_WIRE_CLOSE: return 24;
	case TB5_WIRE_CTS: return 32;
	case TB5_WIRE_DATA: return 48;
	case TB5_WIRE_ABORT: return 24;
	}
	return 0;
}

struct Field {
	uint32_t off;
	uint32_t size;
	uint64_t value;
};

// The body fields of @m with their documented offsets and sizes.
std::vector<Field> body(const tb5_wire_msg &m)
{
	switch (m.type) {
	case TB5_WIRE_HELLO:
		return {{16, 8, m.u.hello.host_id}, {24, 8, m.u.hello.epoch},
			{32, 4, m.u.hello.ring_size}, {36, 4, m.u.hello.features}};
	case TB5_WIRE_CONNECT:
		return {{16, 8, m.u.connect.service},
			{24, 8, m.u.connect.listen_cookie},
			{32, 8, m.u.connect.conn_cookie}};
	case TB5_WIRE_ACCEPT:
		return {{16, 8, m.u.accept.conn_cookie}};
	case TB5_WIRE_REJECT:
		return {{16, 8, m.u.reject.conn_cookie},
			{24, 4, static_cast<uint32_t>(m.u.reject.status)}};
	case TB5_WIRE_CLOSE:
		return {{16, 4, static_cast<uint32_t>(m.u.close.status)}};
	case TB5_WIRE_CTS:
		return {{16, 4, m.u.cts.seq}, {20, 4, m.u.cts.tag},
			{24, 8, m.u.cts.len}};
	case TB5_WIRE_DATA:
		return {{16, 4, m.u.data.seq}, {20, 4, m.u.data.flags},
			{24, 8, m.u.data.offset}, {32, 8, m.u.data.msg_len},
			{40, 4, m.u.data.burst_len}};
	case TB5_WIRE_ABORT:
		return {{16, 4, m.u.abort.seq},
			{20, 4, static_cast<uint32_t>(m.u.abort.status)}};
	}
	return {};
}

// A message whose every field has a distinct value with all bytes non-zero
// and the top bit set, so a misplaced, truncated or sign-mangled field shows.
tb5_wire_msg sample(uint8_t type)
{
	tb5_wire_msg m;
	uint64_t v = 0x8172635445362718ull ^ (uint64_t(type) << 56);
	auto next = [&v] { return v += 0x0101010101010101ull; };

	std::memset(&m, 0, sizeof(m));
	m.type = type;
	m.dst = 0x80a0b0c1u + type;
	m.src = 0x90d0e0f1u + type;
	switch (type) {
	case TB5_WIRE_HELLO:
		m.u.hello.host_id = next();
		m.u.hello.epoch = next();
		m.u.hello.ring_size = 16384;
		m.u.hello.features = 0x80000001u;
		break;
	case TB5_WIRE_CONNECT:
		m.u.connect.service = next();
		m.u.connect.listen_cookie = next();
		m.u.connect.conn_cookie = next();
		break;
	case TB5_WIRE_ACCEPT:
		m.u.accept.conn_cookie = next();
		break;
	case TB5_WIRE_REJECT:
		m.u.reject.conn_cookie = next();
		m.u.reject.status = TB5_WIRE_ST_CONNREFUSED;
		break;
	case TB5_WIRE_CLOSE:
		m.u.close.status = TB5_WIRE_ST_CONNRESET;
		break;
	case TB5_WIRE_CTS:
		m.u.cts.seq = 0xfedcba98u;
		m.u.cts.tag = 0x89abcdefu;
		m.u.cts.len = next();
		break;
	case TB5_WIRE_DATA:
		m.u.data.seq = 0xfedcba97u;
		m.u.data.flags = TB5_DATA_LAST;
		m.u.data.offset = next();
		m.u.data.msg_len = next();
		m.u.data.burst_len = 0x80001234u;
		break;
	case TB5_WIRE_ABORT:
		m.u.abort.seq = 0xfedcba96u;
		m.u.abort.status = TB5_WIRE_ST_MSGSIZE;
		break;
	}
	return m;
}

uint64_t get_le(const uint8_t *p, uint32_t size)
{
	uint64_t v = 0;

	for (uint32_t i = 0; i < size; i++)
		v |= uint64_t(p[i]) << (8 * i);
	return v;
}

std::vector<uint8_t> encode(const tb5_wire_msg &m)
{
	std::vector<uint8_t> buf(TB5_WIRE_MAX_LEN, 0xee);
	uint32_t n = tb5_wire_encode(&m, buf.data());

	buf.resize(n);
	return buf;
}

// Decode @frame from a copy flush against a guard page: a read past the
// frame's end faults instead of passing unnoticed.
int decode_guarded(const std::vector<uint8_t> &frame, tb5_wire_msg *out)
{
	GuardedBuffer g(frame.size());

	if (!frame.empty())
		std::memcpy(g.data(), frame.data(), frame.size());
	return tb5_wire_decode(g.data(), static_cast<uint32_t>(frame.size()), out);
}

class WireType : public ::testing::TestWithParam<uint8_t> {};

TEST_P(WireType, LengthIsDocumented)
{
	const uint8_t type = GetParam();

	EXPECT_EQ(tb5_wire_len(type), documented_len(type));
	EXPECT_LE(tb5_wire_len(type), TB5_WIRE_MAX_LEN);
}

TEST_P(WireType, EncodesDocumentedLayout)
{
	const tb5_wire_msg m = sample(GetParam());
	const std::vector<uint8_t> f = encode(m);

	ASSERT_EQ(f.size(), documented_len(m.type));
	EXPECT_EQ(get_le(&f[0], 2), TB5_WIRE_MAGIC);
	EXPECT_EQ(f[0], 0xb5);
	EXPECT_EQ(f[1], 0x35);
	EXPECT_EQ(f[2], TB5_WIRE_VERSION);
	EXPECT_EQ(f[3], m.type);
	EXPECT_EQ(get_le(&f[4], 2), f.size());
	EXPECT_EQ(get_le(&f[6], 2), 0u) << "flags are reserved";
	EXPECT_EQ(get_le(&f[8], 4), m.dst);
	EXPECT_EQ(get_le(&f[12], 4), m.src);
	std::vector<bool> covered(f.size(), false);
	for (int i = 0; i < 16; i++)
		covered[i] = true;
	for (const Field &fld : body(m)) {
		ASSERT_LE(fld.off + fld.size, f.size());
		EXPECT_EQ(get_le(&f[fld.off], fld.size), fld.value)
			<< "field at offset " << fld.off;
		for (uint32_t i = 0; i < fld.size; i++)
			covered[fld.off + i] = true;
	}
	for (size_t i = 0; i < f.size(); i++) {
		if (!covered[i]) {
			EXPECT_EQ(f[i], 0) << "padding byte " << i << " not zero";
		}
	}
}

TEST_P(WireType, RoundTrips)
{
	const tb5_wire_msg m = sample(GetParam());
	const std::vector<uint8_t> f = encode(m);
	tb5_wire_msg d;

	std::memset(&d, 0x5a, sizeof(d));
	ASSERT_EQ(decode_guarded(f, &d), 0);
	EXPECT_EQ(d.type, m.type);
	EXPECT_EQ(d.dst, m.dst);
	EXPECT_EQ(d.src, m.src);
	const std::vector<Field> want = body(m), got = body(d);
	ASSERT_EQ(want.size(), got.size());
	for (size_t i = 0; i < want.size(); i++)
		EXPECT_EQ(got[i].value, want[i].value) << "field at offset " << want[i].off;
}

TEST_P(WireType, RefusesBadMagic)
{
	for (int byte = 0; byte < 2; byte++) {
		std::vector<uint8_t> f = encode(sample(GetParam()));
		tb5_wire_msg d;

		f[byte] ^= 0x01;
		EXPECT_EQ(decode_guarded(f, &d), -EPROTO) << "magic byte " << byte;
	}
	std::vector<uint8_t> f = encode(sample(GetParam()));
	std::swap(f[0], f[1]);	// big-endian magic
	tb5_wire_msg d;
	EXPECT_EQ(decode_guarded(f, &d), -EPROTO);
}

TEST_P(WireType, RefusesOtherVersions)
{
	for (int v : {0, 2, 3, 0x81, 0xff}) {
		std::vector<uint8_t> f = encode(sample(GetParam()));
		tb5_wire_msg d;

		f[2] = static_cast<uint8_t>(v);
		EXPECT_EQ(decode_guarded(f, &d), -EPROTO) << "version " << v;
	}
}

TEST_P(WireType, RefusesShortFrames)
{
	const std::vector<uint8_t> full = encode(sample(GetParam()));

	for (size_t n = 0; n < full.size(); n++) {
		tb5_wire_msg d;
		// Cut short, len field as encoded: len is larger than the frame.
		std::vector<uint8_t> f(full.begin(), full.begin() + n);
		EXPECT_EQ(decode_guarded(f, &d), -EPROTO) << "frame of " << n;

		// Cut short and the len field says so: shorter than the type.
		if (n >= TB5_WIRE_COMMON_LEN) {
			f[4] = static_cast<uint8_t>(n);
			f[5] = 0;
			EXPECT_EQ(decode_guarded(f, &d), -EPROTO)
				<< "frame and len of " << n;
		}
	}
}

TEST_P(WireType, RefusesLenBeyondFrame)
{
	const std::vector<uint8_t> f0 = encode(sample(GetParam()));

	for (uint32_t extra : {1u, 8u, 4096u, 0xffffu - uint32_t(f0.size())}) {
		std::vector<uint8_t> f = f0;
		const uint32_t len = uint32_t(f.size()) + extra;
		tb5_wire_msg d;

		f[4] = static_cast<uint8_t>(len);
		f[5] = static_cast<uint8_t>(len >> 8);
		EXPECT_EQ(decode_guarded(f, &d), -EPROTO) << "len field " << len;
	}
}

TEST_P(WireType, AcceptsLongerHeaders)
{
	const tb5_wire_msg m = sample(GetParam());
	std::vector<uint8_t> f = encode(m);

	// A later minor version appends fields: this version reads its own.
	for (uint32_t extra : {1u, 8u, 24u, 4096u - uint32_t(f.size())}) {
		std::vector<uint8_t> g = f;
		const uint32_t len = uint32_t(g.size()) + extra;
		tb5_wire_msg d;

		g.resize(len, 0xc3);
		g[4] = static_cast<uint8_t>(len);
		g[5] = static_cast<uint8_t>(len >> 8);
		ASSERT_EQ(decode_guarded(g, &d), 0) << "header of " << len;
		EXPECT_EQ(d.type, m.type);
		EXPECT_EQ(d.dst, m.dst);
		EXPECT_EQ(d.src, m.src);
		const std::vector<Field> want = body(m), got = body(d);
		for (size_t i = 0; i < want.size(); i++)
			EXPECT_EQ(got[i].value, want[i].value);
	}
}

TEST_P(WireType, AcceptsFrameLongerThanHeader)
{
	// len <= frame: the frame may be longer than the header it carries.
	const tb5_wire_msg m = sample(GetParam());
	std::vector<uint8_t> f = encode(m);
	tb5_wire_msg d;

	f.resize(f.size() + 16, 0x3c);
	ASSERT_EQ(decode_guarded(f, &d), 0);
	EXPECT_EQ(body(d)[0].value, body(m)[0].value);
}

std::string type_name(const ::testing::TestParamInfo<uint8_t> &p)
{
	static const char *const names[] = {"",	 "Hello", "Connect",
					    "Accept", "Reject", "Close",
					    "Cts",    "Data",	"Abort"};

	return names[p.param];
}

INSTANTIATE_TEST_SUITE_P(AllTypes, WireType, ::testing::ValuesIn(kTypes),
			 type_name);

TEST(Wire, UnknownTypesHaveNoLength)
{
	for (int t : {0, TB5_WIRE_TYPE_MAX + 1, 0x7f, 0xff})
		EXPECT_EQ(tb5_wire_len(static_cast<uint8_t>(t)), 0u) << "type " << t;
}

TEST(Wire, EncodeRefusesUnknownType)
{
	tb5_wire_msg m = sample(TB5_WIRE_CTS);
	uint8_t buf[TB5_WIRE_MAX_LEN];

	m.type = TB5_WIRE_TYPE_MAX + 1;
	EXPECT_EQ(tb5_wire_encode(&m, buf), 0u);
}

TEST(Wire, DecodeRefusesUnknownType)
{
	for (int t : {0, TB5_WIRE_TYPE_MAX + 1, 0x7f, 0xff}) {
		// A well-formed frame in every other respect, 64 bytes long.
		std::vector<uint8_t> f = encode(sample(TB5_WIRE_DATA));
		tb5_wire_msg d;

		f.resize(TB5_WIRE_MAX_LEN, 0);
		f[3] = static_cast<uint8_t>(t);
		f[4] = TB5_WIRE_MAX_LEN;
		f[5] = 0;
		EXPECT_EQ(decode_guarded(f, &d), -EPROTO) << "type " << t;
	}
}

TEST(Wire, DecodesHandWrittenFrame)
{
	// A CTS written out by hand from the table in tb5_wire.h.
	const std::vector<uint8_t> f = {
		0xb5, 0x35, 0x01, 0x06, 0x20, 0x00, 0x00, 0x00,	// magic ver CTS len 32
		0x07, 0x00, 0x00, 0x00, 0x09, 0x01, 0x00, 0x00,	// dst 7, src 265
		0x2a, 0x00, 0x00, 0x00, 0xef, 0xbe, 0xad, 0xde,	// seq 42, tag
		0x00, 0x00, 0x00, 0x40, 0x01, 0x00, 0x00, 0x00,	// len 0x140000000
	};
	tb5_wire_msg d;

	ASSERT_EQ(decode_guarded(f, &d), 0);
	EXPECT_EQ(d.type, TB5_WIRE_CTS);
	EXPECT_EQ(d.dst, 7u);
	EXPECT_EQ(d.src, 265u);
	EXPECT_EQ(d.u.cts.seq, 42u);
	EXPECT_EQ(d.u.cts.tag, 0xdeadbeefu);
	EXPECT_EQ(d.u.cts.len, 0x140000000ull);
}

// Every status code the wire carries, as tb5_wire.h lists it.
struct StatusCode {
	uint8_t type;
	int32_t code;
	int err;
};

constexpr StatusCode kStatusCodes[] = {
	{TB5_WIRE_REJECT, TB5_WIRE_ST_CONNREFUSED, -ECONNREFUSED},
	{TB5_WIRE_CLOSE, TB5_WIRE_ST_CONNRESET, -ECONNRESET},
	{TB5_WIRE_ABORT, TB5_WIRE_ST_MSGSIZE, -EMSGSIZE},
};

constexpr uint8_t kStatusTypes[] = {TB5_WIRE_REJECT, TB5_WIRE_CLOSE,
				    TB5_WIRE_ABORT};

TEST(WireStatus, EachCodeMapsToItsErrnoBothWays)
{
	for (const StatusCode &s : kStatusCodes) {
		EXPECT_EQ(tb5_wire_status_encode(s.type, s.err), s.code)
			<< "type " << int(s.type);
		EXPECT_EQ(tb5_wire_status_decode(s.type, s.code), s.err)
			<< "type " << int(s.type);
	}
}

TEST(WireStatus, CodesAreWhatVersion1Sent)
{
	// Before the codes were defined, version 1 put Linux's negative errno
	// on the wire; the codes keep those bytes, so old and new peers agree.
	const std::vector<uint8_t> bytes[] = {
		{0x91, 0xff, 0xff, 0xff},	// REJECT: -111, -ECONNREFUSED
		{0x98, 0xff, 0xff, 0xff},	// CLOSE: -104, -ECONNRESET
		{0xa6, 0xff, 0xff, 0xff},	// ABORT: -90, -EMSGSIZE
	};
	const uint32_t at[] = {24, 16, 20};

	for (size_t i = 0; i < 3; i++) {
		const StatusCode &s = kStatusCodes[i];
		tb5_wire_msg m = sample(s.type);
		int32_t *status = s.type == TB5_WIRE_REJECT ? &m.u.reject.status
				  : s.type == TB5_WIRE_CLOSE ? &m.u.close.status
							     : &m.u.abort.status;

		*status = tb5_wire_status_encode(s.type, s.err);
		const std::vector<uint8_t> f = encode(m);
		ASSERT_GE(f.size(), at[i] + 4);
		EXPECT_EQ(std::vector<uint8_t>(f.begin() + at[i], f.begin() + at[i] + 4),
			  bytes[i]) << "type " << int(m.type);
	}
}

TEST(WireStatus, UnknownCodesDecodeToNothing)
{
	// Not a code at all, a raw errno the peer would like us to return, or
	// another type's code: the frame is malformed (0), never an errno.
	const int32_t unknown[] = {0,	  1,	-1, -EIO, -EPERM, -EFAULT,
				   -ENOMEM, -4095, -4096, 0x7fffffff,
				   -0x7fffffff - 1};

	for (uint8_t type : kStatusTypes) {
		for (int32_t code : unknown)
			EXPECT_EQ(tb5_wire_status_decode(type, code), 0)
				<< "type " << int(type) << " code " << code;
		for (const StatusCode &s : kStatusCodes) {
			if (s.type != type) {
				EXPECT_EQ(tb5_wire_status_decode(type, s.code), 0)
					<< "type " << int(type) << " code " << s.code;
			}
		}
	}
	// Types without a status carry no code.
	for (uint8_t type : kTypes) {
		if (type == TB5_WIRE_REJECT || type == TB5_WIRE_CLOSE ||
		    type == TB5_WIRE_ABORT)
			continue;
		for (const StatusCode &s : kStatusCodes)
			EXPECT_EQ(tb5_wire_status_decode(type, s.code), 0);
	}
}

TEST(WireStatus, AnErrnoWithoutCodeGoesOutAsTheTypesGenericCode)
{
	for (const StatusCode &s : kStatusCodes)
		for (int err : {-EIO, -EPERM, 0, -ECANCELED})
			EXPECT_EQ(tb5_wire_status_encode(s.type, err), s.code)
				<< "type " << int(s.type) << " errno " << err;
}

} // namespace
