// SPDX-License-Identifier: MIT
//
// test_kernel_backend.cc - the kernel backend without a kernel module: a
// fake /sys/class/tb5 and /dev (TB5_SYSFS_CLASS, TB5_DEV_DIR), and an
// ioctl() that answers TB5_IOC_GET_VERSION with another ABI version, or
// plays a whole module (FakeModule) over a plain file, whose pages serve
// as the completion queue. Allocations can be made to fail (operator new
// below) to see what the backend undoes. What needs the module itself
// runs in the VM (tests/kernel).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <new>
#include <string>
#include <vector>

#include "tb5/tb5.h"
#include "tb5_uapi.h"
// After tb5.h: the uAPI's structs first would hide its functions.
#include "fake_abi.h"

namespace {

// 0: pass every ioctl through; else the ABI version to claim.
std::atomic<uint32_t> fake_abi{ 0 };

// A module behind every tb5 ioctl while `on`: one link, READY between
// hosts kLocal and kPeer, whose endpoints are numbered from 1. The
// completion queue lives in the file the device was opened as.
struct FakeModule {
	static constexpr uint64_t kLocal = 0xabc0, kPeer = 0xabc1;

	bool on = false;
	uint32_t link_state = TB5_STATE_READY;
	uint32_t next_ep = 1;
	std::vector<uint32_t> made;	// endpoints made, in order
	std::vector<uint32_t> closed;	// TB5_IOC_EP_CLOSE'd, in order
	size_t cq_size = 0;		// the queue's mmap_size
	bool bad_layout = false;	// the queue's ring says one entry less
	// TB5_IOC_EP_QUERY's answer
	uint32_t ep_state = TB5_EP_STATE_CONNECTED;
	int32_t ep_error = 0;

	int ioctl(int fd, unsigned long req, void *arg);
	uint32_t make_ep()
	{
		made.push_back(next_ep);
		return next_ep++;
	}
};

FakeModule fake;

// Allocation faults: while > 0, counts operator new calls down, and the
// one that brings it to 0 throws std::bad_alloc. The fake module sets it
// from fault_at when it has made an endpoint, so that the fault_at-th
// allocation after that fails.
std::atomic<int> alloc_countdown{ 0 };
int fault_at = 0;

int FakeModule::ioctl(int fd, unsigned long req, void *arg)
{
	switch (req) {
	case TB5_IOC_GET_VERSION: {
		auto *v = static_cast<struct tb5_version *>(arg);

		*v = {};
		v->abi_version = TB5_ABI_VERSION;
		v->features = TB5_FEATURE_HOST_MEM | TB5_FEATURE_WELL_KNOWN |
			      TB5_FEATURE_STATS;
		return 0;
	}
	case TB5_IOC_GET_INFO: {
		auto *i = static_cast<struct tb5_info *>(arg);

		*i = {};
		i->local_host = kLocal;
		i->peer_host = kPeer;
		i->state = link_state;
		i->ring_size = 1024;
		i->max_frame = 4096;
		i->features = TB5_FEATURE_HOST_MEM;
		return 0;
	}
	case TB5_IOC_CQ_CREATE: {
		auto *c = static_cast<struct tb5_cq_create *>(arg);
		struct tb5_cq_ring ring = {};

		c->entries_offset = sizeof(ring);
		c->mmap_size = sizeof(ring) + size_t(c->entries) * sizeof(tb5_cqe);
		ring.entries = bad_layout ? c->entries - 1 : c->entries;
		if (ftruncate(fd, off_t(c->mmap_size)) ||
		    pwrite(fd, &ring, sizeof(ring), 0) != ssize_t(sizeof(ring)))
			return -1;
		cq_size = c->mmap_size;
		return 0;
	}
	case TB5_IOC_LISTEN:
		static_cast<struct tb5_listen *>(arg)->ep = make_ep();
		static_cast<struct tb5_listen *>(arg)->cookie = 0x5eed;
		break;
	case TB5_IOC_CONNECT:
		static_cast<struct tb5_connect *>(arg)->ep = make_ep();
		break;
	case TB5_IOC_ACCEPT:
		static_cast<struct tb5_accept *>(arg)->ep = make_ep();
		break;
	case TB5_IOC_EP_CLOSE:
		closed.push_back(static_cast<struct tb5_ep_close *>(arg)->ep);
		return 0;
	case TB5_IOC_EP_QUERY: {
		auto *q = static_cast<struct tb5_ep_query *>(arg);

		q->state = ep_state;
		q->error = ep_error;
		return 0;
	}
	default:
		errno = ENOTTY;
		return -1;
	}
	// An endpoint was made: from here on, allocations may fail.
	alloc_countdown = fault_at;
	return 0;
}

} // namespace

// libtb5 calls ioctl() through the PLT: this definition wins.
extern "C" int ioctl(int fd, unsigned long req, ...)
{
	va_list ap;

	va_start(ap, req);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	if (fake.on)
		return fake.ioctl(fd, req, arg);
	return tb5_fake_abi_ioctl(fd, req, arg, fake_abi.load());
}

// libtb5's allocations come here too (the program's operator new replaces
// the library's), so that a test can make one of them fail. Not inlined:
// the compiler would see malloc() beside delete and free() beside new.
[[gnu::noinline]] void *operator new(std::size_t n)
{
	if (alloc_countdown.load(std::memory_order_relaxed) > 0 &&
	    alloc_countdown.fetch_sub(1, std::memory_order_relaxed) == 1)
		throw std::bad_alloc();
	void *p = malloc(n ? n : 1);

	if (!p)
		throw std::bad_alloc();
	return p;
}

[[gnu::noinline]] void *operator new[](std::size_t n)
{
	return operator new(n);
}

[[gnu::noinline]] void operator delete(void *p) noexcept
{
	free(p);
}

[[gnu::noinline]] void operator delete[](void *p) noexcept
{
	free(p);
}

[[gnu::noinline]] void operator delete(void *p, std::size_t) noexcept
{
	free(p);
}

[[gnu::noinline]] void operator delete[](void *p, std::size_t) noexcept
{
	free(p);
}

namespace {

class KernelBackend : public ::testing::Test {
protected:
	void SetUp() override
	{
		char tmpl[] = "/tmp/tb5-kb-XXXXXX";

		ASSERT_TRUE(mkdtemp(tmpl));
		root = tmpl;
		mkdir((root + "/class").c_str(), 0755);
		mkdir((root + "/dev").c_str(), 0755);
		setenv("TB5_SYSFS_CLASS", (root + "/class").c_str(), 1);
		setenv("TB5_DEV_DIR", (root + "/dev").c_str(), 1);
		unsetenv("TB5_SIM");
	}
	void TearDown() override
	{
		fake_abi = 0;
		fake = FakeModule();
		alloc_countdown = 0;
		fault_at = 0;
		std::string cmd = "rm -rf '" + root + "'";
		EXPECT_EQ(system(cmd.c_str()), 0);
	}
	void attr(const std::string &link, const std::string &name,
		  const std::string &value)
	{
		mkdir((root + "/class/" + link).c_str(), 0755);
		std::ofstream(root + "/class/" + link + "/" + name) << value << "\n";
	}
	void link(const std::string &name, const std::string &state, bool loop)
	{
		attr(name, "state", state);
		attr(name, "host_id", "0xabc0");
		attr(name, "peer_id", state == "ready" ? "0xabc1" : "none");
		attr(name, "ring_size", "1024");
		attr(name, "speed_mbps", "80000");
		if (loop)
			attr(name, "plugged", "1");
	}
	std::string root;
};

TEST_F(KernelBackend, NoModuleMeansNoLinks)
{
	tb5_link_info *l = reinterpret_cast<tb5_link_info *>(1);
	size_t n = 7;

	setenv("TB5_SYSFS_CLASS", (root + "/absent").c_str(), 1);
	ASSERT_EQ(tb5_list_links(&l, &n), 0);
	EXPECT_EQ(n, 0u);
	EXPECT_EQ(l, nullptr);
}

TEST_F(KernelBackend, ListsLinksFromSysfsInOrder)
{
	link("tb5_10", "down", false);
	link("tb5_2", "ready", true);
	link("tb5_0", "up", false);
	mkdir((root + "/class/not_a_link").c_str(), 0755);
	mkdir((root + "/class/tb5_01").c_str(), 0755);
	tb5_link_info *l = nullptr;
	size_t n = 0;

	ASSERT_EQ(tb5_list_links(&l, &n), 0);
	ASSERT_EQ(n, 3u);
	EXPECT_STREQ(l[0].name, "tb5_0");
	EXPECT_STREQ(l[1].name, "tb5_2");
	EXPECT_STREQ(l[2].name, "tb5_10");
	EXPECT_EQ(l[0].state, uint32_t(TB5_LINK_STATE_UP));
	EXPECT_EQ(l[0].peer_host, 0u) << "no peer until READY";
	EXPECT_EQ(l[1].state, uint32_t(TB5_LINK_STATE_READY));
	EXPECT_EQ(l[1].local_host, 0xabc0u);
	EXPECT_EQ(l[1].peer_host, 0xabc1u);
	EXPECT_EQ(l[1].ring_size, 1024u);
	EXPECT_EQ(l[1].speed_mbps, 80000u);
	EXPECT_EQ(l[1].index, 2u);
	EXPECT_EQ(l[1].backend, uint32_t(TB5_BACKEND_KERNEL));
	EXPECT_TRUE(l[1].caps & TB5_CAP_LOOP);
	EXPECT_FALSE(l[0].caps & TB5_CAP_LOOP);
	EXPECT_TRUE(l[0].caps & TB5_CAP_DMABUF);
	tb5_free_link_list(l);
}

TEST_F(KernelBackend, OpenExplainsAMissingNode)
{
	tb5_device *d = nullptr;

	EXPECT_EQ(tb5_open("tb5_0", &d), -ENODEV);
	EXPECT_NE(strstr(tb5_last_error(), "modprobe tb5"), nullptr) << tb5_last_error();
	EXPECT_EQ(tb5_open("../etc/passwd", &d), -ENODEV);
	EXPECT_EQ(tb5_open("tb5_x", &d), -ENODEV);
	EXPECT_EQ(d, nullptr);
}

TEST_F(KernelBackend, AFileThatIsNotTheDeviceIsRefused)
{
	tb5_device *d = nullptr;

	std::ofstream(root + "/dev/tb5_0") << "x";
	EXPECT_EQ(tb5_open("tb5_0", &d), -ENOTTY);
	EXPECT_NE(strstr(tb5_last_error(), "not a tb5 device"), nullptr)
		<< tb5_last_error();
}

// A module of another ABI version is a version mismatch, with an errno
// of its own (-EPROTONOSUPPORT), never -EPROTO (a peer that broke the
// protocol): the message names both versions and what to do.
TEST_F(KernelBackend, AnotherAbiVersionIsAClearError)
{
	tb5_device *d = nullptr;

	std::ofstream(root + "/dev/tb5_0") << "x";
	fake_abi = TB5_ABI_VERSION + 1;
	EXPECT_EQ(tb5_open("tb5_0", &d), -EPROTONOSUPPORT);
	EXPECT_EQ(d, nullptr);
	const std::string msg = tb5_last_error();
	EXPECT_NE(msg.find("the tb5 module (9.0.0) speaks ABI version " +
			   std::to_string(TB5_ABI_VERSION + 1)),
		  std::string::npos) << msg;
	EXPECT_NE(msg.find("this libtb5 (" TB5_TEST_VERSION ") speaks ABI version " +
			   std::to_string(TB5_ABI_VERSION)),
		  std::string::npos) << msg;
	EXPECT_NE(msg.find("install tb5-dkms and libtb5 of the same release, then "
			   "reload the module"), std::string::npos) << msg;
	// The code's own words say version, not attack; -EPROTO's string is
	// about a peer that broke the protocol, not about versions.
	const std::string what = tb5_strerror(-EPROTONOSUPPORT);
	EXPECT_NE(what.find("version mismatch"), std::string::npos) << what;
	EXPECT_EQ(what.find("protocol"), std::string::npos) << what;
	EXPECT_EQ(std::string(tb5_strerror(-EPROTO)).find("ABI"), std::string::npos);
	EXPECT_EQ(std::string(tb5_strerror(-EPROTO)).find("version"), std::string::npos);
}

// A module that says this ABI version but lays its completion queue out
// otherwise speaks another ABI all the same: the same mismatch.
TEST_F(KernelBackend, AQueueLayoutOfAnotherAbiIsAVersionMismatch)
{
	tb5_device *d = nullptr;

	std::ofstream(root + "/dev/tb5_0") << "x";
	fake.on = true;
	fake.bad_layout = true;
	EXPECT_EQ(tb5_open("tb5_0", &d), -EPROTONOSUPPORT);
	EXPECT_EQ(d, nullptr);
	const std::string msg = tb5_last_error();
	EXPECT_NE(msg.find("its completion queue layout is not what ABI version " +
			   std::to_string(TB5_ABI_VERSION)),
		  std::string::npos) << msg;
	EXPECT_NE(msg.find("install tb5-dkms and libtb5 of the same release"),
		  std::string::npos) << msg;
}

TEST_F(KernelBackend, PermissionProblemsSayWhatToDo)
{
	if (geteuid() == 0)
		GTEST_SKIP() << "root opens anything";
	tb5_device *d = nullptr;

	std::ofstream(root + "/dev/tb5_0") << "x";
	chmod((root + "/dev/tb5_0").c_str(), 0);
	EXPECT_EQ(tb5_open("tb5_0", &d), -EACCES);
	EXPECT_NE(strstr(tb5_last_error(), "group"), nullptr) << tb5_last_error();
}

// The kernel backend over FakeModule: a device opened, its completion
// queue mapped here too, so that the test can produce entries as the
// module would.
class OverFakeModule : public KernelBackend {
protected:
	void SetUp() override
	{
		KernelBackend::SetUp();
		if (HasFatalFailure())
			return;
		const std::string path = root + "/dev/tb5_0";

		std::ofstream(path) << "x";
		fake.on = true;
		ASSERT_EQ(tb5_open("tb5_0", &dev), 0) << tb5_last_error();
		int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);

		ASSERT_GE(fd, 0);
		void *p = mmap(nullptr, fake.cq_size, PROT_READ | PROT_WRITE,
			       MAP_SHARED, fd, 0);
		::close(fd);
		ASSERT_NE(p, MAP_FAILED);
		ring = static_cast<tb5_cq_ring *>(p);
	}
	void TearDown() override
	{
		if (dev)
			tb5_close(dev);
		if (ring)
			munmap(ring, fake.cq_size);
		KernelBackend::TearDown();
	}
	// Queues a TB5_EVENT_CONNECTED for endpoint @handle, as the module
	// would.
	void produce_event(uint32_t handle)
	{
		auto *entries = reinterpret_cast<tb5_cqe *>(ring + 1);
		uint32_t tail = __atomic_load_n(&ring->tail, __ATOMIC_RELAXED);
		tb5_cqe &e = entries[tail & (ring->entries - 1)];

		e = {};
		e.op = TB5_CQE_EVENT;
		e.event = TB5_EVENT_CONNECTED;
		e.ep = handle;
		__atomic_store_n(&ring->tail, tail + 1, __ATOMIC_RELEASE);
	}
	// Makes an endpoint with @make again and again, the first, second,
	// third... allocation after the module made it failing, until a call
	// allocates less and succeeds. A call that fails must leave nothing:
	// the module's endpoint closed, and no endpoint of libtb5 that its
	// events would still reach.
	void each_allocation_fails(const char *what,
				   const std::function<int(tb5_endpoint **)> &make)
	{
		int failed = 0;

		for (int k = 1; k <= 32; k++) {
			tb5_endpoint *ep = nullptr;
			const size_t made = fake.made.size();
			const size_t closed = fake.closed.size();
			tb5_wc wc;

			fault_at = k;
			int ret = make(&ep);
			const bool fired = alloc_countdown.exchange(0) == 0;

			fault_at = 0;
			ASSERT_EQ(fake.made.size(), made + 1) << what;
			const uint32_t handle = fake.made.back();

			produce_event(handle);
			if (!fired) {
				ASSERT_EQ(ret, 0) << what << ": " << tb5_last_error();
				EXPECT_EQ(fake.closed.size(), closed) << what;
				ASSERT_EQ(tb5_poll(dev, &wc, 1), 1) << what;
				EXPECT_EQ(wc.ep, ep) << what;
				EXPECT_GT(failed, 0) << what << ": no allocation "
						     "after the module's ioctl?";
				EXPECT_EQ(tb5_endpoint_close(ep), 0);
				return;
			}
			failed++;
			EXPECT_EQ(ret, -ENOMEM) << what << ", allocation " << k;
			EXPECT_EQ(ep, nullptr) << what << ", allocation " << k;
			EXPECT_EQ(fake.closed.size(), closed + 1)
				<< what << ", allocation " << k
				<< ": the module's endpoint was not closed";
			if (fake.closed.size() > closed) {
				EXPECT_EQ(fake.closed.back(), handle) << what;
			}
			EXPECT_EQ(tb5_poll(dev, &wc, 1), 0)
				<< what << ", allocation " << k
				<< ": an event reached an endpoint that was never made";
		}
		ADD_FAILURE() << what << " never succeeded";
	}

	tb5_device *dev = nullptr;
	tb5_cq_ring *ring = nullptr;
};

TEST_F(OverFakeModule, AnEndpointLibtb5CannotKeepIsClosedInTheModule)
{
	tb5_address addr = { FakeModule::kPeer, 0x5e, 0x5eed };
	tb5_endpoint *l = nullptr;

	each_allocation_fails("listen", [&](tb5_endpoint **ep) {
		return tb5_endpoint_listen(dev, 0x5e, 0, 0, ep);
	});
	each_allocation_fails("connect", [&](tb5_endpoint **ep) {
		return tb5_endpoint_connect(dev, &addr, 0, ep);
	});
	ASSERT_EQ(tb5_endpoint_listen(dev, 0x5e, 0, 0, &l), 0) << tb5_last_error();
	each_allocation_fails("accept", [&](tb5_endpoint **ep) {
		return tb5_endpoint_accept(l, 0, ep);
	});
	EXPECT_EQ(tb5_endpoint_close(l), 0);
}

TEST_F(OverFakeModule, ConnectChecksTheLinkFirst)
{
	tb5_address addr = { FakeModule::kPeer + 1, 0x5e, 0x5eed };
	tb5_endpoint *ep = nullptr;

	EXPECT_EQ(tb5_endpoint_connect(dev, &addr, 0, &ep), -EHOSTUNREACH);
	EXPECT_NE(strstr(tb5_last_error(), "leads to host 0xabc1"), nullptr)
		<< tb5_last_error();
	fake.link_state = TB5_STATE_UP;
	addr.host = FakeModule::kPeer;
	EXPECT_EQ(tb5_endpoint_connect(dev, &addr, 0, &ep), -ENOTCONN);
	EXPECT_NE(strstr(tb5_last_error(), "not ready"), nullptr)
		<< tb5_last_error();
	EXPECT_TRUE(fake.made.empty()) << "the module was asked all the same";
	// Host 0: whatever the peer is, the module decides.
	addr.host = 0;
	ASSERT_EQ(tb5_endpoint_connect(dev, &addr, 0, &ep), 0) << tb5_last_error();
	EXPECT_EQ(fake.made.size(), 1u);
	EXPECT_EQ(tb5_endpoint_close(ep), 0);
}

TEST_F(OverFakeModule, AFailedEndpointSaysWhy)
{
	tb5_address addr = { FakeModule::kPeer, 0x5e, 0x5eed };
	tb5_endpoint *ep = nullptr;
	int error = 1;

	ASSERT_EQ(tb5_endpoint_connect(dev, &addr, 0, &ep), 0) << tb5_last_error();
	EXPECT_EQ(tb5_endpoint_state(ep, &error), TB5_ENDPOINT_CONNECTED);
	EXPECT_EQ(error, 0);
	fake.ep_state = TB5_EP_STATE_ERROR;
	fake.ep_error = -ECONNREFUSED;
	EXPECT_EQ(tb5_endpoint_state(ep, &error), TB5_ENDPOINT_FAILED);
	EXPECT_EQ(error, -ECONNREFUSED);
	// Failed without an error event: -ENOTCONN, on both backends.
	fake.ep_error = 0;
	EXPECT_EQ(tb5_endpoint_state(ep, &error), TB5_ENDPOINT_FAILED);
	EXPECT_EQ(error, -ENOTCONN);
	EXPECT_EQ(tb5_endpoint_close(ep), 0);
}

// tb5_reg_gpu() on the kernel backend is the module's dma-buf import with
// NCCL's (fd, offset, size); a device address alone is refused, saying so.
TEST_F(OverFakeModule, GpuMemoryGoesThroughItsDmabuf)
{
	static uint8_t gpu[8192];
	tb5_mr *mr = nullptr;

	EXPECT_EQ(tb5_reg_gpu(dev, gpu, sizeof(gpu), -1, 0, &mr), -EOPNOTSUPP);
	EXPECT_NE(strstr(tb5_last_error(), "through its dma-buf only"), nullptr)
		<< tb5_last_error();
	EXPECT_EQ(mr, nullptr);
	// The fake module has no TB5_IOC_REG_DMABUF (ENOTTY): the message
	// shows what was asked of it.
	EXPECT_EQ(tb5_reg_gpu(dev, gpu, 4096, 7, 4096, &mr), -ENOTTY);
	EXPECT_NE(strstr(tb5_last_error(), "TB5_IOC_REG_DMABUF(fd 7, offset 4096, "
				       "4096 bytes)"), nullptr)
		<< tb5_last_error();
	EXPECT_EQ(mr, nullptr);
}

TEST(Library, VersionAndErrorStrings)
{
	EXPECT_STREQ(tb5_version(), TB5_TEST_VERSION);
	EXPECT_STREQ(tb5_strerror(0), "success");
	EXPECT_STREQ(tb5_strerror(-ENOMEM), "Cannot allocate memory");
	EXPECT_STREQ(tb5_strerror(5), "not an error code");
}

} // namespace
