// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * tb5_wire.c - encode and decode tb5 frame headers (layout in tb5_wire.h).
 *
 * Byte-wise little-endian accessors instead of packed structs: the layout is
 * then the same whatever the host's endianness and alignment rules, and a
 * header can sit at any address in an RX buffer.
 */
#include "tb5_wire.h"

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)v);
	put16(p + 2, (uint16_t)(v >> 16));
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)v);
	put32(p + 4, (uint32_t)(v >> 32));
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)get16(p) | ((uint32_t)get16(p + 2) << 16);
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) | ((uint64_t)get32(p + 4) << 32);
}

uint32_t tb5_wire_len(uint8_t type)
{
	switch (type) {
	case TB5_WIRE_HELLO:
		return 40;
	case TB5_WIRE_CONNECT:
		return 40;
	case TB5_WIRE_ACCEPT:
		return 24;
	case TB5_WIRE_REJECT:
		return 32;
	case TB5_WIRE_CLOSE:
		return 24;
	case TB5_WIRE_CTS:
		return 32;
	case TB5_WIRE_DATA:
		return 48;
	case TB5_WIRE_ABORT:
		return 24;
	default:
		return 0;
	}
}

uint32_t tb5_wire_encode(const struct tb5_wire_msg *m, uint8_t *buf)
{
	uint32_t len = tb5_wire_len(m->type);

	if (!len)
		return 0;
	memset(buf, 0, len);
	put16(buf + 0, TB5_WIRE_MAGIC);
	buf[2] = TB5_WIRE_VERSION;
	buf[3] = m->type;
	put16(buf + 4, (uint16_t)len);
	put32(buf + 8, m->dst);
	put32(buf + 12, m->src);

	switch (m->type) {
	case TB5_WIRE_HELLO:
		put64(buf + 16, m->u.hello.host_id);
		put64(buf + 24, m->u.hello.epoch);
		put32(buf + 32, m->u.hello.ring_size);
		put32(buf + 36, m->u.hello.features);
		break;
	case TB5_WIRE_CONNECT:
		put64(buf + 16, m->u.connect.service);
		put64(buf + 24, m->u.connect.listen_cookie);
		put64(buf + 32, m->u.connect.conn_cookie);
		break;
	case TB5_WIRE_ACCEPT:
		put64(buf + 16, m->u.accept.conn_cookie);
		break;
	case TB5_WIRE_REJECT:
		put64(buf + 16, m->u.reject.conn_cookie);
		put32(buf + 24, (uint32_t)m->u.reject.status);
		break;
	case TB5_WIRE_CLOSE:
		put32(buf + 16, (uint32_t)m->u.close.status);
		break;
	case TB5_WIRE_CTS:
		put32(buf + 16, m->u.cts.seq);
		put32(buf + 20, m->u.cts.tag);
		put64(buf + 24, m->u.cts.len);
		break;
	case TB5_WIRE_DATA:
		put32(buf + 16, m->u.data.seq);
		put32(buf + 20, m->u.data.flags);
		put64(buf + 24, m->u.data.offset);
		put64(buf + 32, m->u.data.msg_len);
		put32(buf + 40, m->u.data.burst_len);
		break;
	case TB5_WIRE_ABORT:
		put32(buf + 16, m->u.abort.seq);
		put32(buf + 20, (uint32_t)m->u.abort.status);
		break;
	}
	return len;
}

int tb5_wire_decode(const void *frame, uint32_t len, struct tb5_wire_msg *m)
{
	const uint8_t *buf = frame;
	uint32_t hdr_len, need;

	if (len < TB5_WIRE_COMMON_LEN)
		return -EPROTO;
	if (get16(buf) != TB5_WIRE_MAGIC || buf[2] != TB5_WIRE_VERSION)
		return -EPROTO;
	need = tb5_wire_len(buf[3]);
	hdr_len = get16(buf + 4);
	if (!need || hdr_len < need || hdr_len > len)
		return -EPROTO;

	memset(m, 0, sizeof(*m));
	m->type = buf[3];
	m->dst = get32(buf + 8);
	m->src = get32(buf + 12);

	switch (m->type) {
	case TB5_WIRE_HELLO:
		m->u.hello.host_id = get64(buf + 16);
		m->u.hello.epoch = get64(buf + 24);
		m->u.hello.ring_size = get32(buf + 32);
		m->u.hello.features = get32(buf + 36);
		break;
	case TB5_WIRE_CONNECT:
		m->u.connect.service = get64(buf + 16);
		m->u.connect.listen_cookie = get64(buf + 24);
		m->u.connect.conn_cookie = get64(buf + 32);
		break;
	case TB5_WIRE_ACCEPT:
		m->u.accept.conn_cookie = get64(buf + 16);
		break;
	case TB5_WIRE_REJECT:
		m->u.reject.conn_cookie = get64(buf + 16);
		m->u.reject.status = (int32_t)get32(buf + 24);
		break;
	case TB5_WIRE_CLOSE:
		m->u.close.status = (int32_t)get32(buf + 16);
		break;
	case TB5_WIRE_CTS:
		m->u.cts.seq = get32(buf + 16);
		m->u.cts.tag = get32(buf + 20);
		m->u.cts.len = get64(buf + 24);
		break;
	case TB5_WIRE_DATA:
		m->u.data.seq = get32(buf + 16);
		m->u.data.flags = get32(buf + 20);
		m->u.data.offset = get64(buf + 24);
		m->u.data.msg_len = get64(buf + 32);
		m->u.data.burst_len = get32(buf + 40);
		break;
	case TB5_WIRE_ABORT:
		m->u.abort.seq = get32(buf + 16);
		m->u.abort.status = (int32_t)get32(buf + 20);
		break;
	}
	return 0;
}

/* Every status code the wire carries, by type; a type's first is its generic one. */
#define WIRE_STATUS_CODES 3
static const struct {
	uint8_t type;
	int32_t err;
	int32_t code;
} wire_status[WIRE_STATUS_CODES] = {
	{ TB5_WIRE_REJECT, -ECONNREFUSED, TB5_WIRE_ST_CONNREFUSED },
	{ TB5_WIRE_CLOSE, -ECONNRESET, TB5_WIRE_ST_CONNRESET },
	{ TB5_WIRE_ABORT, -EMSGSIZE, TB5_WIRE_ST_MSGSIZE },
};

int32_t tb5_wire_status_encode(uint8_t type, int32_t err)
{
	int32_t code = 0;
	size_t i;

	for (i = 0; i < WIRE_STATUS_CODES; i++) {
		if (wire_status[i].type != type)
			continue;
		if (wire_status[i].err == err)
			return wire_status[i].code;
		if (!code)
			code = wire_status[i].code;
	}
	return code;
}

int32_t tb5_wire_status_decode(uint8_t type, int32_t code)
{
	size_t i;

	for (i = 0; i < WIRE_STATUS_CODES; i++)
		if (wire_status[i].type == type && wire_status[i].code == code)
			return wire_status[i].err;
	return 0;
}
