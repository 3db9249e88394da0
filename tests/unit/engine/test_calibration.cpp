#include <catch2/catch.hpp>

#include "engine/calibration.h"

using namespace usdtprof;

TEST_CASE("calibration: a cost is the median of its batches, which an interrupted batch does not move", "[calibration]")
{
	// 95 batches of 480 ns a hit and one that an interrupt hit (+9.6 us over
	// its 16 parents: +600 ns a call): the mean would read ~6 ns high, the
	// median reads the hits.
	std::vector<double> batches(95, 480.0);
	batches.push_back(1080);
	CostEstimate e = estimate_cost(batches);
	CHECK(e.cost_ns == 480);
	CHECK(e.spread_ns == 0);
	// Two speed states (this host's ~290 and ~480 ns a hit), 40 and 56
	// batches: the median is the state most batches saw, the spread says
	// the states are ~190 ns apart.
	std::vector<double> states(40, 290.0);
	states.insert(states.end(), 56, 480.0);
	CostEstimate s = estimate_cost(states);
	CHECK(s.cost_ns == 480);
	CHECK(s.spread_ns == Approx((480 - 290) / 2.0));
}

TEST_CASE("calibration: one batch, none, and percentiles between ranks", "[calibration]")
{
	CHECK(estimate_cost({}).cost_ns == 0);
	CHECK(estimate_cost({}).spread_ns == 0);
	CostEstimate one = estimate_cost({412.5});
	CHECK(one.cost_ns == 412.5);
	CHECK(one.spread_ns == 0);
	CHECK(estimate_cost({300, 310, 320, 330}).cost_ns == Approx(315));
	CHECK(percentile({10, 20, 30, 40, 50}, 0.1) == Approx(14));
	CHECK(percentile({50, 10, 40, 20, 30}, 0.9) == Approx(46));
	CHECK(percentile({7}, 0.9) == 7);
}
