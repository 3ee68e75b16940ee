// SPDX-License-Identifier: MIT
//
// web_config.cc - see web_config.hpp.
#include "web_config.hpp"

#include "errors.hpp"

#include <crypt.h>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <memory>
#include <set>
#include <sstream>

namespace tb5exporter {

using tb5::tools::UsageError;

namespace {

std::string read_file(const std::string &path)
{
	std::ifstream in(path, std::ios::binary);
	if (!in)
		throw UsageError(path + ": cannot be read");
	std::ostringstream s;
	s << in.rdbuf();
	return s.str();
}

std::string resolve(const std::string &dir, const std::string &path)
{
	if (path.empty() || path[0] == '/' || dir.empty())
		return path;
	return dir + "/" + path;
}

// Throws for a key of @node in @refused or not in @known, naming it.
void only_known_keys(const YAML::Node &node, const std::set<std::string> &known,
		   const std::set<std::string> &refused, const std::string &where)
{
	for (const auto &kv : node) {
		const std::string key = kv.first.as<std::string>();
		if (refused.count(key))
			throw UsageError(where + key + ": not supported by tb5-exporter");
		if (!known.count(key))
			throw UsageError(where + key + ": unknown key");
	}
}

bool is_bcrypt(const std::string &hash)
{
	// $2a$, $2b$ or $2y$, a two-digit cost, $, 53 characters of salt and hash.
	return hash.size() == 60 && hash[0] == '$' && hash[1] == '2' &&
	       (hash[2] == 'a' || hash[2] == 'b' || hash[2] == 'y') && hash[3] == '$' &&
	       hash[6] == '$';
}

} // namespace

std::string WebConfig::tls_priorities() const
{
	// GnuTLS's defaults, minus the versions below min_version.
	std::string p = "NORMAL";
	static const char *const kOrder[] = {"TLS10", "TLS11", "TLS12", "TLS13"};
	static const char *const kGnutls[] = {"-VERS-TLS1.0", "-VERS-TLS1.1", "-VERS-TLS1.2",
					      "-VERS-TLS1.3"};
	for (int i = 0; i < 4 && min_version != kOrder[i]; i++)
		p += std::string(":") + kGnutls[i];
	return p;
}

bool WebConfig::check_password(const std::string &user, const std::string &password) const
{
	auto it = users.find(user);
	// An unknown user costs a hash too, so that timing does not say which
	// names exist.
	static const std::string kDummy =
		"$2y$10$2b2cU8CPhOTaGrs1HRQuAueS7JTT5ZHsHSzYiFPm1leZck7Mc8T4W";
	const std::string &hash = it == users.end() ? kDummy : it->second;
	auto data = std::make_unique<crypt_data>();
	const char *out = crypt_r(password.c_str(), hash.c_str(), data.get());
	if (!out || out[0] == '*')
		return false;
	// Compared in constant time.
	const std::string got(out);
	if (got.size() != hash.size())
		return false;
	unsigned char diff = 0;
	for (size_t i = 0; i < got.size(); i++)
		diff |= (unsigned char)(got[i] ^ hash[i]);
	return diff == 0 && it != users.end();
}

WebConfig parse_web_config(const std::string &yaml, const std::string &dir)
{
	WebConfig c;
	YAML::Node root;
	try {
		root = YAML::Load(yaml);
	} catch (const YAML::Exception &e) {
		throw UsageError(std::string("not YAML: ") + e.what());
	}
	if (root.IsNull())
		return c;	// an empty file: plain HTTP, no auth
	if (!root.IsMap())
		throw UsageError("the top level is not a mapping");
	try {
		only_known_keys(root, {"tls_server_config", "basic_auth_users"},
				{"http_server_config"}, "");
		if (const YAML::Node tls = root["tls_server_config"]; tls && !tls.IsNull()) {
			if (!tls.IsMap())
				throw UsageError("tls_server_config: not a mapping");
			only_known_keys(tls, {"cert_file", "key_file", "min_version", "client_auth_type"},
					{"cert", "key", "client_ca_file", "cipher_suites",
					 "curve_preferences", "max_version",
					 "prefer_server_cipher_suites", "client_allowed_sans"},
					"tls_server_config.");
			if (tls["client_auth_type"] &&
			    tls["client_auth_type"].as<std::string>() != "NoClientCert")
				throw UsageError("tls_server_config.client_auth_type: only NoClientCert is supported");
			c.cert_file = resolve(dir, tls["cert_file"] ? tls["cert_file"].as<std::string>() : "");
			c.key_file = resolve(dir, tls["key_file"] ? tls["key_file"].as<std::string>() : "");
			if (c.cert_file.empty() || c.key_file.empty())
				throw UsageError("tls_server_config: cert_file and key_file are both required");
			if (tls["min_version"]) {
				c.min_version = tls["min_version"].as<std::string>();
				if (c.min_version != "TLS10" && c.min_version != "TLS11" &&
				    c.min_version != "TLS12" && c.min_version != "TLS13")
					throw UsageError("tls_server_config.min_version: " + c.min_version +
							 " (TLS10, TLS11, TLS12 or TLS13)");
			}
			c.cert_pem = read_file(c.cert_file);
			c.key_pem = read_file(c.key_file);
			c.tls = true;
		}
		if (const YAML::Node users = root["basic_auth_users"]; users && !users.IsNull()) {
			if (!users.IsMap())
				throw UsageError("basic_auth_users: not a mapping of user to bcrypt hash");
			for (const auto &kv : users) {
				const std::string user = kv.first.as<std::string>();
				const std::string hash = kv.second.as<std::string>();
				if (user.empty() || user.find(':') != std::string::npos)
					throw UsageError("basic_auth_users: '" + user + "' is not a user name");
				if (!is_bcrypt(hash))
					throw UsageError("basic_auth_users." + user +
							 ": not a bcrypt hash (make one with htpasswd -nBC 10 " +
							 user + ")");
				c.users[user] = hash;
			}
		}
	} catch (const YAML::Exception &e) {
		throw UsageError(std::string("bad value: ") + e.what());
	}
	return c;
}

WebConfig load_web_config(const std::string &path)
{
	const std::string text = read_file(path);
	const size_t slash = path.rfind('/');
	const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
	try {
		return parse_web_config(text, dir);
	} catch (const UsageError &e) {
		throw UsageError(path + ": " + e.what());
	}
}

} // namespace tb5exporter
