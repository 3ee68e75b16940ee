// SPDX-License-Identifier: MIT
//
// web_config_test.cc - the web-config file: what it accepts, what it
// refuses by name, and basic auth's password check.
#include "web_config.hpp"

#include "errors.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace {

using tb5::tools::UsageError;
using tb5exporter::parse_web_config;
using tb5exporter::WebConfig;

// bcrypt of "right-pass" at cost 4 (cheap for a test; real ones use 10+).
const char kHash[] = "$2b$04$ll6qxiijvygHYrLTpUIwB.3C4LHBA5Pt3mAlGCm39K08k0N5g2QYy";

// The message of the UsageError that parsing @yaml throws.
std::string refusal(const std::string &yaml, const std::string &dir = "/nonexistent")
{
	try {
		parse_web_config(yaml, dir);
	} catch (const UsageError &e) {
		return e.what();
	}
	ADD_FAILURE() << "accepted: " << yaml;
	return "";
}

TEST(WebConfig, EmptyMeansPlainHttpWithoutAuth)
{
	WebConfig c = parse_web_config("", ".");
	EXPECT_FALSE(c.tls);
	EXPECT_TRUE(c.users.empty());
	c = parse_web_config("# nothing\n", ".");
	EXPECT_FALSE(c.tls);
	EXPECT_TRUE(c.users.empty());
}

TEST(WebConfig, BasicAuthUsers)
{
	const WebConfig c =
		parse_web_config(std::string("basic_auth_users:\n  prom: ") + kHash + "\n", ".");
	ASSERT_EQ(c.users.size(), 1u);
	EXPECT_TRUE(c.check_password("prom", "right-pass"));
	EXPECT_FALSE(c.check_password("prom", "wrong-pass"));
	EXPECT_FALSE(c.check_password("prom", ""));
	EXPECT_FALSE(c.check_password("nobody", "right-pass"));
}

TEST(WebConfig, RefusesWhatItCannotHonour)
{
	EXPECT_NE(refusal("basic_auth_users:\n  prom: plaintext\n").find("not a bcrypt hash"),
		  std::string::npos);
	EXPECT_NE(refusal("tls_server_config:\n  cert_file: a.crt\n").find("both required"),
		  std::string::npos);
	EXPECT_NE(refusal("tls_server_config:\n  cert_file: a\n  key_file: b\n  "
			  "client_auth_type: RequireAndVerifyClientCert\n")
			  .find("NoClientCert"),
		  std::string::npos);
	EXPECT_NE(refusal("tls_server_config:\n  cert_file: a\n  key_file: b\n  "
			  "client_ca_file: c\n")
			  .find("client_ca_file: not supported"),
		  std::string::npos);
	EXPECT_NE(refusal("http_server_config:\n  http2: false\n").find("not supported"),
		  std::string::npos);
	EXPECT_NE(refusal("basic_auth_user:\n  prom: x\n").find("unknown key"), std::string::npos);
	EXPECT_NE(refusal("- a\n- b\n").find("not a mapping"), std::string::npos);
	EXPECT_NE(refusal("tls_server_config: [\n").find("not YAML"), std::string::npos);
	EXPECT_NE(refusal("tls_server_config:\n  cert_file: a\n  key_file: b\n  min_version: SSL3\n")
			  .find("min_version"),
		  std::string::npos);
	// Files that are not there are named.
	EXPECT_NE(refusal("tls_server_config:\n  cert_file: a.crt\n  key_file: a.key\n")
			  .find("/nonexistent/a.crt: cannot be read"),
		  std::string::npos);
}

TEST(WebConfig, TlsFilesRelativeToTheConfig)
{
	char tmpl[] = "/tmp/tb5-webcfg-XXXXXX";
	const char *dir = mkdtemp(tmpl);
	ASSERT_TRUE(dir);
	std::ofstream(std::string(dir) + "/x.crt") << "CERT";
	std::ofstream(std::string(dir) + "/x.key") << "KEY";
	std::ofstream(std::string(dir) + "/web.yml")
		<< "tls_server_config:\n  cert_file: x.crt\n  key_file: x.key\n  min_version: TLS13\n";
	const WebConfig c = tb5exporter::load_web_config(std::string(dir) + "/web.yml");
	EXPECT_TRUE(c.tls);
	EXPECT_EQ(c.cert_pem, "CERT");
	EXPECT_EQ(c.key_pem, "KEY");
	EXPECT_EQ(c.cert_file, std::string(dir) + "/x.crt");
	EXPECT_EQ(c.tls_priorities(), "NORMAL:-VERS-TLS1.0:-VERS-TLS1.1:-VERS-TLS1.2");
	WebConfig d;
	d.min_version = "TLS12";
	EXPECT_EQ(d.tls_priorities(), "NORMAL:-VERS-TLS1.0:-VERS-TLS1.1");
	try {
		tb5exporter::load_web_config(std::string(dir) + "/none.yml");
		ADD_FAILURE() << "none.yml loaded";
	} catch (const UsageError &e) {
		EXPECT_NE(std::string(e.what()).find("none.yml: cannot be read"), std::string::npos)
			<< e.what();
	}
	(void)!std::system(("rm -rf '" + std::string(dir) + "'").c_str());
}

} // namespace
