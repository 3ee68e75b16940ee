// SPDX-License-Identifier: MIT
//
// gpu_region.cc - registering GPU memory on the simulator, exporting it to
// the other hosts and opening theirs.
#include "sim/gpu_region.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "error.hpp"
#include "tb5/tb5.h"
#include "util/unique_fd.hpp"

namespace tb5::sim {

GpuMem::~GpuMem()
{
	leave();
}

std::string GpuMem::table_path(uint64_t session) const
{
	char buf[256];

	snprintf(buf, sizeof(buf), "/tb5sim.%s.gpu.%" PRIx64, fabric_.c_str(),
		 session);
	return buf;
}

void GpuMem::init(DmaKind kind, const std::string &fabric, uint64_t session)
{
	fabric_ = fabric;
	session_ = session;
	engine_ = make_dma_engine(kind, why_);
	if (!engine_)
		return;
	const std::string path = table_path(session);
	UniqueFd fd(shm_open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
	void *p;

	// Without a table nothing is exported: every GPU frame then goes
	// through host memory (two DMAs), which still works.
	if (!fd || ftruncate(fd.get(), off_t(sizeof(Table))))
		return;
	p = mmap(nullptr, sizeof(Table), PROT_READ | PROT_WRITE, MAP_SHARED,
		 fd.get(), 0);
	if (p == MAP_FAILED) {
		shm_unlink(path.c_str());
		return;
	}
	own_map_ = Mapping(p, sizeof(Table));
	own_ = static_cast<Table *>(p);
}

void GpuMem::leave()
{
	std::lock_guard lk(mu_);

	for (auto &[session, peer] : peers_)
		for (Import &im : peer.imports)
			close_locked(im);
	peers_.clear();
	if (own_) {
		for (auto &[base, ex] : exports_)
			engine_->unexport(own_->e[ex.index].handle);
		exports_.clear();
		shm_unlink(table_path(session_).c_str());
		own_ = nullptr;
		own_map_.reset();
	}
}

int GpuMem::reg(void *addr, uint64_t len, int fd, uint64_t offset, GpuRegion &out)
{
	std::string target;
	DevSpan span;
	off_t size;
	int ret;

	if (!engine_)
		return fail(-EOPNOTSUPP, "the simulator has no DMA engine to carry "
			    "GPU memory: %s", why_.c_str());
	ret = engine_->find(addr, len, span);
	if (ret)
		return ret;
	if (fd >= 0) {
		ret = fd_target(fd, target);
		if (ret)
			return fail(ret, "dma-buf fd %d: %s", fd, strerror(-ret));
		if (!engine_->dmabuf_target(target))
			return fail(-EINVAL, "fd %d is not a dma-buf (it is %s)", fd,
				    target.c_str());
		size = lseek(fd, 0, SEEK_END);
		if (size < 0)
			return fail(-errno, "dma-buf fd %d: its size: %s", fd,
				    strerror(errno));
		if (offset > uint64_t(size) || len > uint64_t(size) - offset)
			return fail(-EINVAL, "offset %" PRIu64 " + %" PRIu64 " bytes run "
				    "past the end of dma-buf fd %d (%lld bytes)",
				    offset, len, fd, (long long)size);
		ret = engine_->check_dmabuf_maps(fd, offset, addr, span);
		if (ret)
			return ret;
	}
	out = {};
	out.addr = static_cast<uint8_t *>(addr);
	out.len = len;
	out.span = span;
	std::lock_guard lk(mu_);
	// Not exported (no table, a full one, an allocation the engine
	// cannot export): its frames go through host memory, and stderr
	// says why.
	ret = export_locked(out);
	if (ret) {
		char what[128];

		snprintf(what, sizeof(what), "GPU memory at %p is not exported, its "
			 "frames go through host memory (two DMAs): ", addr);
		note_locked(what + (ret == -ENOSPC ? std::string("no export table, or no "
								  "room in it") :
						      std::string(tb5_last_error())));
		clear_error();
	}
	return 0;
}

void GpuMem::note_locked(const std::string &what)
{
	static constexpr size_t kMaxNotes = 8;

	if (notes_ >= kMaxNotes)
		return;
	fprintf(stderr, "tb5-sim[%d]: %s%s\n", int(getpid()), what.c_str(),
		++notes_ == kMaxNotes ? " (further notes not shown)" : "");
}

int GpuMem::export_locked(GpuRegion &r)
{
	auto it = exports_.find(r.span.base);

	if (it != exports_.end()) {
		it->second.users++;
		r.index = it->second.index;
		r.gen = own_->e[r.index].gen.load(std::memory_order_relaxed);
		return 0;
	}
	if (!own_)
		return -ENOSPC;
	for (uint32_t i = 0; i < kMaxExports; i++) {
		Entry &e = own_->e[i];

		if (e.gen.load(std::memory_order_relaxed))
			continue;
		int ret = engine_->export_span(r.span, e.handle);

		if (ret)
			return ret;
		e.pid = int32_t(getpid());
		e.base = uint64_t(uintptr_t(r.span.base));
		e.len = r.span.len;
		r.index = int32_t(i);
		r.gen = next_gen_++;
		e.gen.store(r.gen, std::memory_order_release);
		exports_[r.span.base] = { r.index, 1 };
		return 0;
	}
	return -ENOSPC;
}

void GpuMem::dereg(GpuRegion &r)
{
	std::lock_guard lk(mu_);
	auto it = exports_.find(r.span.base);

	if (r.index < 0 || it == exports_.end() || --it->second.users) {
		r.index = -1;
		return;
	}
	Entry &e = own_->e[r.index];

	e.gen.store(0, std::memory_order_release);
	engine_->unexport(e.handle);
	// Importers close it on their next pass.
	own_->epoch.fetch_add(1, std::memory_order_release);
	exports_.erase(it);
	r.index = -1;
}

GpuMem::Peer *GpuMem::peer_locked(uint64_t session)
{
	auto it = peers_.find(session);

	if (it != peers_.end())
		return &it->second;
	Peer p;

	if (session == session_) {
		p.table = own_;		// a loop pair: our own exports
	} else {
		UniqueFd fd(shm_open(table_path(session).c_str(), O_RDONLY | O_CLOEXEC, 0));
		void *m;

		if (!fd)
			return nullptr;
		m = mmap(nullptr, sizeof(Table), PROT_READ, MAP_SHARED, fd.get(), 0);
		if (m == MAP_FAILED)
			return nullptr;
		p.map = Mapping(m, sizeof(Table));
		p.table = static_cast<Table *>(m);
	}
	if (!p.table)
		return nullptr;
	p.epoch = p.table->epoch.load(std::memory_order_acquire);
	p.imports.resize(kMaxExports);
	return &peers_.emplace(session, std::move(p)).first->second;
}

void GpuMem::close_locked(Import &im)
{
	if (im.mapped)
		engine_->close_import(im.base, im.len);
	im = {};
}

bool GpuMem::open_locked(Peer &p, uint32_t index, uint64_t gen)
{
	Import &im = p.imports[index];
	const Entry &e = p.table->e[index];
	Import fresh;

	if (im.gen == gen)
		return true;
	close_locked(im);
	if (e.gen.load(std::memory_order_acquire) != gen)
		return false;
	fresh.len = e.len;
	if (e.pid == getpid()) {
		fresh.base = reinterpret_cast<uint8_t *>(uintptr_t(e.base));
	} else {
		IpcHandle h = e.handle;

		// Read while the entry was this generation.
		std::atomic_thread_fence(std::memory_order_acquire);
		if (e.gen.load(std::memory_order_relaxed) != gen)
			return false;
		if (engine_->import_span(h, fresh.len, &fresh.base)) {
			note_locked("a peer's GPU memory could not be opened, its "
				    "frames are lost: " +
				    std::string(tb5_last_error()));
			return false;
		}
		fresh.mapped = true;
		// Withdrawn while we opened it: its fd may have been
		// another's by then.
		if (e.gen.load(std::memory_order_acquire) != gen) {
			close_locked(fresh);
			return false;
		}
	}
	fresh.gen = gen;
	im = fresh;
	return true;
}

uint8_t *GpuMem::resolve(uint64_t peer, const GpuRef &ref, uint32_t len)
{
	std::lock_guard lk(mu_);
	Peer *p = peer_locked(peer);

	if (!p || ref.index >= kMaxExports || !ref.gen ||
	    !open_locked(*p, ref.index, ref.gen))
		return nullptr;
	const Import &im = p->imports[ref.index];

	if (ref.offset > im.len || len > im.len - ref.offset)
		return nullptr;
	return im.base + ref.offset;
}

void GpuMem::open_exports(uint64_t peer)
{
	std::lock_guard lk(mu_);
	Peer *p = peer_locked(peer);

	if (!p)
		return;
	for (uint32_t i = 0; i < kMaxExports; i++) {
		const uint64_t gen = p->table->e[i].gen.load(std::memory_order_acquire);

		if (gen)
			open_locked(*p, i, gen);
	}
}

void GpuMem::sweep(uint64_t peer)
{
	std::lock_guard lk(mu_);
	auto it = peers_.find(peer);

	if (it == peers_.end())
		return;
	Peer &p = it->second;
	uint32_t epoch = p.table->epoch.load(std::memory_order_acquire);

	if (epoch == p.epoch)
		return;
	p.epoch = epoch;
	for (uint32_t i = 0; i < kMaxExports; i++)
		if (p.imports[i].gen &&
		    p.table->e[i].gen.load(std::memory_order_acquire) != p.imports[i].gen)
			close_locked(p.imports[i]);
}

bool GpuMem::has_engine(uint64_t peer) const
{
	UniqueFd fd(shm_open(table_path(peer).c_str(), O_RDONLY | O_CLOEXEC, 0));

	return bool(fd);
}

void GpuMem::forget(uint64_t peer)
{
	std::lock_guard lk(mu_);
	auto it = peers_.find(peer);

	// A host killed before it could remove its table.
	shm_unlink(table_path(peer).c_str());
	if (it == peers_.end())
		return;
	for (Import &im : it->second.imports)
		close_locked(im);
	peers_.erase(it);
}

} // namespace tb5::sim
