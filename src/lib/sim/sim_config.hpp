// SPDX-License-Identifier: MIT
//
// sim_config.hpp - the simulator's settings, from TB5_SIM:
//
//   TB5_SIM=<fabric>[:key=value[,key=value...]]
//
//   fabric  name of the simulated cluster: [A-Za-z0-9_.-], 1..64 chars
//   hosts   host slots in the fabric, full mesh (1..16, default 2)
//   uncabled  a pair of slots i-j with no cable between them (e.g. 0-3);
//           may be given more than once (default: every pair cabled)
//   cables  parallel cables between every cabled pair of slots (1..4,
//           default 1)
//   host    the slot this process takes (default: the first free one)
//   loop    loop pairs inside this process (0..16, default 1)
//   ring    descriptors per ring (power of two, 64..16384, default 1024)
//   rate    link rate model in Gb/s of wire bytes per direction, e.g. 80
//           (default 0: as fast as memory)
//   delay_us  fixed one-way delay of every frame in us (0..10000, default 0)
//   usb4    1: count USB4's 4-byte header per 256-byte packet as wire
//           bytes too (default 0: tb5's frames only)
//   copy    copy worker threads of this process (0..64; default from the
//           CPUs it may run on: 0 below 8, else a quarter of them, at
//           most 8)
//   copy_min  KiB: copy batches of this size or more are shared with the
//           copy workers (16..65536, default 64)
//   burst   payload frames a link sends of one message before it serves
//           the next endpoint (1..256, default the core's 16)
//   dma     the DMA engine that carries GPU memory: cuda (the default,
//           loaded at run time), standin (a test device) or off
//
// hosts, uncabled, cables and ring belong to the fabric: the first process fixes them and a
// later one that asks for other values is refused. rate, delay_us and usb4
// model the directions this process sends in.
#ifndef TB5_SIM_SIM_CONFIG_HPP
#define TB5_SIM_SIM_CONFIG_HPP

#include <cstdint>
#include <string>

#include "sim/dma_engine.hpp"

namespace tb5::sim {

struct Config {
	std::string fabric;
	uint32_t hosts = 2;
	bool hosts_given = false;
	// uncabled[i] bit j: no cable between slots i and j (symmetric).
	uint16_t uncabled[16] = {};
	bool uncabled_given = false;
	uint32_t cables = 1;
	bool cables_given = false;
	int host = -1;
	uint32_t loop = 1;
	uint32_t ring_size = 1024;
	bool ring_given = false;
	uint64_t rate_mbps = 0;
	uint64_t delay_ns = 0;
	bool usb4 = false;
	int copy = -1;			// -1: default_copy_workers()
	uint32_t copy_min_kib = 64;	// batches the copy workers share
	uint32_t burst_frames = 0;	// 0: the core's default
	DmaKind dma = DmaKind::kCuda;	// what carries GPU memory
};

constexpr uint32_t kMaxHosts = 16;
static_assert(kMaxHosts <= 16, "Config::uncabled holds 16 bits a row");
constexpr uint32_t kMaxLoop = 16;
constexpr uint32_t kMaxCables = 4;
constexpr uint32_t kMaxCopy = 64;
constexpr uint32_t kMaxDelayUs = 10000;

// "0-3,1-2": the uncabled pairs of @rows (kMaxHosts of them), or "none".
std::string describe_uncabled(const uint16_t *rows);

// copy= when TB5_SIM does not say: from the CPUs this process may run on.
uint32_t default_copy_workers();

// Parses @spec; 0, or -EINVAL with a message for tb5_last_error().
int parse_config(const std::string &spec, Config &out);

} // namespace tb5::sim

#endif // TB5_SIM_SIM_CONFIG_HPP
