#include <catch2/catch.hpp>

#include "serve/web_config.h"

using namespace usdtprof;

TEST_CASE("web config: Prometheus' format, relative paths against its directory", "[web-config]")
{
	const std::string hash = "$2b$10$EyidjeWTec/iWEZywfwwue0moogBbbB9frIxmXSwopvIIfJhmAsMC";
	auto c = parse_web_config("tls_server_config:\n  cert_file: srv.pem\n  key_file: /k/srv.key\n"
				  "basic_auth_users:\n  alice: " + hash + "\n",
				  "/etc/usdtprof");
	REQUIRE(c.ok());
	CHECK(c.value().tls());
	CHECK(c.value().cert_file == "/etc/usdtprof/srv.pem");
	CHECK(c.value().key_file == "/k/srv.key");
	CHECK(c.value().basic_auth_users.at("alice") == hash);
	CHECK(bcrypt_matches("usdtprof-dummy", hash));
	CHECK(!bcrypt_matches("usdtprof-dummy2", hash));

	auto empty = parse_web_config("", ".");
	REQUIRE(empty.ok());
	CHECK(!empty.value().tls());
	CHECK(empty.value().basic_auth_users.empty());
	auto auth_only = parse_web_config("basic_auth_users:\n  bob: " + hash + "\n", ".");
	REQUIRE(auth_only.ok());
	CHECK(!auth_only.value().tls());
}

TEST_CASE("web config: what usdtprof does not serve is refused with one line", "[web-config]")
{
	auto message = [](const std::string &yaml) {
		auto c = parse_web_config(yaml, ".");
		REQUIRE(!c.ok());
		CHECK(c.error().message.find('\n') == std::string::npos);
		return c.error().message;
	};
	CHECK(message("tls_server_config:\n  cert_file: a.pem\n") ==
	      "web config: tls_server_config needs both cert_file and key_file");
	CHECK(message("tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: RequireAndVerifyClientCert\n")
		      .find("'tls_server_config.client_auth_type' is not supported") != std::string::npos);
	CHECK(message("http_server_config:\n  http2: false\n").find("'http_server_config' is not supported") !=
	      std::string::npos);
	CHECK(message("basic_auth_users:\n  alice: plaintext\n") ==
	      "web config: the password of basic_auth_users 'alice' is not a bcrypt hash ($2y$...)");
	CHECK(message("[1, 2]") == "web config: expected a mapping at the top");
	CHECK(message("tls_server_config: [").rfind("web config: malformed YAML", 0) == 0);
	auto missing = read_web_config("/nonexistent/web.yml");
	REQUIRE(!missing.ok());
	CHECK(missing.error().message.rfind("cannot read the web config /nonexistent/web.yml", 0) == 0);
}
