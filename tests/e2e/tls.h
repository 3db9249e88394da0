// A throwaway CA for TLS tests: DIR/NAME.pem (the CA), and DIR/NAME-srv.pem and
// DIR/NAME-srv.key, a certificate for 127.0.0.1 it signed (P-256: quick to make).
#pragma once

#include <catch2/catch.hpp>
#include <string>

#include "harness.h"

namespace e2e {

inline void make_test_ca(const std::string &dir, const std::string &name)
{
	std::string key = " -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
	Output o = run({"sh", "-c",
			"cd '" + dir + "' && openssl req -x509" + key + " -keyout " + name + ".key -out " + name +
				".pem -days 1 -subj /CN=" + name + " 2>&1 && openssl req" + key + " -keyout " + name +
				"-srv.key -out " + name + "-srv.csr -subj /CN=127.0.0.1 2>&1 && printf 'subjectAltName=IP:127.0.0.1' >" +
				name + ".ext && openssl x509 -req -in " + name + "-srv.csr -CA " + name + ".pem -CAkey " + name +
				".key -CAcreateserial -out " + name + "-srv.pem -days 1 -extfile " + name + ".ext 2>&1"});
	INFO(o.out);
	REQUIRE(o.status == 0);
}

} // namespace e2e
