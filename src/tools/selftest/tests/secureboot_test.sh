#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# secureboot_test.sh <tb5-selftest> <cmake> <check_json.cmake> - ctest's
# test of the secureboot check over fake trees: an EFI directory with the
# SecureBoot, MokListRT and MokNew variables as efivarfs shows them (4
# bytes of attributes, then the value; the MOK lists as
# EFI_SIGNATURE_LISTs of X.509 certificates), a lockdown file, DKMS's
# certificate and a module file signed as sign-file signs (openssl cms:
# detached PKCS#7, issuer and serial, no attributes, then the
# module_signature trailer). Each case checks the check's status and what
# its line says.
set -u

exe=$1 cmake=$2 check_json=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1

fail() {
	echo "FAILED: $*" >&2
	exit 1
}

MOK_GUID=605dab50-e046-4300-abb6-3dd810dd8b23
GLOBAL_GUID=8be4df61-93ca-11d2-aa0d-00e098032b8c

# key NAME CN: NAME.key and NAME.der (self-signed, as DKMS makes its MOK).
key() {
	openssl req -new -x509 -nodes -days 1 -subj "/CN=$2" -newkey rsa:2048 \
		-keyout "$1.key" -outform DER -out "$1.der" >/dev/null 2>&1 || fail "openssl req"
	openssl x509 -inform DER -in "$1.der" -out "$1.pem" || fail "openssl x509"
}

# sign IN KEY OUT: IN with KEY's signature appended, as sign-file does.
sign() {
	local len
	openssl cms -sign -in "$1" -signer "$2.pem" -inkey "$2.key" -outform DER -binary \
		-noattr -nocerts -nosmimecap -md sha256 -out "$work/sig.p7" || fail "openssl cms"
	len=$(stat -c %s "$work/sig.p7")
	{
		cat "$1" "$work/sig.p7"
		# module_signature: algo, hash, id_type 2 (PKCS#7), signer_len,
		# key_id_len, 3 bytes of padding, the signature's length (BE32)
		printf '\x00\x00\x02\x00\x00\x00\x00\x00'
		printf "\\x$(printf %02x $((len >> 24 & 255)))\\x$(printf %02x $((len >> 16 & 255)))"
		printf "\\x$(printf %02x $((len >> 8 & 255)))\\x$(printf %02x $((len & 255)))"
		printf '~Module signature appended~\n'
	} >"$3"
}

le32() {
	local v=$1
	printf "\\x$(printf %02x $((v & 255)))\\x$(printf %02x $((v >> 8 & 255)))"
	printf "\\x$(printf %02x $((v >> 16 & 255)))\\x$(printf %02x $((v >> 24 & 255)))"
}

# mok_var NAME CERT.der: an efivarfs file holding one EFI_SIGNATURE_LIST of
# the certificate.
mok_var() {
	local n
	n=$(stat -c %s "$2")
	{
		printf '\x07\x00\x00\x00'
		# EFI_CERT_X509_GUID a5c059a1-94e4-4aa7-87b5-ab155c2bf072
		printf '\xa1\x59\xc0\xa5\xe4\x94\xa7\x4a\x87\xb5\xab\x15\x5c\x2b\xf0\x72'
		le32 $((28 + 16 + n))
		le32 0
		le32 $((16 + n))
		printf '\x50\xab\x5d\x60\x46\xe0\x00\x43\xab\xb6\x3d\xd8\x10\xdd\x8b\x23'
		cat "$2"
	} >"efi/efivars/$1-$MOK_GUID"
}

# sb ON: the SecureBoot variable.
sb() {
	mkdir -p efi/efivars
	printf "\\x06\\x00\\x00\\x00\\x0$1" >"efi/efivars/SecureBoot-$GLOBAL_GUID"
}

# expect MODULE STATUS TEXT...: the check on MODULE has STATUS and its
# text (detail, hint or reason) holds each TEXT.
expect() {
	local module=$1 status=$2 line t
	shift 2

	TB5_EFI_DIR=$work/efi TB5_LOCKDOWN=$work/lockdown TB5_DKMS_MOK=$work/mok.der \
		TB5_MODULE_FILE=$work/$module TB5_SYSFS_MODULE=$work/no-module \
		"$exe" --json >out.json 2>err.txt
	"$cmake" -DJSON=out.json -DALLOW_FAIL=ON -P "$check_json" "^secureboot\$=$status" ||
		{ cat out.json err.txt; fail "$module: secureboot is not $status"; }
	TB5_EFI_DIR=$work/efi TB5_LOCKDOWN=$work/lockdown TB5_DKMS_MOK=$work/mok.der \
		TB5_MODULE_FILE=$work/$module TB5_SYSFS_MODULE=$work/no-module \
		"$exe" >out.txt 2>&1
	line=$(grep -E "^$status +secureboot " out.txt) || { cat out.txt; fail "no $status secureboot line"; }
	for t in "$@"; do
		[[ $line == *"$t"* ]] || fail "$module: the line does not say '$t': $line"
	done
	echo "ok: $module: $line"
}

key mok "DKMS module signing key"
key other "someone else's key"
head -c 100000 /dev/urandom >plain.ko
sign plain.ko mok tb5.ko
sign plain.ko other other-key.ko
cp tb5.ko altered.ko
printf 'changed by hand!' | dd of=altered.ko bs=1 seek=40000 conv=notrunc status=none
printf '[none] integrity confidentiality\n' >lockdown

# No EFI: not a UEFI boot. Secure Boot off: nothing to check.
expect tb5.ko SKIP "not booted through UEFI"
sb 0
expect tb5.ko SKIP "Secure Boot is off"

sb 1
printf 'none [integrity] confidentiality\n' >lockdown
expect tb5.ko FAIL "lockdown: integrity" "signed by 'DKMS module signing key'" "$work/mok.der" \
	"a key the kernel does not trust" "sudo mokutil --import $work/mok.der" reboot \
	"Enroll MOK, Continue, Yes" "signature matches its contents"
expect plain.ko FAIL "is not signed"
expect other-key.ko FAIL "signed by 'someone else's key'" "not the key DKMS signs with"
expect altered.ko FAIL "was changed after it was signed"

mok_var MokNew mok.der
expect tb5.ko FAIL "waiting to be enrolled" "reboot; in the MOK manager"
# As an ordinary user reads it: MokNew is root's (mode 0600).
if ((EUID != 0)); then
	chmod 000 "efi/efivars/MokNew-$MOK_GUID"
	expect tb5.ko FAIL "an enrollment request waits for the next boot" "sudo mokutil --import"
fi
rm -f "efi/efivars/MokNew-$MOK_GUID"

mok_var MokListRT mok.der
expect tb5.ko PASS "signed by 'DKMS module signing key'" "$work/mok.der" "an enrolled key" \
	"signature matches its contents"
expect altered.ko FAIL "was changed after it was signed"
expect other-key.ko FAIL "not the key DKMS signs with"
# The other key enrolled: its module passes, the key named.
mok_var MokListRT other.der
expect other-key.ko PASS "signed by 'someone else's key'" "an enrolled key"

# A damaged signature: a FAIL that says so, never a crash.
head -c 50000 tb5.ko >broken.ko
tail -c 40 tb5.ko >>broken.ko
expect broken.ko FAIL "signature"
echo "secureboot: all cases passed"
