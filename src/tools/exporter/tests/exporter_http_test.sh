#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# exporter_http_test.sh - the real tb5-exporter over the simulator, spoken to
# with curl: /metrics (checked by promtool), HEAD, 404, 405, the limits on
# connections per client and on request size, basic auth and TLS from a
# web-config file (certificate made here by openssl), a bad web-config
# refused, the port in use, the textfile mode, and a clean stop on SIGTERM.
#
#   exporter_http_test.sh TB5_EXPORTER
#
# Needs curl and openssl (exit 77, ctest's skip, without them); promtool
# (Debian's prometheus) where installed, as CI has it.
set -euo pipefail

exporter=${1:?usage: exporter_http_test.sh TB5_EXPORTER}
for t in curl openssl; do
	command -v "$t" >/dev/null || { echo "SKIP: needs $t"; exit 77; }
done
tmp=$(mktemp -d /tmp/tb5-exporter-test-XXXXXX)
pid=
cleanup() {
	if [[ -n $pid ]]; then kill "$pid" 2>/dev/null || true; fi
	rm -rf "$tmp"
}
trap cleanup EXIT
export TB5_SIM="exphttp$$:hosts=1,loop=1"

fail() { echo "FAIL: $*"; [[ -f $tmp/log ]] && sed 's/^/  log: /' "$tmp/log"; exit 1; }
ok() { echo "ok: $*"; }

promcheck() {
	if command -v promtool >/dev/null; then
		promtool check metrics <"$1" || fail "promtool check metrics on $2"
		ok "promtool check metrics: $2"
	else
		echo "note: no promtool here (apt install prometheus); $2 not linted"
	fi
}

# start ARGS...: runs the exporter on a free port ($port) and waits until it
# answers (or exits).
start() {
	local try
	for try in 1 2 3 4 5; do
		port=$((20000 + (RANDOM % 20000)))
		"$exporter" --port "$port" --address 127.0.0.1 "$@" >"$tmp/log" 2>&1 &
		pid=$!
		for _ in $(seq 50); do
			grep -q "serving /metrics" "$tmp/log" && return 0
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		wait "$pid" 2>/dev/null || true
		pid=
		grep -q "cannot serve" "$tmp/log" || fail "the exporter did not start (try $try)"
	done
	fail "no free port in 5 tries"
}

# stop: SIGTERM, which must end it with status 0 within 5 s.
stop() {
	local t0=$SECONDS rc=0
	kill -TERM "$pid"
	wait "$pid" || rc=$?
	pid=
	[[ $rc == 0 ]] || fail "exit status $rc after SIGTERM"
	((SECONDS - t0 <= 5)) || fail "took $((SECONDS - t0)) s to stop"
	grep -q "tb5-exporter: stopped" "$tmp/log" || fail "no 'stopped' line"
}

code() { curl -s -o /dev/null -w '%{http_code}' "$@" || true; }

# -- plain HTTP -----------------------------------------------------------
start
url=http://127.0.0.1:$port
curl -sf "$url/metrics" >"$tmp/metrics" || fail "GET /metrics"
grep -q '^tb5_up 1$' "$tmp/metrics" || fail "no tb5_up 1"
grep -q '^tb5_link_tx_bytes_total{link="sim_l0a"}' "$tmp/metrics" || fail "no link counters"
grep -q '^tb5_link_speed_bytes_per_second{' "$tmp/metrics" || fail "no speed in bytes per second"
ok "GET /metrics ($(grep -c '^tb5_' "$tmp/metrics") samples)"
promcheck "$tmp/metrics" "/metrics"
[[ $(curl -sI "$url/metrics" | head -n 1) == *" 200"* ]] || fail "HEAD /metrics"
[[ -z $(curl -s -I "$url/metrics" -o /dev/null -w '%{size_download}' | tr -d 0) ]] ||
	fail "HEAD sent a body"
ok "HEAD /metrics: 200, no body"
[[ $(code "$url/") == 200 ]] || fail "GET /"
[[ $(code "$url/nope") == 404 ]] || fail "GET /nope is not 404"
[[ $(code -X POST -d x=1 "$url/metrics") == 405 ]] || fail "POST is not 405"
ok "/ 200, /nope 404, POST 405"

# Request headers beyond the connection's memory are refused, not served.
big=$(head -c 40000 /dev/zero | tr '\0' a)
c=$(code -H "X-Big: $big" "$url/metrics")
[[ $c != 200 ]] || fail "a 40 kB header was served"
ok "a 40 kB request header refused (HTTP ${c:-none})"
stop
ok "SIGTERM: stopped with status 0"

# At most N connections per client: N idle ones hold every slot.
start --max-connections-per-client 2
url=http://127.0.0.1:$port
exec 5<>"/dev/tcp/127.0.0.1/$port" 6<>"/dev/tcp/127.0.0.1/$port"
sleep 0.3
c=$(code -m 3 "$url/metrics")
[[ $c != 200 ]] || fail "a third connection from one client was served"
exec 5>&- 6>&-
sleep 0.3
[[ $(code "$url/metrics") == 200 ]] || fail "not served once the idle connections closed"
ok "per-client limit: a third connection refused while two are open"
stop

# The port in use: status 1 and a message.
start
rc=0
"$exporter" --port "$port" --address 127.0.0.1 >"$tmp/log2" 2>&1 || rc=$?
if [[ $rc != 1 ]] || ! grep -q "cannot serve on 127.0.0.1:$port" "$tmp/log2"; then
	fail "a second exporter on port $port: status $rc, $(cat "$tmp/log2")"
fi
ok "port in use: status 1, named"
stop

# -- basic auth and TLS from a web-config file ------------------------------
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
	-subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1 \
	-keyout "$tmp/web.key" -out "$tmp/web.crt" 2>/dev/null || fail "openssl req"
# bcrypt of "right-pass" (cost 4: a test's).
# shellcheck disable=SC2016  # a literal hash, no expansion wanted
hash='$2b$04$ll6qxiijvygHYrLTpUIwB.3C4LHBA5Pt3mAlGCm39K08k0N5g2QYy'
cat >"$tmp/web.yml" <<EOF
tls_server_config:
  cert_file: web.crt
  key_file: web.key
basic_auth_users:
  prom: $hash
EOF
start --web-config-file "$tmp/web.yml"
grep -q "over TLS with basic auth" "$tmp/log" || fail "the start line does not say TLS and auth"
url=https://127.0.0.1:$port
tls=(--cacert "$tmp/web.crt")
[[ $(code "${tls[@]}" "$url/metrics") == 401 ]] || fail "no credentials: not 401"
curl -s -D - -o /dev/null "${tls[@]}" "$url/metrics" | grep -qi '^WWW-Authenticate: Basic realm="tb5-exporter"' ||
	fail "no WWW-Authenticate header"
[[ $(code "${tls[@]}" -u prom:wrong-pass "$url/metrics") == 401 ]] || fail "wrong password: not 401"
[[ $(code "${tls[@]}" -u other:right-pass "$url/metrics") == 401 ]] || fail "unknown user: not 401"
curl -sf "${tls[@]}" -u prom:right-pass "$url/metrics" >"$tmp/metrics-tls" ||
	fail "the right password over TLS"
grep -q '^tb5_up 1$' "$tmp/metrics-tls" || fail "no tb5_up over TLS"
ok "TLS (verified against its certificate) with basic auth: 401 without or with wrong credentials, 200 with"
[[ $(code "http://127.0.0.1:$port/metrics") != 200 ]] || fail "plain HTTP served on the TLS port"
ok "plain HTTP on the TLS port not served"
stop

# A web-config file it cannot honour: status 2, named.
printf 'basic_auth_users:\n  prom: plaintext\n' >"$tmp/bad.yml"
rc=0
"$exporter" --port 1 --web-config-file "$tmp/bad.yml" >"$tmp/log2" 2>&1 || rc=$?
if [[ $rc != 2 ]] || ! grep -q "bad.yml: basic_auth_users.prom: not a bcrypt hash" "$tmp/log2"; then
	fail "bad web-config: status $rc, $(cat "$tmp/log2")"
fi
ok "a plaintext password refused: status 2, named"

# -- the textfile mode ------------------------------------------------------
mkdir "$tmp/textfile"
"$exporter" --textfile-dir "$tmp/textfile" --once || fail "--textfile-dir --once"
[[ $(ls -A "$tmp/textfile") == tb5.prom ]] || fail "the directory holds $(ls -A "$tmp/textfile")"
grep -q '^tb5_up 1$' "$tmp/textfile/tb5.prom" || fail "no tb5_up in tb5.prom"
promcheck "$tmp/textfile/tb5.prom" "tb5.prom"
rm "$tmp/textfile/tb5.prom"
"$exporter" --textfile-dir "$tmp/textfile" --interval 1 >"$tmp/log" 2>&1 &
pid=$!
for _ in $(seq 50); do [[ -f $tmp/textfile/tb5.prom ]] && break; sleep 0.1; done
[[ -f $tmp/textfile/tb5.prom ]] || fail "no tb5.prom from the timer"
# Each write is a new file renamed over the old one: a new inode. Watch
# for the first change: the file system may hand the first inode number
# out again once that file is gone, so a later rewrite can carry it again.
i1=$(stat -c %i "$tmp/textfile/tb5.prom")
i2=$i1
for _ in $(seq 100); do
	sleep 0.1
	i2=$(stat -c %i "$tmp/textfile/tb5.prom")
	[[ $i1 == "$i2" ]] || break
done
[[ $i1 != "$i2" ]] || fail "tb5.prom not rewritten within 10 s at --interval 1"
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
pid=
[[ $rc == 0 ]] || fail "textfile mode: status $rc after SIGTERM"
[[ $(ls -A "$tmp/textfile") == tb5.prom ]] || fail "left behind: $(ls -A "$tmp/textfile")"
ok "textfile: written whole, rewritten by the timer, stopped by SIGTERM, nothing else left"
echo "PASS: exporter over HTTP, HTTPS, auth, limits, textfile"
