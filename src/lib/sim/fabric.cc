// SPDX-License-Identifier: MIT
//
// fabric.cc - joining and leaving the simulated cluster; cable files;
// doorbells.
#include "sim/fabric.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstring>

#include "error.hpp"
#include "sim/frame_ring.hpp"
#include "tb5/tb5.h"
#include "tb5_wire.h"
#include "util/unique_fd.hpp"

namespace tb5::sim {
namespace {

// Processes whose frames are another wire version are refused at join, by
// the fabric's version (a version mismatch), before any frame: they must
// not meet the core as malformed frames, which read as an attack. So a new
// TB5_WIRE_VERSION comes with a new kFabricVersion.
static_assert(TB5_WIRE_VERSION == 1 && kFabricVersion == 4,
	      "a new TB5_WIRE_VERSION needs a new kFabricVersion");

constexpr const char *kShmDir = "/dev/shm";

uint64_t random_session()
{
	uint64_t v = 0;

	while (!v) {
		if (getrandom(&v, sizeof(v), 0) != sizeof(v))
			v = uint64_t(getpid()) << 32 ^ uint64_t(time(nullptr));
	}
	return v;
}

long futex(std::atomic<uint32_t> *word, int op, uint32_t val,
	   const struct timespec *ts)
{
	// Shared between processes: no FUTEX_PRIVATE_FLAG.
	return syscall(SYS_futex, reinterpret_cast<uint32_t *>(word), op, val,
		       ts, nullptr, 0);
}

void sleep_ms(int ms)
{
	struct timespec ts = { 0, long(ms) * 1000000L };

	nanosleep(&ts, nullptr);
}

// Parses "tb5sim.<fabric>.<i>.<j>.<c>.<si>.<sj>" for our fabric.
bool parse_cable(const std::string &prefix, const char *name, uint32_t &i,
		 uint32_t &j, uint64_t &si, uint64_t &sj)
{
	uint32_t c;

	if (strncmp(name, prefix.c_str(), prefix.size()))
		return false;
	return sscanf(name + prefix.size(), "%" SCNu32 ".%" SCNu32 ".%" SCNu32
		      ".%" SCNx64 ".%" SCNx64, &i, &j, &c, &si, &sj) == 5;
}

// Is @rows (kMaxHosts rows of bits) a symmetric set of pairs of two
// different slots below @hosts? (Built as a transpose and a compare: a plain
// double loop of bit tests refused valid fabrics when gcc 12 built it at -O2
// and not at -O0; the cause, ours or the compiler's, is not found yet.)
bool valid_uncabled(const uint16_t *rows, uint32_t hosts)
{
	uint16_t t[kMaxHosts] = {};

	for (uint32_t a = 0; a < kMaxHosts; a++)
		for (uint32_t b = 0; b < kMaxHosts; b++)
			if ((rows[a] >> b) & 1u)
				t[b] = uint16_t(t[b] | (1u << a));
	if (memcmp(t, rows, sizeof(t)))
		return false;
	for (uint32_t a = 0; a < kMaxHosts; a++)
		if (((rows[a] >> a) & 1u) || (rows[a] && a >= hosts) ||
		    (uint32_t(rows[a]) >> hosts))
			return false;
	return true;
}

} // namespace

void ring_doorbell(HostSlot &slot)
{
	// Pairs with the fence in the sleeper: either it sees what we
	// published, or we see it sleeping.
	std::atomic_thread_fence(std::memory_order_seq_cst);
	if (slot.sleepers.load(std::memory_order_relaxed)) {
		slot.doorbell.fetch_add(1, std::memory_order_release);
		futex(&slot.doorbell, FUTEX_WAKE, INT32_MAX, nullptr);
	}
}

void sleep_on_doorbell(HostSlot &slot, uint32_t seen, int timeout_ms)
{
	struct timespec ts = { timeout_ms / 1000, long(timeout_ms % 1000) * 1000000L };

	futex(&slot.doorbell, FUTEX_WAIT, seen, &ts);
}

int Fabric::join(const Config &cfg)
{
	for (int attempt = 0;; attempt++) {
		int ret = join_once(cfg);

		if (ret || !unlinked() || attempt == 3)
			return ret;
		// The last host left and removed the file as we joined it.
		leave();
		map_.reset();
		fd_.reset();
		hdr_ = nullptr;
	}
}

// Returns @err, having let go of a file that is no fabric of this version:
// leave() then neither writes into it nor removes it (the processes of its
// own version use it).
int Fabric::forget(int err)
{
	hdr_ = nullptr;
	map_.reset();
	fd_.reset();
	return err;
}

bool Fabric::unlinked() const
{
	struct stat st = {};

	return fstat(fd_.get(), &st) == 0 && st.st_nlink == 0;
}

int Fabric::join_once(const Config &cfg)
{
	const std::string shm_name = "/tb5sim." + cfg.fabric;
	bool created = false;

	name_ = cfg.fabric;
	UniqueFd fd(shm_open(shm_name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC,
			     0600));
	if (fd) {
		created = true;
		if (ftruncate(fd.get(), sizeof(FabricHeader)))
			return fail(-errno, "simulator: cannot size %s%s: %s",
				    kShmDir, shm_name.c_str(), strerror(errno));
	} else if (errno == EEXIST) {
		fd.reset(shm_open(shm_name.c_str(), O_RDWR | O_CLOEXEC, 0600));
		if (!fd)
			return fail(-errno, "simulator: cannot open %s%s: %s",
				    kShmDir, shm_name.c_str(), strerror(errno));
		// The creator may not have sized it yet.
		struct stat st = {};
		for (int i = 0; i < 2000; i++) {
			if (fstat(fd.get(), &st) == 0 &&
			    size_t(st.st_size) >= sizeof(FabricHeader))
				break;
			sleep_ms(1);
		}
		if (size_t(st.st_size) < sizeof(FabricHeader))
			return fail(-EPROTO, "simulator: %s%s is not a tb5 "
				    "fabric (remove it if no process uses it)",
				    kShmDir, shm_name.c_str());
	} else {
		return fail(-errno, "simulator: cannot create %s%s: %s", kShmDir,
			    shm_name.c_str(), strerror(errno));
	}
	void *p = mmap(nullptr, sizeof(FabricHeader), PROT_READ | PROT_WRITE,
		       MAP_SHARED, fd.get(), 0);
	if (p == MAP_FAILED)
		return fail(-errno, "simulator: mmap of %s%s: %s", kShmDir,
			    shm_name.c_str(), strerror(errno));
	map_ = Mapping(p, sizeof(FabricHeader));
	hdr_ = static_cast<FabricHeader *>(p);
	fd_ = std::move(fd);
	if (created) {
		// uncabled= without hosts= may name slots the default lacks.
		for (uint32_t i = cfg.hosts; i < kMaxHosts; i++) {
			if (!cfg.uncabled[i])
				continue;
			shm_unlink(shm_name.c_str());
			return fail(-EINVAL, "simulator: TB5_SIM=%s:uncabled=%s "
				    "names slot %u, but the fabric has %u hosts "
				    "(hosts=N)", name_.c_str(),
				    describe_uncabled(cfg.uncabled).c_str(), i,
				    cfg.hosts);
		}
		hdr_->version = kFabricVersion;
		hdr_->hosts = cfg.hosts;
		hdr_->ring_size = cfg.ring_size;
		hdr_->cables = cfg.cables;
		memcpy(hdr_->uncabled, cfg.uncabled, sizeof(hdr_->uncabled));
		hdr_->magic.store(kFabricMagic, std::memory_order_release);
	} else {
		int i;

		for (i = 0; i < 2000 && hdr_->magic.load(std::memory_order_acquire) !=
					      kFabricMagic; i++)
			sleep_ms(1);
		if (hdr_->magic.load(std::memory_order_acquire) != kFabricMagic)
			return forget(fail(-EPROTO, "simulator: %s%s is not a tb5 "
					   "fabric (remove it if no process uses it)",
					   kShmDir, shm_name.c_str()));
		// A process of another libtb5 made it: a version mismatch,
		// not a protocol break.
		if (hdr_->version != kFabricVersion)
			return forget(fail(-EPROTONOSUPPORT, "simulator: fabric %s "
					   "(%s%s) was made by a libtb5 that speaks "
					   "fabric version %u, this libtb5 (%s) speaks "
					   "fabric version %u: run the fabric's processes "
					   "with libtb5 of one release, or give this one "
					   "a fabric of its own (TB5_SIM=<another name>)",
					   name_.c_str(), kShmDir, shm_name.c_str(),
					   hdr_->version, tb5_version(), kFabricVersion));
		if (hdr_->hosts < 1 || hdr_->hosts > kMaxHosts ||
		    hdr_->ring_size < TB5_RING_SIZE_MIN ||
		    hdr_->ring_size > TB5_RING_SIZE_MAX ||
		    (hdr_->ring_size & (hdr_->ring_size - 1)) ||
		    hdr_->cables < 1 || hdr_->cables > kMaxCables)
			return forget(fail(-EPROTO, "simulator: %s%s has bad settings",
					   kShmDir, shm_name.c_str()));
		if (!valid_uncabled(hdr_->uncabled, hdr_->hosts))
			return forget(fail(-EPROTO, "simulator: %s%s has bad settings",
					   kShmDir, shm_name.c_str()));
		if (cfg.hosts_given && cfg.hosts != hdr_->hosts)
			return fail(-EINVAL, "simulator: fabric %s has %u hosts; "
				    "TB5_SIM asks for %u", name_.c_str(),
				    hdr_->hosts, cfg.hosts);
		if (cfg.uncabled_given &&
		    memcmp(cfg.uncabled, hdr_->uncabled, sizeof(hdr_->uncabled)))
			return fail(-EINVAL, "simulator: fabric %s has uncabled=%s; "
				    "TB5_SIM asks for uncabled=%s", name_.c_str(),
				    describe_uncabled(hdr_->uncabled).c_str(),
				    describe_uncabled(cfg.uncabled).c_str());
		if (cfg.cables_given && cfg.cables != hdr_->cables)
			return fail(-EINVAL, "simulator: fabric %s has cables=%u; "
				    "TB5_SIM asks for cables=%u", name_.c_str(),
				    hdr_->cables, cfg.cables);
		if (cfg.ring_given && cfg.ring_size != hdr_->ring_size)
			return fail(-EINVAL, "simulator: fabric %s has ring=%u; "
				    "TB5_SIM asks for %u", name_.c_str(),
				    hdr_->ring_size, cfg.ring_size);
	}
	if (cfg.host >= 0 && uint32_t(cfg.host) >= hdr_->hosts)
		return fail(-EINVAL, "simulator: host=%d, but fabric %s has %u "
			    "hosts", cfg.host, name_.c_str(), hdr_->hosts);

	session_ = random_session();
	for (uint32_t i = 0; i < hdr_->hosts; i++) {
		if (cfg.host >= 0 && i != uint32_t(cfg.host))
			continue;
		uint64_t s = hdr_->slots[i].session.load(std::memory_order_acquire);

		if ((s == 0 || !peer_alive(i, s)) && claim(i, 0)) {
			slot_ = i;
			remove_stale_cables(i);
			return 0;
		}
	}
	if (cfg.host >= 0)
		return fail(-EBUSY, "simulator: host slot %d of fabric %s is taken "
			    "by process %d", cfg.host, name_.c_str(),
			    int(hdr_->slots[cfg.host].pid.load()));
	return fail(-EBUSY, "simulator: all %u host slots of fabric %s are taken "
		    "(TB5_SIM=%s:hosts=N makes a larger fabric under a new name)",
		    hdr_->hosts, name_.c_str(), name_.c_str());
}

bool Fabric::claim(uint32_t i, uint64_t expect)
{
	HostSlot &s = hdr_->slots[i];

	if (!s.session.compare_exchange_strong(expect, session_,
					       std::memory_order_acq_rel))
		return false;
	s.pid.store(int32_t(getpid()), std::memory_order_release);
	return true;
}

bool Fabric::peer_alive(uint32_t peer, uint64_t session)
{
	HostSlot &s = hdr_->slots[peer];
	int32_t pid = s.pid.load(std::memory_order_acquire);

	if (s.session.load(std::memory_order_acquire) != session)
		return false;
	if (pid <= 0 || kill(pid, 0) == 0 || errno == EPERM)
		return true;
	// Its owner died without leaving: free the slot for a new process.
	if (s.session.compare_exchange_strong(session, 0,
					      std::memory_order_acq_rel))
		s.pid.store(0, std::memory_order_release);
	return false;
}

std::string Fabric::cable_path(uint32_t peer, uint32_t cable,
			       uint64_t peer_session) const
{
	uint32_t i = slot_ < peer ? slot_ : peer, j = slot_ < peer ? peer : slot_;
	uint64_t si = slot_ < peer ? session_ : peer_session;
	uint64_t sj = slot_ < peer ? peer_session : session_;
	char buf[256];

	snprintf(buf, sizeof(buf), "/tb5sim.%s.%u.%u.%u.%" PRIx64 ".%" PRIx64,
		 name_.c_str(), i, j, cable, si, sj);
	return buf;
}

int Fabric::map_cable(uint32_t peer, uint32_t cable, uint64_t peer_session,
		      Mapping &out) const
{
	const std::string path = cable_path(peer, cable, peer_session);
	const size_t size = 2 * ring_bytes(hdr_->ring_size);
	UniqueFd fd(shm_open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
	struct stat st = {};

	if (!fd)
		return fail(-errno, "simulator: cannot open %s%s: %s", kShmDir,
			    path.c_str(), strerror(errno));
	// Both ends size it; the same size twice changes nothing.
	if (fstat(fd.get(), &st) || (size_t(st.st_size) != size &&
				     ftruncate(fd.get(), off_t(size))))
		return fail(-errno, "simulator: cannot size %s%s: %s", kShmDir,
			    path.c_str(), strerror(errno));
	void *p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED,
		       fd.get(), 0);
	if (p == MAP_FAILED)
		return fail(-errno, "simulator: mmap of %s%s: %s", kShmDir,
			    path.c_str(), strerror(errno));
	out = Mapping(p, size);
	return 0;
}

void Fabric::remove_stale_cables(uint32_t)
{
	const std::string prefix = "tb5sim." + name_ + ".";
	DIR *d = opendir(kShmDir);

	if (!d)
		return;
	while (struct dirent *e = readdir(d)) {
		uint32_t i, j;
		uint64_t si, sj;

		if (!parse_cable(prefix, e->d_name, i, j, si, sj))
			continue;
		if (i >= hdr_->hosts || j >= hdr_->hosts ||
		    hdr_->slots[i].session.load() != si ||
		    hdr_->slots[j].session.load() != sj)
			shm_unlink((std::string("/") + e->d_name).c_str());
	}
	closedir(d);
}

void Fabric::leave()
{
	if (!hdr_)
		return;
	HostSlot &s = hdr_->slots[slot_];
	uint64_t mine = session_;

	if (s.session.compare_exchange_strong(mine, 0, std::memory_order_acq_rel))
		s.pid.store(0, std::memory_order_release);
	// Wake whoever sleeps on this slot's cables: they will see us gone.
	for (uint32_t i = 0; i < hdr_->hosts; i++)
		if (i != slot_) {
			hdr_->slots[i].doorbell.fetch_add(1);
			futex(&hdr_->slots[i].doorbell, FUTEX_WAKE, INT32_MAX,
			      nullptr);
		}
	// Slots of processes that died (killed, or ended with _exit) are
	// freed too, so that the last host to leave finds the fabric empty.
	bool empty = true;

	for (uint32_t i = 0; i < hdr_->hosts; i++) {
		uint64_t si = hdr_->slots[i].session.load();

		if (si && i != slot_ && !peer_alive(i, si))
			si = 0;
		empty = empty && !si;
	}
	remove_stale_cables(slot_);
	if (empty)
		shm_unlink(("/tb5sim." + name_).c_str());
}

} // namespace tb5::sim
