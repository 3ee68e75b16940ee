// SPDX-License-Identifier: MIT
//
// checks_secureboot.cc - the secureboot check: with UEFI Secure Boot on,
// the kernel loads tb5.ko only when it is signed by a key it trusts. DKMS
// signs what it builds with its MOK (/var/lib/dkms/mok.pub), which the
// operator enrolls through shim's MOK manager. The check reads what decides
// it and says what to do:
//   - Secure Boot (the SecureBoot EFI variable) and the kernel's lockdown
//     (/sys/kernel/security/lockdown); SKIP when Secure Boot is off
//   - tb5.ko as modprobe finds it (modinfo -n tb5): its appended PKCS#7
//     signature (signer, serial number, hash), and whether the signature
//     matches the module's bytes (SHA-256 and RSA, against the signer's
//     certificate where this host has it)
//   - DKMS's certificate and the MOK lists: enrolled (MokListRT), waiting
//     for the MOK manager (MokNew)
// Compressed modules (.ko.xz, .ko.zst, .ko.gz) are read through modinfo,
// which names the signer but leaves the bytes unchecked.
//
// Tests point the paths at fake trees: TB5_EFI_DIR (/sys/firmware/efi),
// TB5_LOCKDOWN (/sys/kernel/security/lockdown), TB5_DKMS_MOK
// (/var/lib/dkms/mok.pub), TB5_MODULE_FILE (instead of modinfo -n tb5).
#include "checks.hpp"
#include "errors.hpp"

#include "tb5/tb5.h"

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace tb5selftest {
namespace {

using Bytes = std::vector<uint8_t>;
// What cannot be parsed: the check catches it and FAILs with its message.
using tb5::tools::Error;

const char kMokGuid[] = "605dab50-e046-4300-abb6-3dd810dd8b23";
const char kGlobalGuid[] = "8be4df61-93ca-11d2-aa0d-00e098032b8c";
const char kSigMarker[] = "~Module signature appended~\n";

std::string path_from_env(const char *name, const char *fallback)
{
	const char *value = getenv(name);

	return value && *value ? value : fallback;
}

std::optional<Bytes> read_file(const std::string &path)
{
	std::ifstream in(path, std::ios::binary);

	if (!in)
		return std::nullopt;
	return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string efi_variable_path(const std::string &name, const char *guid)
{
	return path_from_env("TB5_EFI_DIR", "/sys/firmware/efi") + "/efivars/" + name + "-" + guid;
}

// An EFI variable's value, without the 4 bytes of attributes efivarfs puts
// first.
std::optional<Bytes> efi_variable(const std::string &name, const char *guid)
{
	auto raw = read_file(efi_variable_path(name, guid));

	if (!raw || raw->size() < 4)
		return std::nullopt;
	return Bytes(raw->begin() + 4, raw->end());
}

// --- DER, as far as certificates and PKCS#7 need it ---------------------

struct Der {
	uint8_t tag = 0;
	const uint8_t *data = nullptr;	// the contents
	size_t len = 0;
};

// Reads the element at the front of [*p, end) and moves *p past it.
Der der_next(const uint8_t **p, const uint8_t *end)
{
	Der d;

	if (end - *p < 2)
		throw Error("truncated DER");
	d.tag = *(*p)++;
	size_t len = *(*p)++;
	if (len & 0x80) {
		const size_t n = len & 0x7f;
		if (n == 0 || n > 4 || static_cast<size_t>(end - *p) < n)
			throw Error("bad DER length");
		len = 0;
		for (size_t i = 0; i < n; i++)
			len = len << 8 | *(*p)++;
	}
	if (static_cast<size_t>(end - *p) < len)
		throw Error("truncated DER element");
	d.data = *p;
	d.len = len;
	*p += len;
	return d;
}

// The elements inside a constructed one.
std::vector<Der> der_children(const Der &d)
{
	std::vector<Der> out;
	const uint8_t *p = d.data;

	while (p < d.data + d.len)
		out.push_back(der_next(&p, d.data + d.len));
	return out;
}

Der der_parse(const uint8_t *data, size_t len)
{
	const uint8_t *p = data;

	return der_next(&p, data + len);
}

Bytes der_bytes(const Der &d)
{
	return Bytes(d.data, d.data + d.len);
}

// The commonName of an X.501 Name, "" when it has none.
std::string common_name(const Der &name)
{
	static const uint8_t kCn[] = {0x55, 0x04, 0x03};	// 2.5.4.3

	for (const Der &rdn : der_children(name)) {
		for (const Der &atv : der_children(rdn)) {
			const auto kv = der_children(atv);
			if (kv.size() == 2 && kv[0].len == sizeof(kCn) &&
			    !memcmp(kv[0].data, kCn, sizeof(kCn)))
				return std::string(reinterpret_cast<const char *>(kv[1].data), kv[1].len);
		}
	}
	return "";
}

// An INTEGER's magnitude without the leading zero DER adds for a high bit.
Bytes unsigned_integer(const Der &d)
{
	Bytes b = der_bytes(d);

	while (b.size() > 1 && b[0] == 0)
		b.erase(b.begin());
	return b;
}

std::string colon_hex(const Bytes &b)
{
	std::string s;

	for (uint8_t c : b)
		s += format(s.empty() ? "%02X" : ":%02X", c);
	return s;
}

struct Certificate {
	Bytes der;
	std::string issuer;	// commonName
	std::string subject;	// commonName
	Bytes serial;
	Bytes modulus;		// RSA
	Bytes exponent;
};

Certificate parse_certificate(const Bytes &der)
{
	Certificate c;

	c.der = der;
	const auto cert = der_children(der_parse(der.data(), der.size()));
	if (cert.empty())
		throw Error("not an X.509 certificate");
	auto tbs = der_children(cert[0]);
	size_t i = 0;
	if (!tbs.empty() && tbs[0].tag == 0xa0)	// [0] version
		i = 1;
	if (tbs.size() < i + 6)
		throw Error("not an X.509 certificate");
	c.serial = unsigned_integer(tbs[i]);
	c.issuer = common_name(tbs[i + 2]);
	c.subject = common_name(tbs[i + 4]);
	const auto spki = der_children(tbs[i + 5]);
	if (spki.size() == 2 && spki[1].tag == 0x03 && spki[1].len > 1) {
		// BIT STRING: a byte of unused bits, then RSAPublicKey.
		const auto rsa = der_children(der_parse(spki[1].data + 1, spki[1].len - 1));
		if (rsa.size() == 2) {
			c.modulus = unsigned_integer(rsa[0]);
			c.exponent = unsigned_integer(rsa[1]);
		}
	}
	return c;
}

// The certificates in an EFI_SIGNATURE_LIST sequence (MokListRT, MokNew).
std::vector<Bytes> signature_list_certs(const Bytes &v)
{
	static const uint8_t kX509[16] = {0xa1, 0x59, 0xc0, 0xa5, 0xe4, 0x94, 0xa7, 0x4a,
					  0x87, 0xb5, 0xab, 0x15, 0x5c, 0x2b, 0xf0, 0x72};
	std::vector<Bytes> out;
	size_t off = 0;
	auto u32 = [&v](size_t at) {
		return static_cast<uint32_t>(v[at] | v[at + 1] << 8 | v[at + 2] << 16 |
					     static_cast<uint32_t>(v[at + 3]) << 24);
	};

	while (off + 28 <= v.size()) {
		const uint32_t list = u32(off + 16), header = u32(off + 20), size = u32(off + 24);
		if (list < 28 || off + list > v.size() || size <= 16)
			break;
		if (!memcmp(&v[off], kX509, sizeof(kX509))) {
			for (size_t s = off + 28 + header; s + size <= off + list; s += size)
				out.emplace_back(v.begin() + static_cast<long>(s + 16),
						 v.begin() + static_cast<long>(s + size));
		}
		off += list;
	}
	return out;
}

// --- the module's signature ----------------------------------------------

struct ModuleSignature {
	bool signed_ = false;
	size_t content_len = 0;		// the bytes the signature covers
	std::string signer;		// the issuer's commonName
	Bytes serial;
	std::string hash;		// "sha256", ...
	Bytes signature;
	bool compressed = false;	// read through modinfo: no bytes to check
};

std::string hash_name(const Der &alg)
{
	static const std::pair<Bytes, const char *> kHashes[] = {
		{{0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01}, "sha256"},
		{{0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x02}, "sha384"},
		{{0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x03}, "sha512"},
		{{0x2b, 0x0e, 0x03, 0x02, 0x1a}, "sha1"},
	};
	const auto parts = der_children(alg);

	if (parts.empty())
		return "?";
	for (const auto &[oid, name] : kHashes) {
		if (der_bytes(parts[0]) == oid)
			return name;
	}
	return "?";
}

// The signature sign-file appends: PKCS#7 SignedData, detached, one
// SignerInfo naming its key by issuer and serial number, no attributes
// (the signature is over the module's digest itself).
ModuleSignature parse_module_signature(const Bytes &ko)
{
	const size_t marker = sizeof(kSigMarker) - 1;
	ModuleSignature s;

	if (ko.size() < marker + 12 ||
	    memcmp(ko.data() + ko.size() - marker, kSigMarker, marker) != 0)
		return s;
	const uint8_t *info = ko.data() + ko.size() - marker - 12;
	const size_t sig_len = static_cast<size_t>(info[8]) << 24 | info[9] << 16 | info[10] << 8 | info[11];
	if (info[2] != 2 /* PKEY_ID_PKCS7 */ || sig_len > ko.size() - marker - 12)
		throw Error("the appended signature is not PKCS#7");
	s.signed_ = true;
	s.content_len = ko.size() - marker - 12 - sig_len;
	const auto content_info = der_children(der_parse(ko.data() + s.content_len, sig_len));
	if (content_info.size() != 2)
		throw Error("bad PKCS#7 ContentInfo");
	const auto signed_data = der_children(der_children(content_info[1]).at(0));
	const Der &signer_infos = signed_data.back();
	const auto si = der_children(der_children(signer_infos).at(0));
	if (si.size() < 5 || si[1].tag != 0x30)
		throw Error("the signature names its key by key id, not by issuer and serial number");
	const auto sid = der_children(si[1]);
	s.signer = common_name(sid.at(0));
	s.serial = unsigned_integer(sid.at(1));
	s.hash = hash_name(si[2]);
	if (si[3].tag == 0xa0)
		throw Error("the signature has authenticated attributes (not sign-file's)");
	s.signature = der_bytes(si[4]);
	return s;
}

// --- SHA-256 and RSA (PKCS#1 v1.5), to check the bytes ------------------

Bytes sha256(const uint8_t *data, size_t len)
{
	static const uint32_t k[64] = {
		0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
		0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
		0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
		0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
		0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
		0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
		0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
		0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};
	uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
			 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
	auto rotr = [](uint32_t x, int n) { return x >> n | x << (32 - n); };
	Bytes msg(data, data + len);

	msg.push_back(0x80);
	while (msg.size() % 64 != 56)
		msg.push_back(0);
	for (int i = 7; i >= 0; i--)
		msg.push_back(static_cast<uint8_t>(static_cast<uint64_t>(len) * 8 >> (i * 8)));
	for (size_t off = 0; off < msg.size(); off += 64) {
		uint32_t w[64];
		for (int i = 0; i < 16; i++)
			w[i] = static_cast<uint32_t>(msg[off + 4 * i]) << 24 | msg[off + 4 * i + 1] << 16 |
			       msg[off + 4 * i + 2] << 8 | msg[off + 4 * i + 3];
		for (int i = 16; i < 64; i++) {
			const uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
			const uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
			w[i] = w[i - 16] + s0 + w[i - 7] + s1;
		}
		uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
		for (int i = 0; i < 64; i++) {
			const uint32_t t1 = hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) +
					    k[i] + w[i];
			const uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
			hh = g;
			g = f;
			f = e;
			e = d + t1;
			d = c;
			c = b;
			b = a;
			a = t1 + t2;
		}
		h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += hh;
	}
	Bytes out;
	for (uint32_t x : h)
		for (int i = 3; i >= 0; i--)
			out.push_back(static_cast<uint8_t>(x >> (i * 8)));
	return out;
}

// Unsigned big numbers, 32-bit limbs, least significant first.
using Big = std::vector<uint32_t>;

Big big_from(const Bytes &b)
{
	Big n((b.size() + 3) / 4, 0);

	for (size_t i = 0; i < b.size(); i++)
		n[i / 4] |= static_cast<uint32_t>(b[b.size() - 1 - i]) << (8 * (i % 4));
	return n;
}

// a * b mod m, by shifting the product in bit by bit (slow, and plenty
// for one signature).
Big mulmod(const Big &a, const Big &b, const Big &m)
{
	Big prod(a.size() + b.size() + 1, 0);

	for (size_t i = 0; i < a.size(); i++) {
		uint64_t carry = 0;
		for (size_t j = 0; j < b.size(); j++) {
			const uint64_t t = static_cast<uint64_t>(a[i]) * b[j] + prod[i + j] + carry;
			prod[i + j] = static_cast<uint32_t>(t);
			carry = t >> 32;
		}
		prod[i + b.size()] += static_cast<uint32_t>(carry);
	}
	Big r(m.size() + 1, 0);
	auto ge = [&m](const Big &x) {
		if (x[m.size()])
			return true;
		for (size_t i = m.size(); i-- > 0;) {
			if (x[i] != m[i])
				return x[i] > m[i];
		}
		return true;
	};
	for (size_t bit = prod.size() * 32; bit-- > 0;) {
		for (size_t i = r.size(); i-- > 1;)
			r[i] = r[i] << 1 | r[i - 1] >> 31;
		r[0] = r[0] << 1 | (prod[bit / 32] >> (bit % 32) & 1);
		if (ge(r)) {
			uint64_t borrow = 0;
			for (size_t i = 0; i < r.size(); i++) {
				const uint64_t mi = i < m.size() ? m[i] : 0;
				const uint64_t t = static_cast<uint64_t>(r[i]) - mi - borrow;
				r[i] = static_cast<uint32_t>(t);
				borrow = t >> 63;
			}
		}
	}
	r.resize(m.size());
	return r;
}

// Does @sig, by @cert's RSA key, sign the SHA-256 @digest (PKCS#1 v1.5)?
bool rsa_sha256_verify(const Certificate &cert, const Bytes &sig, const Bytes &digest)
{
	static const uint8_t kPrefix[] = {0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01,
					  0x65, 0x03, 0x04, 0x02, 0x01, 0x05, 0x00, 0x04, 0x20};
	const Big n = big_from(cert.modulus);
	Big result{1}, base = big_from(sig);
	const size_t k = cert.modulus.size();

	if (cert.modulus.empty() || sig.size() > k)
		return false;
	result.resize(n.size(), 0);
	base.resize(n.size(), 0);
	for (size_t i = 0; i < cert.exponent.size() * 8; i++) {
		const size_t byte = cert.exponent.size() - 1 - i / 8;
		if (cert.exponent[byte] >> (i % 8) & 1)
			result = mulmod(result, base, n);
		base = mulmod(base, base, n);
	}
	Bytes em(k, 0);
	for (size_t i = 0; i < k; i++)
		em[k - 1 - i] = static_cast<uint8_t>(result[i / 4] >> (8 * (i % 4)));
	// 00 01 FF..FF 00 DigestInfo(SHA-256, digest)
	const size_t t = sizeof(kPrefix) + digest.size();
	if (k < t + 11 || em[0] != 0 || em[1] != 1 || em[k - t - 1] != 0)
		return false;
	for (size_t i = 2; i < k - t - 1; i++) {
		if (em[i] != 0xff)
			return false;
	}
	return !memcmp(&em[k - t], kPrefix, sizeof(kPrefix)) &&
	       !memcmp(&em[k - digest.size()], digest.data(), digest.size());
}

// --- the module, through modinfo where it must --------------------------

// The output of `modinfo ARGS...` (kmod), "" when it could not run.
std::string modinfo(const std::vector<std::string> &args)
{
	int fds[2];

	if (pipe(fds))
		return "";
	const pid_t pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return "";
	}
	if (pid == 0) {
		std::vector<char *> argv;
		static char name[] = "modinfo";
		argv.push_back(name);
		for (const std::string &a : args)
			argv.push_back(const_cast<char *>(a.c_str()));
		argv.push_back(nullptr);
		dup2(fds[1], STDOUT_FILENO);
		close(fds[0]);
		close(fds[1]);
		execvp("modinfo", argv.data());
		for (const char *dir : {"/usr/sbin/modinfo", "/sbin/modinfo"})
			execv(dir, argv.data());
		_exit(127);
	}
	close(fds[1]);
	std::string out;
	char buf[4096];
	ssize_t n;
	while ((n = read(fds[0], buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR))
		if (n > 0)
			out.append(buf, static_cast<size_t>(n));
	close(fds[0]);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
	}
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? out : "";
}

std::string first_line(const std::string &s)
{
	return s.substr(0, s.find('\n'));
}

// A compressed module's signature, as modinfo reads it: the signer and the
// serial number ("sig_key", colon-separated hex).
ModuleSignature modinfo_signature(const std::string &path)
{
	ModuleSignature s;
	std::istringstream in(modinfo({path}));
	std::string line, key;

	s.compressed = true;
	while (std::getline(in, line)) {
		const size_t colon = line.find(':');
		if (colon == std::string::npos)
			continue;
		key = line.substr(0, colon);
		std::string value = line.substr(line.find_first_not_of(' ', colon + 1) == std::string::npos
							? line.size()
							: line.find_first_not_of(' ', colon + 1));
		if (key == "signer") {
			s.signer = value;
			s.signed_ = true;
		} else if (key == "sig_key") {
			for (size_t i = 0; i + 1 < value.size(); i += 3)
				s.serial.push_back(static_cast<uint8_t>(strtoul(value.substr(i, 2).c_str(), nullptr, 16)));
		} else if (key == "sig_hashalgo") {
			s.hash = value;
		}
	}
	while (s.serial.size() > 1 && s.serial[0] == 0)
		s.serial.erase(s.serial.begin());
	return s;
}

bool compressed_name(const std::string &path)
{
	for (const char *ext : {".ko.xz", ".ko.zst", ".ko.gz"}) {
		const size_t n = strlen(ext);
		if (path.size() > n && path.compare(path.size() - n, n, ext) == 0)
			return true;
	}
	return false;
}

// --- the check -----------------------------------------------------------

// The lockdown mode in brackets ("integrity"), "" when unknown.
std::string lockdown_mode()
{
	std::ifstream in(path_from_env("TB5_LOCKDOWN", "/sys/kernel/security/lockdown"));
	std::string line;

	if (!std::getline(in, line))
		return "";
	const size_t a = line.find('['), b = line.find(']');
	return a != std::string::npos && b > a ? line.substr(a + 1, b - a - 1) : "";
}

std::string dkms_rebuild_hint()
{
	const std::string v = tb5_version();

	return "let DKMS build and sign it again: sudo dkms remove tb5/" + v +
	       " --all && sudo dpkg-reconfigure tb5-dkms (rpm: sudo dkms install tb5/" + v + ")";
}

bool same_key(const Certificate &cert, const ModuleSignature &sig)
{
	return cert.serial == sig.serial && cert.issuer == sig.signer;
}

Result judge(const Environment &env)
{
	auto sb = efi_variable("SecureBoot", kGlobalGuid);
	const std::string efi = path_from_env("TB5_EFI_DIR", "/sys/firmware/efi");

	if (!sb) {
		if (access(efi.c_str(), F_OK) != 0)
			return skip("secureboot", "", "not booted through UEFI: Secure Boot does not apply");
		return skip("secureboot", "", "no SecureBoot variable: the firmware has no Secure Boot");
	}
	if (sb->empty() || (*sb)[0] != 1)
		return skip("secureboot", "Secure Boot is off", "the kernel loads tb5.ko signed or not");

	const std::string lockdown = lockdown_mode();
	std::string where = "Secure Boot on";
	if (!lockdown.empty())
		where += " (lockdown: " + lockdown + ")";

	std::string path = path_from_env("TB5_MODULE_FILE", "");
	if (path.empty())
		path = first_line(modinfo({"-n", "tb5"}));
	if (path.empty())
		return skip("secureboot", where, "no tb5.ko installed for this kernel (see module)");

	const std::string mok_path = path_from_env("TB5_DKMS_MOK", "/var/lib/dkms/mok.pub");
	std::optional<Certificate> mok;
	if (auto der = read_file(mok_path)) {
		try {
			mok = parse_certificate(*der);
		} catch (const std::exception &e) {
			throw Error(mok_path + ": not a certificate (" + std::string(e.what()) + ")");
		}
	}

	ModuleSignature sig;
	Bytes ko;
	if (compressed_name(path)) {
		sig = modinfo_signature(path);
	} else {
		auto bytes = read_file(path);
		if (!bytes)
			throw Error("cannot read " + path + ": " + strerror(errno));
		ko = std::move(*bytes);
		try {
			sig = parse_module_signature(ko);
		} catch (const std::exception &e) {
			throw Error(path + ": its signature cannot be read (" + std::string(e.what()) + ")");
		}
	}

	std::vector<Certificate> enrolled;
	bool mok_list_read = false;
	for (const char *name : {"MokListRT", "MokListRT1", "MokListRT2"}) {
		if (auto v = efi_variable(name, kMokGuid)) {
			mok_list_read = true;
			for (const Bytes &der : signature_list_certs(*v)) {
				try {
					enrolled.push_back(parse_certificate(der));
				} catch (const std::exception &) {
					// not a certificate this check reads: not the signer's
				}
			}
		}
	}
	bool pending = false;
	// MokNew, written by mokutil --import, is root's to read.
	const bool request = access(efi_variable_path("MokNew", kMokGuid).c_str(), F_OK) == 0;
	if (auto v = efi_variable("MokNew", kMokGuid)) {
		for (const Bytes &der : signature_list_certs(*v))
			pending |= mok && der == mok->der;
	}
	const std::string unread_request =
		request && !efi_variable("MokNew", kMokGuid)
			? "; an enrollment request waits for the next boot (sudo mokutil --list-new shows its key)"
			: "";

	Result r;
	r.data["secure_boot"] = true;
	r.data["lockdown"] = lockdown;
	r.data["module_file"] = path;
	r.data["module_loaded"] = env.module_loaded;
	if (!sig.signed_) {
		r = fail("secureboot", where + " and " + path + " is not signed: the kernel refuses it",
			 "DKMS signs what it builds with its key (/var/lib/dkms/mok.key, made with openssl: "
			 "apt install openssl); " + dkms_rebuild_hint());
		r.data["signed"] = false;
		return r;
	}
	const std::string who = "'" + sig.signer + "' (serial " + colon_hex(sig.serial) + ", " + sig.hash + ")";
	const Certificate *signer = nullptr;
	if (mok && same_key(*mok, sig))
		signer = &*mok;
	bool signer_enrolled = false;
	for (const Certificate &c : enrolled) {
		if (same_key(c, sig)) {
			signer_enrolled = true;
			if (!signer)
				signer = &c;
		}
	}
	const bool by_mok = mok && same_key(*mok, sig);
	r.data["signed"] = true;
	r.data["signer"] = sig.signer;
	r.data["serial"] = colon_hex(sig.serial);
	r.data["hash"] = sig.hash;
	r.data["dkms_key"] = by_mok;
	r.data["enrolled"] = signer_enrolled;

	// The bytes against the signature, where the signer's certificate is here.
	std::string checked;
	if (!sig.compressed && signer && sig.hash == "sha256") {
		const Bytes digest = sha256(ko.data(), sig.content_len);
		if (!rsa_sha256_verify(*signer, sig.signature, digest)) {
			r = fail("secureboot", where + "; " + path + " was changed after it was signed: its signature by " +
					       who + " does not match its contents, and the kernel refuses it",
				 dkms_rebuild_hint());
			r.data["signature_matches"] = false;
			return r;
		}
		checked = ", signature matches its contents";
		r.data["signature_matches"] = true;
	}
	const std::string key_file = by_mok ? " (" + mok_path + ")" : "";
	if (env.module_loaded || signer_enrolled) {
		r.status = Status::kPass;
		r.name = "secureboot";
		r.detail = where + "; " + path + " signed by " + who + key_file + checked +
			   (signer_enrolled ? ", an enrolled key (MokListRT)" : ", loaded: the kernel trusts the key");
		return r;
	}
	const std::string import = "sudo mokutil --import " + mok_path;
	const std::string manager = "in the MOK manager: Enroll MOK, Continue, Yes, the password, Reboot";
	if (!by_mok) {
		r.status = Status::kFail;
		r.name = "secureboot";
		r.detail = where + "; " + path + " is signed by " + who + ", not the key DKMS signs with (" +
			   mok_path + "), and the kernel does not trust that key";
		r.hint = dkms_rebuild_hint() + "; or enroll the signer's certificate: sudo mokutil --import CERT.der, then reboot";
		return r;
	}
	r.status = Status::kFail;
	r.name = "secureboot";
	if (pending) {
		r.detail = where + "; " + path + " is signed by " + who + key_file + checked +
			   ", which is waiting to be enrolled (mokutil --import done)";
		r.hint = "reboot; " + manager;
		r.data["pending"] = true;
		return r;
	}
	r.detail = where + "; " + path + " is signed by " + who + key_file + checked +
		   ", a key the kernel does not trust: it is not enrolled" +
		   (mok_list_read ? "" : " (no MokListRT to read; mokutil --test-key " + mok_path + " tells)") +
		   unread_request;
	r.hint = import + " (set a one-time password), then reboot; " + manager;
	return r;
}

} // namespace

void run_secureboot_check(const Environment &env, Report &report)
{
	try {
		report.add(judge(env));
	} catch (const std::exception &e) {
		report.add(fail("secureboot", e.what(), "see docs/install.md, Secure Boot"));
	}
}

} // namespace tb5selftest
