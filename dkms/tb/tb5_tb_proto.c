// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * tb5_tb_proto.c - the Thunderbolt backend's logic that needs no hardware
 * (see the header). Compiled into tb5.ko and into tests/tb/.
 */
#include "tb5_tb_proto.h"
#include "tb5_wire.h"

/*
 * A peer whose frames are another wire version is refused here, by the
 * service's protocol version (tb5_tb_service_check(), the login), before
 * any frame: it must not meet the core as malformed frames, which read as
 * an attack. So a new TB5_WIRE_VERSION comes with a new TB5_TB_PRTCVERS.
 */
_Static_assert(TB5_WIRE_VERSION == 1 && TB5_TB_PRTCVERS == 1,
	       "a new TB5_WIRE_VERSION needs a new TB5_TB_PRTCVERS");

/* c0c200ff-bcc4-4391-9907-8a01ba97e65d: the property directory. */
const uint8_t tb5_tb_dir_uuid[16] = {
	0xc0, 0xc2, 0x00, 0xff, 0xbc, 0xc4, 0x43, 0x91,
	0x99, 0x07, 0x8a, 0x01, 0xba, 0x97, 0xe6, 0x5d,
};

/* 086e5f61-b0cc-4555-bc4d-342f10f6708d: tb5's XDomain messages. */
const uint8_t tb5_tb_msg_uuid[16] = {
	0x08, 0x6e, 0x5f, 0x61, 0xb0, 0xcc, 0x45, 0x55,
	0xbc, 0x4d, 0x34, 0x2f, 0x10, 0xf6, 0x70, 0x8d,
};

static bool bytes_equal(const uint8_t *a, const uint8_t *b, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (a[i] != b[i])
			return false;
	return true;
}

/* -- the service's identity ---------------------------------------------- */

void tb5_tb_props(bool e2e, struct tb5_tb_prop props[TB5_TB_NPROPS])
{
	props[0].key = "prtcid";
	props[0].value = TB5_TB_PRTCID;
	props[1].key = "prtcvers";
	props[1].value = TB5_TB_PRTCVERS;
	props[2].key = "prtcrevs";
	props[2].value = TB5_TB_PRTCREVS;
	props[3].key = "prtcstns";
	props[3].value = e2e ? TB5_TB_F_E2E : 0;
}

int tb5_tb_service_check(uint32_t prtcid, uint32_t prtcvers)
{
	if (prtcid != TB5_TB_PRTCID || prtcvers != TB5_TB_PRTCVERS)
		return -EPROTONOSUPPORT;
	return 0;
}

uint32_t tb5_tb_agree(uint32_t local, uint32_t remote)
{
	return local & remote & TB5_TB_F_KNOWN;
}

/* -- link speed ---------------------------------------------------------- */

void tb5_tb_lanes(uint32_t link_width, uint32_t *tx, uint32_t *rx)
{
	switch (link_width) {
	case 1:		/* one lane; TB_LINK_WIDTH_SINGLE */
		*tx = 1;
		*rx = 1;
		break;
	case 2:		/* two lanes; TB_LINK_WIDTH_DUAL */
		*tx = 2;
		*rx = 2;
		break;
	case 4:		/* TB_LINK_WIDTH_ASYM_TX: three transmitters here */
		*tx = 3;
		*rx = 1;
		break;
	case 8:		/* TB_LINK_WIDTH_ASYM_RX: three receivers here */
		*tx = 1;
		*rx = 3;
		break;
	default:
		*tx = 0;
		*rx = 0;
		break;
	}
}

uint32_t tb5_tb_speed_mbps(uint32_t gbps, uint32_t tx_lanes, uint32_t rx_lanes)
{
	uint64_t mbps;
	uint32_t lanes = tx_lanes < rx_lanes ? tx_lanes : rx_lanes;

	mbps = (uint64_t)gbps * lanes * 1000u;
	return mbps > 0xffffffffull ? 0xffffffffu : (uint32_t)mbps;
}

/* -- login messages ------------------------------------------------------ */

#define W_ROUTE_HI	0
#define W_ROUTE_LO	1
#define W_LENGTH_SN	2
#define W_UUID		3
#define W_SENDER	7
#define W_TARGET	11
#define W_TYPE		15
#define W_CMD_ID	16
#define W_VERSION	17
#define W_STATUS	18
#define W_PATH		19
#define W_FEATURES	20
#define W_RING_SIZE	21
#define W_SESSION	22
#define W_RESERVED	23

#define LENGTH_MASK	0x3fu		/* words after the XDomain header */
#define SN_SHIFT	27
#define SN_MASK		(0x3u << SN_SHIFT)
#define XD_HDR_WORDS	3u

void tb5_tb_msg_encode(const struct tb5_tb_msg *m,
		       uint32_t words[TB5_TB_MSG_WORDS])
{
	memset(words, 0, TB5_TB_MSG_BYTES);
	words[W_ROUTE_HI] = (uint32_t)(m->route >> 32);
	words[W_ROUTE_LO] = (uint32_t)m->route;
	words[W_LENGTH_SN] = (TB5_TB_MSG_WORDS - XD_HDR_WORDS) |
			     ((m->seq << SN_SHIFT) & SN_MASK);
	/* UUIDs travel as bytes: both ends copy them the same way. */
	memcpy(&words[W_UUID], tb5_tb_msg_uuid, 16);
	memcpy(&words[W_SENDER], m->sender, 16);
	memcpy(&words[W_TARGET], m->target, 16);
	words[W_TYPE] = m->type;
	words[W_CMD_ID] = m->cmd_id;
	words[W_VERSION] = m->version;
	words[W_STATUS] = m->status;
	words[W_PATH] = m->path;
	words[W_FEATURES] = m->features;
	words[W_RING_SIZE] = m->ring_size;
	words[W_SESSION] = m->session;
	words[W_RESERVED] = 0;
}

int tb5_tb_msg_decode(const uint32_t *words, size_t bytes,
		      struct tb5_tb_msg *m)
{
	uint32_t len;

	if (!words || bytes < TB5_TB_MSG_BYTES || bytes % 4)
		return -EBADMSG;
	/* The XDomain length field counts the words after its header. */
	len = words[W_LENGTH_SN] & LENGTH_MASK;
	if (len != bytes / 4 - XD_HDR_WORDS)
		return -EBADMSG;
	if (!bytes_equal((const uint8_t *)&words[W_UUID], tb5_tb_msg_uuid, 16))
		return -EBADMSG;
	memset(m, 0, sizeof(*m));
	m->route = ((uint64_t)words[W_ROUTE_HI] << 32 | words[W_ROUTE_LO]) &
		   TB5_TB_ROUTE_MASK;
	m->seq = (words[W_LENGTH_SN] & SN_MASK) >> SN_SHIFT;
	memcpy(m->sender, &words[W_SENDER], 16);
	memcpy(m->target, &words[W_TARGET], 16);
	m->type = words[W_TYPE];
	m->cmd_id = words[W_CMD_ID];
	m->version = words[W_VERSION];
	m->status = words[W_STATUS];
	m->path = words[W_PATH];
	m->features = words[W_FEATURES];
	m->ring_size = words[W_RING_SIZE];
	m->session = words[W_SESSION];
	/* Another version is the login's to refuse, with an answer. */
	if (m->type < TB5_TB_MSG_LOGIN || m->type > TB5_TB_MSG_LOGOUT_RESP ||
	    !m->version)
		return -EBADMSG;
	return 0;
}

bool tb5_tb_msg_for(const struct tb5_tb_msg *m, uint64_t route,
		    const uint8_t remote[16], const uint8_t local[16])
{
	return m->route == (route & TB5_TB_ROUTE_MASK) &&
	       bytes_equal(m->sender, remote, 16) &&
	       bytes_equal(m->target, local, 16);
}

/* -- the login state machine --------------------------------------------- */

static void act_clear(struct tb5_tb_act *act)
{
	act->flags = 0;
	act->delay_ms = 0;
	act->status = 0;
}

static void act_send_login(struct tb5_tb_act *act, uint32_t delay_ms)
{
	act->flags |= TB5_TB_ACT_SEND_LOGIN;
	act->delay_ms = delay_ms;
}

/* Both logins are done: the rings may run. */
static void maybe_connect(struct tb5_tb_login *l, struct tb5_tb_act *act)
{
	if (l->sent && l->received && l->state == TB5_TB_LOGIN) {
		l->state = TB5_TB_CONNECTED;
		l->logins++;
		act->flags |= TB5_TB_ACT_CONNECT;
	}
}

/* Stop sending LOGINs: wait until the peer sends one. */
static void give_up(struct tb5_tb_login *l)
{
	l->state = TB5_TB_WAIT;
	l->sent = false;
	l->retries = 0;
	l->login_failures++;
}

void tb5_tb_login_start(struct tb5_tb_login *l, const struct tb5_tb_local *local,
			uint32_t session, struct tb5_tb_act *act)
{
	act_clear(act);
	l->state = TB5_TB_LOGIN;
	l->sent = false;
	l->received = false;
	l->retries = 0;
	l->session = session;
	l->local = *local;
	memset(&l->peer, 0, sizeof(l->peer));
	act_send_login(act, TB5_TB_LOGIN_FIRST_MS);
}

uint32_t tb5_tb_login_request(struct tb5_tb_login *l, uint32_t type,
			      struct tb5_tb_msg *m)
{
	memset(m, 0, sizeof(*m));
	/* Never 0: a zeroed response cannot match a request by accident. */
	if (++l->cmd_id == 0)
		l->cmd_id = 1;
	m->type = type;
	m->seq = l->retries & 3u;
	m->cmd_id = l->cmd_id;
	m->version = TB5_TB_MSG_VERSION;
	if (type == TB5_TB_MSG_LOGIN) {
		m->path = l->local.path;
		m->features = l->local.features;
		m->ring_size = l->local.ring_size;
		m->session = l->session;
	}
	return m->cmd_id;
}

void tb5_tb_login_result(struct tb5_tb_login *l, uint32_t cmd_id, int err,
			 const struct tb5_tb_msg *resp, struct tb5_tb_act *act)
{
	act_clear(act);
	/* Stopped, connected or restarted meanwhile: a stale answer. */
	if (l->state != TB5_TB_LOGIN || l->sent || cmd_id != l->cmd_id)
		return;
	if (!err) {
		if (!resp || resp->type != TB5_TB_MSG_LOGIN_RESP ||
		    resp->cmd_id != cmd_id)
			err = -EBADMSG;	/* an old response took our slot */
		else if (resp->status == EPROTONOSUPPORT)
			err = -EPROTONOSUPPORT;
		else if (resp->status)
			err = -ECONNREFUSED;	/* the peer's reason is not ours */
	}
	if (!err) {
		l->sent = true;
		l->retries = 0;
		maybe_connect(l, act);
		return;
	}
	if (err == -EPROTONOSUPPORT) {
		/* The peer speaks another version: retrying will not help. */
		give_up(l);
		return;
	}
	if (++l->retries < TB5_TB_LOGIN_RETRIES)
		act_send_login(act, TB5_TB_LOGIN_RETRY_MS);
	else
		give_up(l);
}

static bool same_peer(const struct tb5_tb_peer *a, const struct tb5_tb_peer *b)
{
	return a->path == b->path && a->session == b->session &&
	       a->features == b->features && a->ring_size == b->ring_size;
}

static void rx_login(struct tb5_tb_login *l, const struct tb5_tb_msg *req,
		     struct tb5_tb_act *act)
{
	struct tb5_tb_peer peer = {
		.path = req->path,
		.features = req->features,
		.ring_size = req->ring_size,
		.session = req->session,
	};

	act->flags |= TB5_TB_ACT_RESPOND;
	if (req->version != TB5_TB_MSG_VERSION) {
		act->status = EPROTONOSUPPORT;
		return;
	}
	if (l->state == TB5_TB_CONNECTED) {
		/* Our response was lost and the peer asks again. */
		if (same_peer(&l->peer, &peer))
			return;
		/*
		 * The peer started over (reloaded, or its connect failed):
		 * its transmit path may have changed. Tear down, and log in
		 * again so that it learns ours.
		 */
		act->flags |= TB5_TB_ACT_DISCONNECT;
		l->state = TB5_TB_LOGIN;
		l->sent = false;
		l->retries = 0;
	}
	if (l->state == TB5_TB_WAIT) {
		l->state = TB5_TB_LOGIN;
		l->retries = 0;
	}
	l->received = true;
	l->peer = peer;
	if (!l->sent)
		act_send_login(act, 0);	/* the peer is there: answer at once */
	maybe_connect(l, act);
}

void tb5_tb_login_rx(struct tb5_tb_login *l, const struct tb5_tb_msg *req,
		     struct tb5_tb_act *act)
{
	act_clear(act);
	/* Stopped (suspended, going away): no answer; the peer retries. */
	if (l->state == TB5_TB_IDLE)
		return;
	switch (req->type) {
	case TB5_TB_MSG_LOGIN:
		rx_login(l, req, act);
		break;
	case TB5_TB_MSG_LOGOUT:
		act->flags |= TB5_TB_ACT_RESPOND;
		if (l->state == TB5_TB_CONNECTED)
			act->flags |= TB5_TB_ACT_DISCONNECT;
		/* The peer goes away: wait for its next LOGIN. */
		l->state = TB5_TB_WAIT;
		l->sent = false;
		l->received = false;
		l->retries = 0;
		break;
	default:
		break;
	}
}

void tb5_tb_login_connect_failed(struct tb5_tb_login *l, int err,
				 struct tb5_tb_act *act)
{
	(void)err;
	act_clear(act);
	if (l->state != TB5_TB_CONNECTED)
		return;
	act->flags |= TB5_TB_ACT_DISCONNECT;
	l->login_failures++;
	/*
	 * The peer believes we are connected. A new session in our next
	 * LOGIN tells it to tear down and log in again.
	 */
	l->session++;
	l->state = TB5_TB_LOGIN;
	l->sent = false;
	l->received = false;
	if (++l->retries < TB5_TB_LOGIN_RETRIES) {
		act_send_login(act, TB5_TB_CONNECT_RETRY_MS);
	} else {
		l->state = TB5_TB_WAIT;
		l->retries = 0;
	}
}

bool tb5_tb_login_stop(struct tb5_tb_login *l, struct tb5_tb_act *act)
{
	bool logout = l->sent;

	act_clear(act);
	if (l->state == TB5_TB_CONNECTED)
		act->flags |= TB5_TB_ACT_DISCONNECT;
	l->state = TB5_TB_IDLE;
	l->sent = false;
	l->received = false;
	l->retries = 0;
	return logout;
}

void tb5_tb_login_response(const struct tb5_tb_msg *req, uint32_t status,
			   struct tb5_tb_msg *resp)
{
	memset(resp, 0, sizeof(*resp));
	resp->route = req->route;
	resp->seq = req->seq;
	resp->type = req->type == TB5_TB_MSG_LOGIN ? TB5_TB_MSG_LOGIN_RESP :
						  TB5_TB_MSG_LOGOUT_RESP;
	memcpy(resp->sender, req->target, 16);
	memcpy(resp->target, req->sender, 16);
	resp->cmd_id = req->cmd_id;
	resp->version = TB5_TB_MSG_VERSION;
	resp->status = status;
}

const char *tb5_tb_login_state_name(enum tb5_tb_login_state st)
{
	switch (st) {
	case TB5_TB_IDLE:
		return "idle";
	case TB5_TB_LOGIN:
		return "login";
	case TB5_TB_WAIT:
		return "wait";
	case TB5_TB_CONNECTED:
		return "connected";
	}
	return "?";
}

/* -- bring-up and teardown order ----------------------------------------- */

int tb5_tb_ledger_next(const struct tb5_tb_ledger *lg)
{
	int s;

	for (s = 0; s < TB5_TB_NSTEPS; s++)
		if (!(lg->done & (1u << s)))
			return s;
	return -1;
}

void tb5_tb_ledger_mark(struct tb5_tb_ledger *lg, enum tb5_tb_step s)
{
	if ((int)s >= 0 && s < TB5_TB_NSTEPS)
		lg->done |= 1u << s;
}

int tb5_tb_ledger_undo(struct tb5_tb_ledger *lg)
{
	int s;

	for (s = TB5_TB_NSTEPS - 1; s >= 0; s--) {
		if (lg->done & (1u << s)) {
			lg->done &= ~(1u << s);
			return s;
		}
	}
	return -1;
}

const char *tb5_tb_step_name(enum tb5_tb_step s)
{
	switch (s) {
	case TB5_TB_STEP_IN_HOPID:
		return "in-hopid";
	case TB5_TB_STEP_TX_START:
		return "tx-start";
	case TB5_TB_STEP_RX_START:
		return "rx-start";
	case TB5_TB_STEP_RX_PRIME:
		return "rx-prime";
	case TB5_TB_STEP_PATHS:
		return "paths";
	case TB5_TB_STEP_LINK_UP:
		return "link-up";
	case TB5_TB_NSTEPS:
		break;
	}
	return "?";
}

/* -- frames and descriptors ---------------------------------------------- */

int tb5_tb_tx_desc(uint8_t sof, uint8_t eof, uint32_t len, uint8_t *pdf_sof,
		   uint8_t *pdf_eof, uint32_t *size_field)
{
	bool last;

	if (!len || len > TB5_FRAME_MAX)
		return -EINVAL;
	if (eof != TB5_EOF_MORE && eof != TB5_EOF_LAST)
		return -EINVAL;
	last = eof == TB5_EOF_LAST;
	if (sof == TB5_SOF_HEADER)
		*pdf_eof = last ? TB5_TB_PDF_HDR_LAST : TB5_TB_PDF_HDR_MORE;
	else if (sof == TB5_SOF_PAYLOAD)
		*pdf_eof = last ? TB5_TB_PDF_PAY_LAST : TB5_TB_PDF_PAY_MORE;
	else
		return -EINVAL;
	*pdf_sof = TB5_TB_PDF_SOF;
	*size_field = len & 0xfffu;	/* 4096 is written as 0 */
	return 0;
}

enum tb5_tb_rx_verdict tb5_tb_rx_check(uint32_t flags, uint32_t size,
				       uint8_t pdf_eof, uint8_t *sof,
				       uint8_t *eof, uint32_t *len)
{
	if (flags & TB5_TB_DESC_CRC_ERROR)
		return TB5_TB_RX_CRC;
	if (flags & TB5_TB_DESC_OVERRUN)
		return TB5_TB_RX_OVERRUN;
	size &= 0xfffu;
	*len = size ? size : TB5_FRAME_MAX;
	switch (pdf_eof) {
	case TB5_TB_PDF_HDR_MORE:
	case TB5_TB_PDF_HDR_LAST:
		*sof = TB5_SOF_HEADER;
		break;
	case TB5_TB_PDF_PAY_MORE:
	case TB5_TB_PDF_PAY_LAST:
		*sof = TB5_SOF_PAYLOAD;
		break;
	case TB5_TB_PDF_DROP:
		return TB5_TB_RX_DROPPED;
	default:
		return TB5_TB_RX_BAD_PDF;
	}
	*eof = pdf_eof == TB5_TB_PDF_HDR_LAST || pdf_eof == TB5_TB_PDF_PAY_LAST ?
	       TB5_EOF_LAST : TB5_EOF_MORE;
	return TB5_TB_RX_OK;
}

enum { SLOT_FREE = 0, SLOT_INFLIGHT, SLOT_DONE };

int tb5_tb_txq_init(struct tb5_tb_txq *q, uint32_t size)
{
	memset(q, 0, sizeof(*q));
	if (!size || (size & (size - 1)))
		return -EINVAL;
	q->cookies = tb5_os_zalloc(sizeof(*q->cookies) * size);
	q->state = tb5_os_zalloc(size);
	if (!q->cookies || !q->state) {
		tb5_tb_txq_free(q);
		return -ENOMEM;
	}
	q->size = size;
	q->kick_at = size / 8 ? size / 8 : 1;
	return 0;
}

void tb5_tb_txq_free(struct tb5_tb_txq *q)
{
	tb5_os_free(q->state);
	tb5_os_free(q->cookies);
	q->state = NULL;
	q->cookies = NULL;
	q->size = 0;
}

int tb5_tb_txq_reserve(struct tb5_tb_txq *q, uint64_t cookie, uint32_t *slot)
{
	if (tb5_tb_txq_used(q) >= q->size) {
		q->full++;
		q->stalled = true;
		return -ENOSPC;
	}
	*slot = q->head & (q->size - 1);
	q->cookies[*slot] = cookie;
	q->state[*slot] = SLOT_INFLIGHT;
	q->head++;
	return 0;
}

void tb5_tb_txq_unreserve(struct tb5_tb_txq *q)
{
	uint32_t slot;

	if (!tb5_tb_txq_used(q))
		return;
	slot = (q->head - 1) & (q->size - 1);
	if (q->state[slot] != SLOT_INFLIGHT)
		return;
	q->state[slot] = SLOT_FREE;
	q->cookies[slot] = 0;
	q->head--;
}

int tb5_tb_txq_complete(struct tb5_tb_txq *q, uint32_t slot, uint64_t *cookie,
			bool *kick)
{
	uint32_t mask = q->size - 1;

	if (slot >= q->size || q->state[slot] != SLOT_INFLIGHT) {
		q->bad++;
		return -EPROTO;
	}
	if (slot != (q->tail & mask))
		q->reordered++;
	*cookie = q->cookies[slot];
	q->cookies[slot] = 0;
	q->state[slot] = SLOT_DONE;
	q->completed++;
	while (tb5_tb_txq_used(q) && q->state[q->tail & mask] == SLOT_DONE) {
		q->state[q->tail & mask] = SLOT_FREE;
		q->tail++;
	}
	*kick = q->stalled && q->size - tb5_tb_txq_used(q) >= q->kick_at;
	if (*kick)
		q->stalled = false;
	return 0;
}

void tb5_tb_txq_reset(struct tb5_tb_txq *q)
{
	if (q->cookies)
		memset(q->cookies, 0, sizeof(*q->cookies) * q->size);
	if (q->state)
		memset(q->state, 0, q->size);
	q->head = 0;
	q->tail = 0;
	q->stalled = false;
}
