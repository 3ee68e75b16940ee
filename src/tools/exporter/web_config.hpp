// SPDX-License-Identifier: MIT
//
// web_config.hpp - the exporter's TLS and basic-auth settings, read from a
// web-config file as Prometheus exporters have it (the format of
// prometheus/exporter-toolkit, docs/web-configuration.md):
//
//   tls_server_config:
//     cert_file: /etc/tb5/exporter.crt   # PEM; relative paths are taken
//     key_file: /etc/tb5/exporter.key    # from the file's directory
//     min_version: TLS12                 # TLS10..TLS13, default TLS12
//   basic_auth_users:
//     prometheus: $2y$10$...             # bcrypt hashes only
//
// What the toolkit has and tb5-exporter does not (client certificates,
// cipher lists, http_server_config) is refused by name rather than ignored,
// as are unknown keys: a setting that is silently dropped is a hole.
#ifndef TB5_EXPORTER_WEB_CONFIG_HPP
#define TB5_EXPORTER_WEB_CONFIG_HPP

#include <map>
#include <string>

namespace tb5exporter {

struct WebConfig {
	bool tls = false;
	std::string cert_pem, key_pem;	// the files' contents
	std::string cert_file, key_file;
	std::string min_version = "TLS12";
	std::map<std::string, std::string> users;	// name -> bcrypt hash

	// The GnuTLS priority string for min_version.
	std::string tls_priorities() const;
	// True when @user is listed and @password matches its hash.
	bool check_password(const std::string &user, const std::string &password) const;
};

// Reads and checks @path. Throws tb5::tools::UsageError naming the file and
// the key.
WebConfig load_web_config(const std::string &path);

// Parses @yaml (the file's text; @dir resolves relative paths). For tests.
// Throws tb5::tools::UsageError naming the key.
WebConfig parse_web_config(const std::string &yaml, const std::string &dir);

} // namespace tb5exporter

#endif // TB5_EXPORTER_WEB_CONFIG_HPP
