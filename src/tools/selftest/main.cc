// SPDX-License-Identifier: MIT
//
// main.cc - tb5-selftest: is this host ready to run NCCL over tb5? One line
// per check (PASS, FAIL with what to do, SKIP with the reason), --json for
// machines; exit status 0 only when nothing failed, 2 for a bad command
// line. With --respond, the echo server that a peer's round trip needs.
#include "checks.hpp"
#include "echo.hpp"
#include "errors.hpp"
#include "options.hpp"
#include "report.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>

#ifndef TB5_SELFTEST_VERSION
#define TB5_SELFTEST_VERSION "unknown"
#endif

namespace {

const char kChecks[] = R"(Checks, in order (a name is <check> or <check>:<subject>):
  module            tb5.ko is loaded (/sys/module/tb5) and its version is
                    libtb5's; major.minor differing FAILs (partial upgrade,
                    or the old module still loaded), patch differing is noted.
                    FAIL says whether to modprobe or to install tb5-dkms.
  abi               libtb5 opens a /dev/tb5_* (tb5_open): an ABI mismatch
                    FAILs with libtb5's message naming both versions.
  params            ring_size is a power of two in 64..16384; loopback shown.
  node:<n>          /dev/tb5_<n> exists, is the character device that
                    /sys/class/tb5/tb5_<n>/dev names, and you can open it
                    read-write (FAIL says how to get access).
  perms:<n>         /dev/tb5_<n> is never world-accessible (FAIL), and is
                    group tb5 mode 0660; SKIP when there is no group tb5 (the
                    udev rules of tb5-dkms are not installed).
  secureboot        with UEFI Secure Boot on: tb5.ko is signed (signer,
                    serial, its bytes checked against the signature) by a key
                    the kernel trusts (MokListRT); FAIL names DKMS's key file
                    and the mokutil --import command and reboot that enroll
                    it. SKIP when Secure Boot is off.
  link:<name>       each link's state and peer: ready PASSes (peer host id,
                    ring, speed); up or down SKIPs with the likely cause.
  roundtrip:<a><-><b>  a loop pair (both ends on this host), tested once:
                    messages of 0 B, 1 B, 4095 B, 4096 B, 4097 B and 1 MiB
                    sent from <a> to <b> and echoed back, every byte checked,
                    and nothing written past a message; round-trip times.
  roundtrip:<name>  the same with the peer at the other end of a cable (or a
                    simulated host); the peer must run `tb5-selftest
                    --respond`, else SKIP. Every wait gives up after
                    --timeout seconds with FAIL.
  gpu:<name>        whether GPU memory can be registered on each link (NCCL's
                    GPUDirect path): the module imports dma-bufs and CUDA has
                    a device that exports them, or the simulator has a DMA
                    engine; SKIP with the reason otherwise.
  plugin            the NCCL plugin (libnccl-net-tb5.so, or --plugin) loads,
                    is named TB5, initialises and reports >= 1 device; SKIP
                    when not installed.
  counters          the live per-link counters of NCCL jobs using the plugin
                    (bytes, operations, errors); SKIP when no job runs, FAIL
                    when a job's operations failed or a counter file is damaged.
With TB5_SIM set (the simulator), the kernel checks SKIP unless tb5 is loaded,
and the link checks run over the simulator's links.

--respond: listen on every link (or --link) for the peer's round trip and echo
its messages until SIGINT/SIGTERM or --count connections; one line each.

Exit status: 0 when nothing FAILed, 1 when something did, 2 for bad usage.
Reference: docs/selftest.md.)";

} // namespace

int main(int argc, char **argv)
{
	tb5selftest::Options opt;
	CLI::App app("tb5-selftest: check that this host is ready to run NCCL over tb5 "
		     "(Thunderbolt 5 / USB4 host-to-host)", "tb5-selftest");

	app.set_version_flag("--version", TB5_SELFTEST_VERSION);
	app.add_flag("--json", opt.json, "Print one JSON document (with --respond: one JSON object per line)");
	app.add_flag("-v,--verbose", opt.verbose, "Show per-message round-trip times and the plugin's log");
	app.add_option("--link", opt.link, "Check (or, with --respond, serve) only this link, e.g. tb5_0")
		->type_name("NAME");
	app.add_option("--timeout", opt.timeout_s, "Seconds any one wait may take before it FAILs")
		->type_name("SECONDS")
		->check(CLI::Range(0.05, 3600.0).description(""))
		->capture_default_str();
	app.add_option("--plugin", opt.plugin, "The NCCL plugin to load (default: libnccl-net-tb5.so "
		       "through the library search path)")
		->type_name("PATH");
	CLI::Option *respond = app.add_flag("--respond", opt.respond,
					    "Echo server for a peer's roundtrip check (see below)");
	app.add_option("--count", opt.count, "With --respond: exit after N connections")
		->type_name("N")
		->needs(respond);
	app.footer(kChecks);
	app.get_formatter()->column_width(28);

	try {
		app.parse(argc, argv);
	} catch (const CLI::ParseError &e) {
		const int rc = app.exit(e);
		return rc ? tb5::tools::kExitUsage : tb5::tools::kExitOk;
	}

	// A check that fails is a FAIL line, not an exception: the checks catch
	// what they call. What reaches here stops the whole command.
	try {
		if (opt.respond)
			return tb5selftest::run_responder(opt);

		tb5selftest::Report report(opt.json, opt.verbose);
		report.header();
		const tb5selftest::Environment env = tb5selftest::detect_environment();
		tb5selftest::run_kernel_checks(env, opt, report);
		tb5selftest::run_secureboot_check(env, report);
		tb5selftest::run_link_checks(env, opt, report);
		tb5selftest::run_gpu_checks(env, opt, report);
		tb5selftest::run_plugin_check(opt, report);
		tb5selftest::run_counters_check(report);
		return report.finish();
	} catch (const tb5::tools::Error &e) {
		std::fprintf(stderr, "tb5-selftest: %s\n", e.what());
		return tb5::tools::kExitFailed;
	}
}
