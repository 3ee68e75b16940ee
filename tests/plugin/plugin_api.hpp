// SPDX-License-Identifier: MIT
//
// plugin_api.hpp - the test's view of one exported version of the plugin:
// dlopen()s the built libnccl-net-tb5.so and calls ncclNetPlugin_v<N>
// with that version's own argument types, as NCCL of that generation
// would. Every version is driven through the same small interface.
#ifndef TB5_PLUGIN_PLUGIN_API_HPP
#define TB5_PLUGIN_PLUGIN_API_HPP

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "nccl_net_abi.h"

namespace tb5plugintest {

// What every version's properties have in common (and v9+ extras).
struct Props {
	std::string name;
	std::string pci_path;
	uint64_t guid = 0;
	int ptr_support = 0;
	int speed = 0;
	int max_comms = 0;
	int max_recvs = 0;
	int vdevs = -1;			// v9+: vProps.ndevs
	std::vector<int> vdev_list;	// v9+: vProps.devs[0 .. ndevs-1]
	size_t max_p2p = 0;		// v9+
};

class Api {
public:
	virtual ~Api() = default;
	int version() const { return version_; }
	const void *table() const { return table_; }

	virtual std::string Name() = 0;
	virtual ncclResult_t Init(void **ctx) = 0;
	virtual ncclResult_t Finalize(void *ctx) = 0;
	virtual ncclResult_t Devices(int *n) = 0;
	virtual ncclResult_t GetProps(int dev, Props *p) = 0;
	virtual ncclResult_t Listen(void *ctx, int dev, void *handle, void **lc) = 0;
	virtual ncclResult_t Connect(void *ctx, int dev, void *handle, void **sc) = 0;
	virtual ncclResult_t Accept(void *lc, void **rc) = 0;
	virtual ncclResult_t RegMr(void *comm, void *data, size_t size, void **mh) = 0;
	// regMr with a memory type (NCCL_PTR_HOST, NCCL_PTR_CUDA), and
	// regMrDmaBuf, as NCCL calls them for GPU buffers.
	virtual ncclResult_t RegMrType(void *comm, void *data, size_t size, int type,
				       void **mh) = 0;
	virtual ncclResult_t RegMrDmaBuf(void *comm, void *data, size_t size, int type,
					 uint64_t offset, int fd, void **mh) = 0;
	virtual ncclResult_t DeregMr(void *comm, void *mh) = 0;
	virtual ncclResult_t Isend(void *sc, void *data, size_t size, int tag, void *mh,
				   void **req) = 0;
	virtual ncclResult_t Irecv(void *rc, int n, void **data, const size_t *sizes,
				   const int *tags, void **mhs, void **req) = 0;
	virtual ncclResult_t Iflush(void *rc, void *data, int size, void *mh, void **req) = 0;
	virtual ncclResult_t Test(void *req, int *done, int *sizes) = 0;
	virtual ncclResult_t CloseSend(void *sc) = 0;
	virtual ncclResult_t CloseRecv(void *rc) = 0;
	virtual ncclResult_t CloseListen(void *lc) = 0;
	// v9+: whether the table offers makeVDevice (NCCL then fuses
	// devices into virtual NICs), and the call itself.
	virtual bool HasMakeVDevice() = 0;
	virtual ncclResult_t MakeVDevice(int *d, const std::vector<int> &devs) = 0;

protected:
	int version_ = 0;
	const void *table_ = nullptr;
};

// The loaded library; the Api objects made from it live as long as it.
class Library {
public:
	// nullptr (and *why) when dlopen fails.
	static std::unique_ptr<Library> Open(const std::string &path, std::string *why);
	~Library();	// dlclose
	// The table of version @v, or nullptr when the symbol is missing.
	std::unique_ptr<Api> Get(int v);
	void *handle() const { return so_; }

private:
	void *so_ = nullptr;
};

// The plugin's path (set by the build, TB5_PLUGIN_PATH overrides).
std::string PluginPath();

// Lines the plugin logged through the logger the Api passes to init().
std::vector<std::string> LogLines();
void ClearLog();

} // namespace tb5plugintest

#endif // TB5_PLUGIN_PLUGIN_API_HPP
