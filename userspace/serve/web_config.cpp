#include "serve/web_config.h"

#include <algorithm>
#include <crypt.h>
#include <openssl/crypto.h>
#include <cstring>
#include <fstream>
#include <sstream>
#include <yaml-cpp/yaml.h>

namespace usdtprof {

namespace {

Error bad(const std::string &why) { return Error{"web config: " + why}; }

std::string resolve(const std::string &path, const std::string &dir)
{
	return path.empty() || path[0] == '/' || dir.empty() ? path : dir + "/" + path;
}

bool is_bcrypt(const std::string &hash)
{
	return hash.size() == 60 && hash[0] == '$' && hash[1] == '2' && std::strchr("aby", hash[2]) && hash[3] == '$';
}

// A mapping's keys must be among known; the first other one is named.
Result<void> only_keys(const YAML::Node &map, std::initializer_list<const char *> known, const std::string &where)
{
	for (const auto &kv : map) {
		std::string key = kv.first.as<std::string>();
		if (std::none_of(known.begin(), known.end(), [&](const char *k) { return key == k; }))
			return bad("'" + where + key + "' is not supported by usdtprof (supported: tls_server_config.cert_file, "
					     "tls_server_config.key_file, basic_auth_users)");
	}
	return {};
}

} // namespace

Result<WebConfig> parse_web_config(const std::string &yaml, const std::string &dir)
{
	YAML::Node root;
	try {
		root = YAML::Load(yaml);
	} catch (const YAML::Exception &e) {
		return bad(std::string("malformed YAML: ") + e.what());
	}
	WebConfig c;
	if (root.IsNull())
		return c;
	if (!root.IsMap())
		return bad("expected a mapping at the top");
	try {
		if (auto r = only_keys(root, {"tls_server_config", "basic_auth_users"}, ""); !r)
			return r.error();
		if (const YAML::Node tls = root["tls_server_config"]) {
			if (!tls.IsMap())
				return bad("tls_server_config must be a mapping");
			if (auto r = only_keys(tls, {"cert_file", "key_file"}, "tls_server_config."); !r)
				return r.error();
			c.cert_file = resolve(tls["cert_file"] ? tls["cert_file"].as<std::string>() : "", dir);
			c.key_file = resolve(tls["key_file"] ? tls["key_file"].as<std::string>() : "", dir);
			if (c.cert_file.empty() != c.key_file.empty() || c.cert_file.empty())
				return bad("tls_server_config needs both cert_file and key_file");
		}
		if (const YAML::Node users = root["basic_auth_users"]) {
			if (!users.IsMap() && !users.IsNull())
				return bad("basic_auth_users must map user names to bcrypt hashes");
			for (const auto &kv : users) {
				std::string user = kv.first.as<std::string>(), hash = kv.second.as<std::string>();
				if (user.empty() || user.find(':') != std::string::npos)
					return bad("a basic_auth_users name is empty or holds ':'");
				if (!is_bcrypt(hash))
					return bad("the password of basic_auth_users '" + user + "' is not a bcrypt hash ($2y$...)");
				c.basic_auth_users[user] = hash;
			}
		}
	} catch (const YAML::Exception &e) {
		return bad(std::string("unexpected value: ") + e.what());
	}
	return c;
}

Result<WebConfig> read_web_config(const std::string &path)
{
	std::ifstream in(path);
	if (!in)
		return Error{"cannot read the web config " + path + ": " + strerror(errno)};
	std::stringstream text;
	text << in.rdbuf();
	size_t slash = path.rfind('/');
	auto c = parse_web_config(text.str(), slash == std::string::npos ? "." : path.substr(0, slash));
	if (!c)
		return Error{path + ": " + c.error().message};
	return c;
}

bool bcrypt_matches(const std::string &password, const std::string &hash)
{
	crypt_data data{};
	const char *out = crypt_r(password.c_str(), hash.c_str(), &data);
	// A failed crypt_r returns a string starting with '*', never equal to a hash.
	return out && hash.size() == std::strlen(out) && CRYPTO_memcmp(out, hash.data(), hash.size()) == 0;
}

} // namespace usdtprof
