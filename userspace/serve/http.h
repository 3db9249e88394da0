// cpp-httplib as Debian builds it, for the tests' clients and fake endpoints (usdtprof itself
// serves /metrics and pushes without it: docs/security.md): libcpp-httplib.so is compiled with
// these (cpp-httplib.pc's Cflags), and the header's class layouts depend on them, so every user
// must include httplib.h through this file.
#pragma once

#define CPPHTTPLIB_OPENSSL_SUPPORT
#define CPPHTTPLIB_ZLIB_SUPPORT
#define CPPHTTPLIB_BROTLI_SUPPORT
#include <httplib.h>
