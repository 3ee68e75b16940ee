// SPDX-License-Identifier: MIT
//
// live_counters.cc - see live_counters.hpp.
#include "live_counters.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <map>

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tb5::live {

namespace {

constexpr char kPrefix[] = "tb5live.";

uint64_t load(const uint64_t &v)
{
	return std::atomic_ref<const uint64_t>(v).load(std::memory_order_relaxed);
}

} // namespace

std::string directory()
{
	const char *dir = std::getenv("TB5_LIVE_DIR");
	return dir && *dir ? dir : "/dev/shm";
}

bool process_alive(pid_t pid)
{
	if (pid <= 0)
		return false;
	return kill(pid, 0) == 0 || errno == EPERM;
}

std::vector<std::string> files_named(const std::string &dir, const std::string &prefix)
{
	std::vector<std::string> out;
	DIR *d = opendir(dir.c_str());
	if (!d)
		return out;
	while (struct dirent *e = readdir(d))
		if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0)
			out.push_back(dir + "/" + e->d_name);
	closedir(d);
	return out;
}

Publisher::Publisher(const char *program)
{
	const std::string dir = directory();
	// <pid>.<n>: two publishers in one process (NCCL and RCCL) get two files.
	for (int n = 0; n < 64 && !file_; n++) {
		std::string path = dir + "/" + kPrefix + std::to_string(getpid()) + "." +
				   std::to_string(n);
		int fd = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0 && errno == EEXIST) {
			// Ours from before a fork, or a dead process's: take it only
			// if its owner is gone.
			struct stat st;
			int old = open(path.c_str(), O_RDONLY | O_CLOEXEC);
			bool stale = false;
			if (old >= 0) {
				ShmFile head{};
				if (fstat(old, &st) == 0 &&
				    pread(old, &head, offsetof(ShmFile, program), 0) ==
					    (ssize_t)offsetof(ShmFile, program))
					stale = head.pid != (uint32_t)getpid() &&
						!process_alive((pid_t)head.pid);
				close(old);
			}
			if (!stale)
				continue;
			unlink(path.c_str());
			fd = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		}
		if (fd < 0)
			continue;
		if (ftruncate(fd, sizeof(ShmFile)) != 0) {
			close(fd);
			unlink(path.c_str());
			continue;
		}
		void *map = mmap(nullptr, sizeof(ShmFile), PROT_READ | PROT_WRITE,
				 MAP_SHARED, fd, 0);
		close(fd);
		if (map == MAP_FAILED) {
			unlink(path.c_str());
			continue;
		}
		file_ = static_cast<ShmFile *>(map);
		file_->pid = (uint32_t)getpid();
		file_->version = kVersion;
		std::strncpy(file_->program, program, kNameMax - 1);
		std::atomic_ref<uint32_t>(file_->magic).store(kMagic, std::memory_order_release);
		path_ = std::move(path);
	}
}

Publisher::~Publisher()
{
	if (!file_)
		return;
	munmap(file_, sizeof(ShmFile));
	unlink(path_.c_str());
}

ShmLink *Publisher::link(const char *link)
{
	if (!file_)
		return nullptr;
	std::atomic_ref<uint32_t> nlinks(file_->nlinks);
	uint32_t n = nlinks.load(std::memory_order_acquire);
	for (uint32_t i = 0; i < n; i++)
		if (std::strncmp(file_->links[i].link, link, kNameMax) == 0)
			return &file_->links[i];
	if (n == kMaxLinks)
		return nullptr;
	ShmLink *rec = &file_->links[n];
	std::memset(rec, 0, sizeof(*rec));
	std::strncpy(rec->link, link, kNameMax - 1);
	nlinks.store(n + 1, std::memory_order_release);
	return rec;
}

void Publisher::add(uint64_t *counter, uint64_t n)
{
	std::atomic_ref<uint64_t>(*counter).fetch_add(n, std::memory_order_relaxed);
}

Snapshot read_snapshot(const std::string &dir_arg)
{
	const std::string dir = dir_arg.empty() ? directory() : dir_arg;
	Snapshot snap;
	std::map<std::string, LinkCounters> totals;

	for (const std::string &path : files_named(dir, kPrefix)) {
		int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			continue;
		struct stat st;
		void *map = MAP_FAILED;
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
		    (size_t)st.st_size >= sizeof(ShmFile))
			map = mmap(nullptr, sizeof(ShmFile), PROT_READ, MAP_SHARED, fd, 0);
		close(fd);
		if (map == MAP_FAILED) {
			snap.invalid++;
			continue;
		}
		const auto *f = static_cast<const ShmFile *>(map);
		uint32_t magic = std::atomic_ref<const uint32_t>(f->magic)
					 .load(std::memory_order_acquire);
		uint32_t n = std::atomic_ref<const uint32_t>(f->nlinks)
				     .load(std::memory_order_acquire);
		if (magic != kMagic || f->version != kVersion || n > kMaxLinks) {
			snap.invalid++;
		} else if (!process_alive((pid_t)f->pid)) {
			snap.stale++;
		} else {
			snap.publishers++;
			for (uint32_t i = 0; i < n; i++) {
				const ShmLink &l = f->links[i];
				std::string name(l.link, strnlen(l.link, kNameMax));
				LinkCounters &t = totals[name];
				t.link = name;
				t.tx_bytes += load(l.tx_bytes);
				t.rx_bytes += load(l.rx_bytes);
				t.tx_ops += load(l.tx_ops);
				t.rx_ops += load(l.rx_ops);
				t.errors += load(l.errors);
				t.processes++;
			}
		}
		munmap(map, sizeof(ShmFile));
	}
	for (auto &[name, t] : totals)
		snap.links.push_back(t);
	return snap;
}

} // namespace tb5::live
