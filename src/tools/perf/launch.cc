// SPDX-License-Identifier: MIT
//
// launch.cc - --loop, --sim and --list.
#include "launch.hpp"
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "client.hpp"
#include "clock.hpp"
#include "device.hpp"
#include "environment.hpp"
#include "errors.hpp"
#include "server.hpp"
#include "live_counters.hpp"

namespace tb5perf {

std::string unique_fabric(const char *prefix)
{
	uint32_t r = 0;
	char buf[64];

	if (getrandom(&r, sizeof(r), 0) != sizeof(r))
		r = static_cast<uint32_t>(now_ns());
	snprintf(buf, sizeof(buf), "%s-%d-%08" PRIx32, prefix, getpid(), r);
	return buf;
}

std::string sim_spec(const std::string &fabric, const Options &opt,
		    const std::string &ours)
{
	if (opt.sim_options.find(':') != std::string::npos)
		throw UsageError("--sim-options: key=value[,key=value...], "
				 "without the fabric name");
	std::string spec = fabric + ":";
	if (!opt.sim_options.empty())
		spec += opt.sim_options + ",";
	// Ours last: they decide.
	return spec + ours;
}

void set_sim(const std::string &spec)
{
	if (setenv("TB5_SIM", spec.c_str(), 1))
		throw Error(std::string("setenv: ") + strerror(errno));
}

pid_t fork_child()
{
	const pid_t parent = getpid();
	const pid_t pid = fork();

	if (pid < 0)
		throw Error(std::string("fork: ") + strerror(errno));
	if (pid == 0) {
		// Die with the parent, even if it is killed.
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(kExitFailed);
	}
	return pid;
}

namespace {

// The server child process of --sim.
class Child {
public:
	Child(const std::vector<std::string> &args, const std::string &sim_env)
	{
		// Everything the child needs is built before fork(): after
		// it, only async-signal-safe calls.
		std::vector<char *> argv;
		for (const std::string &a : args)
			argv.push_back(const_cast<char *>(a.c_str()));
		argv.push_back(nullptr);
		std::vector<std::string> env_store;
		for (char **e = environ; *e; e++)
			if (strncmp(*e, "TB5_SIM=", 8))
				env_store.emplace_back(*e);
		env_store.push_back("TB5_SIM=" + sim_env);
		std::vector<char *> envp;
		for (const std::string &e : env_store)
			envp.push_back(const_cast<char *>(e.c_str()));
		envp.push_back(nullptr);
		pid_ = fork_child();
		if (pid_ == 0) {
			// The JSON on our stdout is the parent's.
			const int null = open("/dev/null", O_WRONLY);
			if (null >= 0)
				dup2(null, STDOUT_FILENO);
			execve("/proc/self/exe", argv.data(), envp.data());
			_exit(127);
		}
	}

	~Child()
	{
		if (reaped_)
			return;
		kill(pid_, SIGTERM);
		// A moment to leave the fabric cleanly, then no more.
		for (int i = 0; i < 200 && !reap(false); i++)
			usleep(10000);
		if (!reaped_) {
			kill(pid_, SIGKILL);
			reap(true);
		}
	}

	// Throws if the child ended before it should have.
	void check_alive()
	{
		if (reap(false))
			throw Error("the server process ended early (" +
				    describe() + ")");
	}

	// Waits up to @timeout_s for the child to end by itself; its exit
	// status, or -1 if it had to be killed.
	int wait(double timeout_s)
	{
		const uint64_t deadline = now_ns() + static_cast<uint64_t>(timeout_s * 1e9);

		while (!reap(false) && now_ns() < deadline)
			usleep(5000);
		if (!reaped_)
			return -1;
		return WIFEXITED(status_) ? WEXITSTATUS(status_) : -1;
	}

	std::string describe() const
	{
		if (WIFEXITED(status_))
			return "exit status " + std::to_string(WEXITSTATUS(status_));
		if (WIFSIGNALED(status_))
			return std::string("killed by signal ") +
			       strsignal(WTERMSIG(status_));
		return "status " + std::to_string(status_);
	}

private:
	bool reap(bool block)
	{
		if (reaped_)
			return true;
		const pid_t r = waitpid(pid_, &status_, block ? 0 : WNOHANG);
		if (r == pid_ || (r < 0 && errno == ECHILD))
			reaped_ = true;
		return reaped_;
	}

	pid_t pid_ = -1;
	int status_ = 0;
	bool reaped_ = false;
};

// Two links of this host that are each other's other end. (The ends of a
// loop pair may have host ids of their own.)
bool loop_pair(const tb5_link_info &a, const tb5_link_info &b)
{
	return a.state == TB5_LINK_STATE_READY && b.state == TB5_LINK_STATE_READY &&
	       a.peer_host == b.local_host && b.peer_host == a.local_host &&
	       strcmp(a.name, b.name);
}

} // namespace

int list_links_command()
{
	const std::vector<tb5_link_info> links = list_links();

	if (links.empty()) {
		printf("no tb5 links (load the tb5 module, or set TB5_SIM for "
		       "the simulator)\n");
		return kExitOk;
	}
	printf("%-12s %-9s %-6s %-18s %-18s %6s %7s %10s\n", "link", "backend",
	       "state", "host", "peer", "ring", "max_ops", "speed");
	for (const tb5_link_info &l : links)
		printf("%-12s %-9s %-6s %-18s %-18s %6u %7u %10s\n", l.name,
		       tb5_backend_str(l.backend), tb5_link_state_str(l.state),
		       hex(l.local_host).c_str(), hex(l.peer_host).c_str(),
		       l.ring_size, l.max_ops,
		       l.speed_mbps ? (std::to_string(l.speed_mbps) + " Mb/s").c_str()
				    : "-");
	return kExitOk;
}

int counters_command(bool json)
{
	const tb5::live::Snapshot snap = tb5::live::read_snapshot();

	if (json) {
		nlohmann::json out;
		out["directory"] = tb5::live::directory();
		out["publishers"] = snap.publishers;
		out["stale"] = snap.stale;
		out["invalid"] = snap.invalid;
		out["links"] = nlohmann::json::array();
		for (const auto &l : snap.links)
			out["links"].push_back({{"link", l.link}, {"tx_bytes", l.tx_bytes},
						{"rx_bytes", l.rx_bytes}, {"tx_ops", l.tx_ops},
						{"rx_ops", l.rx_ops}, {"errors", l.errors},
						{"processes", l.processes}});
		printf("%s\n", out.dump(2).c_str());
		return kExitOk;
	}
	printf("live counters in %s: %u NCCL process%s", tb5::live::directory().c_str(),
	       snap.publishers, snap.publishers == 1 ? "" : "es");
	if (snap.stale)
		printf(", %u stale file%s of exited processes", snap.stale,
		       snap.stale == 1 ? "" : "s");
	printf("\n");
	if (snap.links.empty())
		return kExitOk;
	printf("%-12s %16s %16s %12s %12s %8s %9s\n", "link", "tx_bytes", "rx_bytes",
	       "tx_ops", "rx_ops", "errors", "processes");
	for (const auto &l : snap.links)
		printf("%-12s %16" PRIu64 " %16" PRIu64 " %12" PRIu64 " %12" PRIu64
		       " %8" PRIu64 " %9u\n", l.link.c_str(), l.tx_bytes, l.rx_bytes,
		       l.tx_ops, l.rx_ops, l.errors, l.processes);
	return kExitOk;
}

int run_loop(const Options &opt)
{
	if (opt.sim)
		set_sim(sim_spec(unique_fabric("tb5perf"), opt, "hosts=1,loop=1"));

	const std::vector<tb5_link_info> links = list_links();
	const tb5_link_info *server_end = nullptr, *client_end = nullptr;
	for (const auto &a : links) {
		for (const auto &b : links) {
			if (!loop_pair(a, b) || client_end)
				continue;
			if (!opt.link.empty() ? opt.link == b.name
					      : strcmp(a.name, b.name) < 0) {
				server_end = &a;
				client_end = &b;
			}
		}
	}
	if (!client_end) {
		std::string names;
		for (const auto &l : links)
			names += std::string(names.empty() ? "" : ", ") + l.name +
				 " (" + tb5_link_state_str(l.state) + ")";
		throw Error("no ready loop pair" +
			    (opt.link.empty() ? std::string()
					      : " with " + opt.link) +
			    " among the links: " +
			    (names.empty() ? "none" : names) +
			    "; load tb5 with loopback=1, or use --sim --loop");
	}
	const std::string server_link = server_end->name;
	const std::string client_link = client_end->name;
	// Both ends are links of one kind: ask once, before two threads
	// race to say why not.
	check_memory(opt.memory, client_end);

	std::atomic<bool> stop{false};
	std::atomic<bool> server_done{false};
	std::string server_error;
	int server_status = kExitOk;
	Options server_opt = opt;
	server_opt.once = true;
	server_opt.quiet = true;
	std::thread server([&] {
		try {
			Server srv(server_opt, {server_link}, &stop);
			server_status = srv.run();
			if (server_status != kExitOk)
				server_error = srv.last_error();
		} catch (const Interrupted &) {
			server_status = kExitOk;
		} catch (const std::exception &e) {
			server_error = e.what();
			server_status = kExitFailed;
		}
		server_done.store(true);
	});
	auto watchdog = [&] {
		if (server_done.load() && !server_error.empty())
			throw Error("the server side failed: " + server_error);
	};
	int status;
	try {
		status = run_client(opt, client_link, "loop", watchdog);
	} catch (...) {
		stop.store(true);
		server.join();
		throw;
	}
	// The server ends after our BYE.
	const uint64_t deadline = now_ns() + static_cast<uint64_t>(opt.timeout_s * 1e9);
	while (!server_done.load() && now_ns() < deadline)
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	stop.store(true);
	server.join();
	if (!server_error.empty())
		throw Error("the server side failed: " + server_error);
	return status != kExitOk ? status : server_status;
}

int run_sim(const Options &opt)
{
	// Host 0 is this process, the client; hosts 1..n-1 each run a
	// server, and the client runs every test against each in turn,
	// over the cable to it (sim_h<j>).
	const uint32_t n = opt.sim_hosts;
	const std::string fabric = unique_fabric("tb5perf");
	const std::string hosts = "hosts=" + std::to_string(n);
	const std::string ours = sim_spec(fabric, opt, hosts + ",host=0,loop=0");
	char service[24], timeout[32];

	snprintf(service, sizeof(service), "0x%" PRIx64, opt.service);
	snprintf(timeout, sizeof(timeout), "%g", opt.timeout_s);
	set_sim(ours);
	std::vector<std::unique_ptr<Child>> children;
	for (uint32_t j = 1; j < n; j++)
		children.push_back(std::make_unique<Child>(
			std::vector<std::string>{"tb5-perf", "--server", "--once",
						 "--quiet", "--link", "sim_h0",
						 "--service", service, "--timeout",
						 timeout},
			sim_spec(fabric, opt, hosts + ",host=" + std::to_string(j) +
						     ",loop=0")));
	// The servers not yet served must still run (a served one ends).
	uint32_t current = 1;
	auto alive = [&children, &current] {
		for (size_t k = current - 1; k < children.size(); k++)
			children[k]->check_alive();
	};
	int status = kExitOk;
	for (; current < n && status == kExitOk; current++)
		status = run_client(opt, "sim_h" + std::to_string(current), "sim",
				   alive);
	if (status != kExitOk)
		return status;	// the servers left are stopped as they go
	for (uint32_t j = 1; j < n; j++) {
		const int child_status = children[j - 1]->wait(opt.timeout_s);
		if (child_status != kExitOk)
			throw Error("the server process of host " +
				    std::to_string(j) + " failed (" +
				    (child_status < 0 ? std::string("did not end")
						      : children[j - 1]->describe()) +
				    ")");
	}
	return status;
}

} // namespace tb5perf
