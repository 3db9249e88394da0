#include <memory>

#include "cli/commands.h"
#include "session/monitor.h"
#include "base/result.h"
#include "session/targets.h"

namespace usdtprof::cli {

Command add_monitor_command(CLI::App &parent)
{
	auto o = std::make_shared<MonitorOptions>();
	CLI::App *app = parent.add_subcommand(
		"monitor", "Profile continuously (-p PID, --binary PATH or --all): one profile per interval, within a CPU "
			   "budget");
	add_target_options(app, o->target);
	// --runtime again, as a list: --all takes several.
	app->remove_option(app->get_option("--runtime"));
	app->add_option("--runtime", o->runtimes,
			"Use this preset only (" + preset_names() +
				"); default: detected. --all: may be given several times; default: every preset but ruby "
				"(its probes fire only in a Ruby launched with a call hook)")
		->delimiter(',')
		->allow_extra_args(false);
	app->add_flag("--all", o->all,
		      "Every process of the host with probes of the presets, those started later too (from the "
		      "kernel's exec and fork events); never usdtprof itself");
	app->add_option("--max-processes", o->max_processes, "--all: processes profiled at once; beyond, one line says so")
		->capture_default_str()
		->check(CLI::Range(size_t(1), size_t(4096)));
	app->add_option("-o,--output-dir", o->dir, "Directory for the interval profiles (.data and .pb.gz)")
		->capture_default_str();
	app->add_option("-i,--interval", o->interval_s, "Seconds per interval (each jittered by +-20%)")
		->capture_default_str()
		->check(CLI::Range(0.05, 86400.0));
	app->add_option("--budget", o->budget, "Estimated probe cost allowed, a share of the target's CPU time")
		->capture_default_str()
		->check(CLI::Range(0.0001, 1.0));
	app->add_option("--keep", o->keep, "Intervals kept in the directory (0: all)")->capture_default_str();
	app->add_option("--max-bytes", o->max_bytes, "Bytes kept in the directory (0: no limit)")->capture_default_str();
	app->add_option("--max-interval-bytes", o->max_interval_bytes,
			"Bytes of one interval's profile; beyond, only the heaviest call paths are kept (0: no limit)")
		->capture_default_str();
	app->add_option("--max-age", o->max_age_s, "Seconds an interval is kept (0: no limit)");
	app->add_option("--listen", o->listen, "Serve Prometheus metrics at http://HOST:PORT/metrics");
	app->add_option("--web-config-file", o->web_config_file,
			"TLS and basic auth for --listen, in the format of Prometheus' exporters' web config "
			"(tls_server_config, basic_auth_users)");
	app->add_option("--top", o->top_n, "Function series in /metrics; the rest are summed")->capture_default_str();
	app->add_option("--push", o->push_url, "Send each interval's pprof to a Pyroscope-compatible http[s]:// URL");
	app->add_option("--push-ca-file", o->push_ca_file,
			"PEM CA certificates the https push endpoint must chain to (default: the system's)");
	app->add_option("--push-basic-auth-file", o->push_basic_auth_file,
			"File holding USER:PASSWORD for the push endpoint (mode 600; else $USDTPROF_PUSH_BASIC_AUTH)");
	app->add_option("--push-bearer-token-file", o->push_bearer_token_file,
			"File holding a bearer token for the push endpoint (mode 600; else $USDTPROF_PUSH_BEARER_TOKEN)");
	app->add_option("--service", o->service, "Application name of pushed profiles")->capture_default_str();
	app->add_flag("--offcpu", o->offcpu,
		      "Split self time into on- and off-CPU (a hook on every context switch of the machine, ~1% of "
		      "pgbench's CPU, outside the budget)");
	app->add_option("-d,--duration", o->duration_s, "Stop after SECONDS (default: SIGINT or SIGTERM)")
		->check(CLI::PositiveNumber);
	app->add_option("--max-paths", o->target.max_paths, "Distinct call paths the kernel map holds")
		->capture_default_str()
		->check(CLI::Range(1u, 1u << 24));
	return {app, [o] {
			if (!o->target.pids.empty() + !o->target.binary.empty() + o->all != 1)
				throw UserError("monitor needs exactly one of -p PID, --binary PATH or --all", 2);
			if (o->runtimes.size() > 1 && !o->all)
				throw UserError("several --runtime are for --all", 2);
			if (!o->all && !o->runtimes.empty())
				o->target.runtime = o->runtimes.front();
			return monitor(*o);
		}};
}

} // namespace usdtprof::cli
