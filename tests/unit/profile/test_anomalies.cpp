#include <catch2/catch.hpp>

#include <set>
#include <stdexcept>
#include <string>

#include "profile/anomalies.h"

using namespace usdtprof;

TEST_CASE("anomalies: one row per kernel counter, in its order; no default name", "[anomalies]")
{
	std::set<std::string> names;
	for (int i = 0; i < USDTPROF_ANOM_COUNT; i++) {
		const Anomaly &a = anomaly_table()[i];
		CHECK(a.id == i);
		CHECK(names.insert(a.name).second);
		CHECK(std::string(anomaly_name(i)) == a.name);
		CHECK(anomaly_description(a.name) == a.description);
	}
	CHECK(std::string(anomaly_name(USDTPROF_ANOM_WINDOW_EXITS)) == "window_exits");
	CHECK_THROWS_AS(anomaly_name(USDTPROF_ANOM_COUNT), std::out_of_range);
	CHECK_THROWS_AS(anomaly_name(-1), std::out_of_range);
	CHECK(anomaly_description("from_another_version") == nullptr);
}
