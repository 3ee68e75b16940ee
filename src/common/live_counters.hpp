// SPDX-License-Identifier: MIT
//
// live_counters.hpp - per-link counters that a running NCCL job publishes
// and that the tools and the metrics exporter read.
//
// The NCCL plugin is the publisher: each process that uses it keeps one
// file, <dir>/tb5live.<pid>.<n> (dir: $TB5_LIVE_DIR, else /dev/shm), mapped
// shared, with one record per link it has opened. Counters only grow and
// are written with relaxed atomic adds, so a reader never blocks a writer
// and sees each value whole. The file is removed when the publisher closes;
// a reader skips files whose process is gone (a job killed with SIGKILL
// leaves one behind, which `tb5-perf --counters` reports as stale).
#ifndef TB5_COMMON_LIVE_COUNTERS_HPP
#define TB5_COMMON_LIVE_COUNTERS_HPP

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <sys/types.h>

namespace tb5::live {

inline constexpr uint32_t kMagic = 0x7462356c;	// "tb5l"
inline constexpr uint32_t kVersion = 1;
inline constexpr size_t kMaxLinks = 32;
inline constexpr size_t kNameMax = 32;

// The shared layout (version 1). Only the publisher writes.
struct ShmLink {
	char link[kNameMax];		// NUL-terminated link name
	uint64_t tx_bytes;		// payload bytes of completed sends
	uint64_t rx_bytes;		// payload bytes of completed receives
	uint64_t tx_ops;		// completed sends
	uint64_t rx_ops;		// completed receives
	uint64_t errors;		// operations that failed
	uint64_t reserved[3];
};

struct ShmFile {
	uint32_t magic;
	uint32_t version;
	uint32_t pid;
	uint32_t nlinks;		// records in use, published after the name
	char program[kNameMax];		// e.g. "nccl-net-tb5"
	uint64_t reserved[4];
	ShmLink links[kMaxLinks];
};

// The directory the files live in.
std::string directory();

// Whether process @pid still runs (a file of one that is gone is stale).
bool process_alive(pid_t pid);

// The paths of the files in @dir whose names begin with @prefix: the
// publishers' (tb5live.), or another per-process file kept beside them.
std::vector<std::string> files_named(const std::string &dir, const std::string &prefix);

// One process's file, created on first use. Not copyable.
class Publisher {
public:
	explicit Publisher(const char *program);
	~Publisher();
	Publisher(const Publisher &) = delete;
	Publisher &operator=(const Publisher &) = delete;

	// False when the file could not be made (counters are then dropped).
	bool ok() const { return file_ != nullptr; }
	// The record of @link, added on first use; nullptr when full or !ok().
	ShmLink *link(const char *link);
	const std::string &path() const { return path_; }

	static void add(uint64_t *counter, uint64_t n);

private:
	ShmFile *file_ = nullptr;
	std::string path_;
};

// One link's totals over the live publishers.
struct LinkCounters {
	std::string link;
	uint64_t tx_bytes = 0;
	uint64_t rx_bytes = 0;
	uint64_t tx_ops = 0;
	uint64_t rx_ops = 0;
	uint64_t errors = 0;
	uint32_t processes = 0;		// publishers that have this link
};

struct Snapshot {
	std::vector<LinkCounters> links;	// sorted by name
	uint32_t publishers = 0;		// live files read
	uint32_t stale = 0;			// files of processes that are gone
	uint32_t invalid = 0;			// files that are not ours, or damaged
};

// Read every publisher in directory() (or @dir when not empty).
Snapshot read_snapshot(const std::string &dir = "");

// Shorthand for the exporter and tools: the per-link totals.
inline std::vector<LinkCounters> read_all() { return read_snapshot().links; }

} // namespace tb5::live

#endif // TB5_COMMON_LIVE_COUNTERS_HPP
