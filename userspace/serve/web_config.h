// The /metrics server's TLS and basic auth, read from a web configuration file in the
// format of Prometheus' exporters (exporter-toolkit's --web.config.file), so the file an
// operator already has for node_exporter works here and `promtool check web-config` checks it.
#pragma once

#include <map>
#include <string>

#include "base/result.h"

namespace usdtprof {

struct WebConfig {
	std::string cert_file, key_file;                 // tls_server_config; both empty: plain http
	std::map<std::string, std::string> basic_auth_users; // user -> bcrypt hash; empty: no auth
	bool tls() const { return !cert_file.empty(); }
};

// The subset usdtprof serves: tls_server_config.cert_file and key_file (relative paths
// against the file's directory, as exporter-toolkit does) and basic_auth_users (bcrypt
// hashes). One line for an unreadable or malformed file, an unknown or unsupported key,
// half a key pair, or a user whose hash is not bcrypt.
Result<WebConfig> read_web_config(const std::string &path);
// Parses the YAML text of a web config; dir resolves its relative paths.
Result<WebConfig> parse_web_config(const std::string &yaml, const std::string &dir);

// Whether password matches a bcrypt hash (crypt(3) of libxcrypt).
bool bcrypt_matches(const std::string &password, const std::string &hash);

} // namespace usdtprof
