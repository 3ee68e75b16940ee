// SPDX-License-Identifier: MIT
//
// nccl_check: verifies and times NCCL collectives, whatever transport NCCL
// picks (the tb5 plugin, Socket, SHM, ...). Every element of every result is
// checked on the host, exactly, on every rank.
//
// Two modes:
//   mp  N processes, one GPU each; the ncclUniqueId goes through a file
//       (rank 0 writes it atomically, the others wait for it).
//   sp  one process drives every visible GPU (ncclCommInitAll, grouped calls,
//       one stream per GPU).
//
// Sizes are nccl-tests' "size": the bytes of the larger of the send and
// receive buffers of one rank (all_gather: the gathered result;
// reduce_scatter: the input; alltoall: everything one rank sends). algbw is
// size / time, busbw is algbw times nccl-tests' factor.
//
// Exit status: 0 all verified, 1 usage, 2 a verification failed,
// 3 NCCL or CUDA error, 4 a hang (no progress within --timeout seconds).
//
// Build: nvcc -O2 -std=c++17 -arch=sm_90 -o nccl_check nccl_check.cu -lnccl

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace {

constexpr int kExitUsage = 1;
constexpr int kExitVerify = 2;
constexpr int kExitError = 3;
constexpr int kExitHang = 4;

// ---------------------------------------------------------------------------
// Error handling and the hang watchdog

int g_rank_for_msgs = -1;  // global rank in mp mode, -1 in sp mode

void msg(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void msg(const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (g_rank_for_msgs >= 0)
    fprintf(stderr, "nccl_check[rank %d]: %s\n", g_rank_for_msgs, buf);
  else
    fprintf(stderr, "nccl_check: %s\n", buf);
  fflush(stderr);
}

[[noreturn]] void die(int code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
[[noreturn]] void die(int code, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  msg("%s", buf);
  fflush(stdout);
  exit(code);
}

#define CUDA_CHECK(call)                                                       \
  do {                                                                         \
    cudaError_t e_ = (call);                                                   \
    if (e_ != cudaSuccess)                                                     \
      die(kExitError, "CUDA error at %s:%d: %s: %s", __FILE__, __LINE__, #call, \
          cudaGetErrorString(e_));                                             \
  } while (0)

#define NCCL_CHECK(call)                                                       \
  do {                                                                         \
    ncclResult_t r_ = (call);                                                  \
    if (r_ != ncclSuccess && r_ != ncclInProgress)                             \
      die(kExitError, "NCCL error at %s:%d: %s: %s (%s)", __FILE__, __LINE__,  \
          #call, ncclGetErrorString(r_), ncclGetLastError(nullptr));           \
  } while (0)

double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

// A blocking call (ncclCommInitRank, ncclGroupEnd that connects, ...) that
// never returns cannot be timed out from the calling thread: a watchdog
// thread ends the process with a message instead.
class Watchdog {
 public:
  void start() {
    std::thread([this] { loop(); }).detach();
  }
  void arm(double seconds, const std::string& what) {
    std::lock_guard<std::mutex> lk(mu_);
    what_ = what;
    deadline_ = now_s() + seconds;
    seconds_ = seconds;
  }
  void disarm() {
    std::lock_guard<std::mutex> lk(mu_);
    deadline_ = 0;
  }

 private:
  void loop() {
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      std::lock_guard<std::mutex> lk(mu_);
      if (deadline_ != 0 && now_s() > deadline_) {
        msg("HANG: %s did not return within %.0f s; exiting", what_.c_str(), seconds_);
        fflush(stdout);
        _exit(kExitHang);
      }
    }
  }
  std::mutex mu_;
  std::string what_;
  double deadline_ = 0;
  double seconds_ = 0;
};

// Never destroyed: exit() must not tear it down under its running thread.
Watchdog& g_watchdog = *new Watchdog;

// ---------------------------------------------------------------------------
// Data patterns, identical on host and device

__host__ __device__ inline uint32_t pattern_u32(uint32_t key, uint64_t i, uint32_t salt) {
  // splitmix64 finalizer over (key, salt, index)
  uint64_t z = i + (((uint64_t)key << 32) | salt) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return (uint32_t)z;
}

// A small integer as float: sums over all ranks stay below 2^24 in magnitude,
// so every partial sum is exact whatever order NCCL adds in.
__host__ __device__ inline int32_t pattern_int(uint32_t key, uint64_t i, uint32_t salt, int vbits) {
  uint32_t u = pattern_u32(key, i, salt) & ((1u << vbits) - 1);
  return (int32_t)u - (int32_t)(1u << (vbits - 1));
}

// The key of the block that rank src sends to rank dst in alltoall.
__host__ __device__ inline uint32_t a2a_key(uint32_t src, uint32_t dst) {
  return 0x80000000u | (src << 15) | dst;
}

enum FillKind { kFillFloat = 0, kFillU32 = 1, kFillA2A = 2 };

// Element i of rank `key`'s input, as the bits stored in the buffer.
__host__ __device__ inline uint32_t input_bits(int kind, uint32_t key, uint64_t i, uint32_t salt, size_t chunk,
                                               int vbits) {
  if (kind == kFillFloat) {
    float f = (float)pattern_int(key, i, salt, vbits);
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
  }
  if (kind == kFillU32) return pattern_u32(key, i, salt);
  return pattern_u32(a2a_key(key, (uint32_t)(i / chunk)), i % chunk, salt);
}

__global__ void fill_kernel(uint32_t* buf, size_t count, int kind, uint32_t key, uint32_t salt, size_t chunk,
                            int vbits) {
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride)
    buf[i] = input_bits(kind, key, i, salt, chunk, vbits);
}

// ---------------------------------------------------------------------------
// Collectives

enum Coll { kAllReduce, kAllGather, kReduceScatter, kBroadcast, kAllToAll, kSendRecv, kNumColls };

struct CollInfo {
  const char* name;
  bool is_float;  // float sum, else uint32 data movement
};

const CollInfo kColls[kNumColls] = {
    {"all_reduce", true},  {"all_gather", false}, {"reduce_scatter", true},
    {"broadcast", false},  {"alltoall", false},   {"sendrecv", false},
};

double bus_factor(int c, int n) {
  switch (c) {
    case kAllReduce: return 2.0 * (n - 1) / n;
    case kAllGather:
    case kReduceScatter:
    case kAllToAll: return (double)(n - 1) / n;
    default: return 1.0;  // broadcast, sendrecv
  }
}

// How prepare() fills a rank's send buffer for collective c.
int fill_kind(int c) {
  if (kColls[c].is_float) return kFillFloat;
  return c == kAllToAll ? kFillA2A : kFillU32;
}

// Each collective and size gets its own data, so that a result left over from
// an earlier step never passes for a new one.
uint32_t salt_for(int c, size_t size_index) {
  return ((uint32_t)c << 24) ^ (uint32_t)size_index ^ 0x5a5a00u;
}

// Element counts of one rank's send and receive buffers for size `bytes`.
void coll_counts(int c, size_t bytes, int n, size_t* send, size_t* recv) {
  size_t total = bytes / 4;
  switch (c) {
    case kAllGather: *send = total / n; *recv = total; break;
    case kReduceScatter: *send = total; *recv = total / n; break;
    default: *send = total; *recv = total; break;
  }
}

// ---------------------------------------------------------------------------
// Options

struct Options {
  std::string mode;  // "mp" or "sp"
  int rank = -1, nranks = -1, device = -1, ngpus = -1;
  std::string id_file;
  size_t min_bytes = 1024, max_bytes = 1ull << 30;
  double factor = 2;
  std::vector<size_t> extra_sizes;
  std::vector<int> colls;
  bool bench = false;
  bool verify = true;
  int iters = -1, warmup = -1;  // -1: by mode (and size, in bench mode)
  size_t budget = 2ull << 30;   // bench: bytes per size that auto iterations aim at
  int min_iters = 5, max_iters = 100;
  double timeout = 120;
  std::string label;
  std::string json_path;
  int vthreads = 0;
};

void usage(FILE* f) {
  fprintf(f,
      "usage: nccl_check [options]\n"
      "  --mode mp|sp        mp: one process per GPU (default when --nranks or a rank\n"
      "                      environment is given); sp: one process, all visible GPUs\n"
      "  --rank R --nranks N mp: this process's rank and the number of ranks\n"
      "                      (else NCCL_CHECK_RANK/NCCL_CHECK_NRANKS, RANK/WORLD_SIZE,\n"
      "                      OMPI_COMM_WORLD_RANK/SIZE, PMI_RANK/PMI_SIZE)\n"
      "  --id-file PATH      mp: where rank 0 publishes the ncclUniqueId (must not\n"
      "                      exist yet; else NCCL_CHECK_ID_FILE)\n"
      "  --device D          mp: CUDA device (default LOCAL_RANK, else rank %% devices)\n"
      "  --ngpus N           sp: number of GPUs (default: all visible)\n"
      "  --colls LIST        comma-separated from all_reduce,all_gather,reduce_scatter,\n"
      "                      broadcast,alltoall,sendrecv (default: all)\n"
      "  --min SIZE --max SIZE --factor F   sizes, bytes per rank as nccl-tests counts\n"
      "                      them (K/M/G suffixes; default 1K, 1G, factor 2)\n"
      "  --extra-sizes LIST  more sizes, comma-separated (e.g. 128M)\n"
      "  --bench             warm-up then timed iterations (default: 1 op per size)\n"
      "  --iters N --warmup N  fixed counts (bench default: by size, see --budget)\n"
      "  --budget SIZE       bench: iterations = budget/size within [--min-iters,\n"
      "                      --max-iters] (default 2G, 5, 100); warm-up = iters/10, >= 1\n"
      "  --no-verify         skip the host check (not recommended)\n"
      "  --timeout S         a step that makes no progress for S seconds is a hang\n"
      "                      (default 120)\n"
      "  --label NAME        transport label for the table and JSON (default: NCCL_NET\n"
      "                      or \"nccl\")\n"
      "  --json PATH         also append the JSON lines to PATH\n"
      "  --verify-threads N  host threads for the check (default: cores/2, at most 8)\n");
}

bool parse_size(const char* s, size_t* out) {
  char* end = nullptr;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || v < 0) return false;
  double mul = 1;
  if (*end) {
    switch (*end) {
      case 'k': case 'K': mul = 1024.0; break;
      case 'm': case 'M': mul = 1024.0 * 1024; break;
      case 'g': case 'G': mul = 1024.0 * 1024 * 1024; break;
      default: return false;
    }
    ++end;
    if (*end == 'i' || *end == 'I') ++end;
    if (*end == 'b' || *end == 'B') ++end;
    if (*end) return false;
  }
  *out = (size_t)llround(v * mul);
  return true;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t next = s.find(sep, pos);
    if (next == std::string::npos) next = s.size();
    if (next > pos) out.push_back(s.substr(pos, next - pos));
    pos = next + 1;
  }
  return out;
}

int env_int(const char* const* names, int fallback) {
  for (const char* const* n = names; *n; ++n) {
    const char* v = getenv(*n);
    if (v && *v) return atoi(v);
  }
  return fallback;
}

Options parse_args(int argc, char** argv) {
  Options o;
  auto need = [&](int& i) -> const char* {
    if (i + 1 >= argc) {
      fprintf(stderr, "nccl_check: %s needs a value\n", argv[i]);
      exit(kExitUsage);
    }
    return argv[++i];
  };
  auto size_arg = [&](int& i) -> size_t {
    const char* opt = argv[i];
    const char* v = need(i);
    size_t s;
    if (!parse_size(v, &s)) die(kExitUsage, "bad size for %s: %s", opt, v);
    return s;
  };
  auto int_arg = [&](int& i) -> int {
    const char* opt = argv[i];
    const char* v = need(i);
    char* end;
    long x = strtol(v, &end, 10);
    if (*end || end == v) die(kExitUsage, "bad number for %s: %s", opt, v);
    return (int)x;
  };
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") { usage(stdout); exit(0); }
    else if (a == "--mode") o.mode = need(i);
    else if (a == "--rank") o.rank = int_arg(i);
    else if (a == "--nranks") o.nranks = int_arg(i);
    else if (a == "--device") o.device = int_arg(i);
    else if (a == "--ngpus") o.ngpus = int_arg(i);
    else if (a == "--id-file") o.id_file = need(i);
    else if (a == "--min") o.min_bytes = size_arg(i);
    else if (a == "--max") o.max_bytes = size_arg(i);
    else if (a == "--factor") o.factor = atof(need(i));
    else if (a == "--extra-sizes") {
      for (auto& s : split(need(i), ',')) {
        size_t v;
        if (!parse_size(s.c_str(), &v)) die(kExitUsage, "bad size in --extra-sizes: %s", s.c_str());
        o.extra_sizes.push_back(v);
      }
    } else if (a == "--colls") {
      for (auto& s : split(need(i), ',')) {
        if (s == "all") { for (int c = 0; c < kNumColls; ++c) o.colls.push_back(c); continue; }
        int found = -1;
        for (int c = 0; c < kNumColls; ++c)
          if (s == kColls[c].name) found = c;
        if (s == "allreduce") found = kAllReduce;
        if (s == "allgather") found = kAllGather;
        if (s == "reducescatter") found = kReduceScatter;
        if (s == "all_to_all" || s == "alltoall") found = kAllToAll;
        if (s == "send_recv") found = kSendRecv;
        if (found < 0) die(kExitUsage, "unknown collective: %s", s.c_str());
        o.colls.push_back(found);
      }
    } else if (a == "--bench") o.bench = true;
    else if (a == "--no-verify") o.verify = false;
    else if (a == "--iters") o.iters = int_arg(i);
    else if (a == "--warmup") o.warmup = int_arg(i);
    else if (a == "--budget") o.budget = size_arg(i);
    else if (a == "--min-iters") o.min_iters = int_arg(i);
    else if (a == "--max-iters") o.max_iters = int_arg(i);
    else if (a == "--timeout") o.timeout = atof(need(i));
    else if (a == "--label") o.label = need(i);
    else if (a == "--json") o.json_path = need(i);
    else if (a == "--verify-threads") o.vthreads = int_arg(i);
    else { fprintf(stderr, "nccl_check: unknown option %s\n", argv[i]); usage(stderr); exit(kExitUsage); }
  }

  static const char* const kRankEnv[] = {"NCCL_CHECK_RANK", "RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", nullptr};
  static const char* const kSizeEnv[] = {"NCCL_CHECK_NRANKS", "WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", nullptr};
  static const char* const kLocalEnv[] = {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", nullptr};
  if (o.rank < 0) o.rank = env_int(kRankEnv, -1);
  if (o.nranks < 0) o.nranks = env_int(kSizeEnv, -1);
  if (o.mode.empty()) o.mode = (o.nranks > 0) ? "mp" : "sp";
  if (o.mode != "mp" && o.mode != "sp") die(kExitUsage, "--mode must be mp or sp");
  if (o.mode == "mp") {
    if (o.nranks < 1 || o.rank < 0 || o.rank >= o.nranks)
      die(kExitUsage, "mp mode needs 0 <= --rank < --nranks (got rank %d, nranks %d)", o.rank, o.nranks);
    if (o.id_file.empty() && getenv("NCCL_CHECK_ID_FILE")) o.id_file = getenv("NCCL_CHECK_ID_FILE");
    if (o.id_file.empty()) die(kExitUsage, "mp mode needs --id-file PATH (or NCCL_CHECK_ID_FILE)");
    if (o.device < 0) o.device = env_int(kLocalEnv, -1);
  }
  if (o.colls.empty())
    for (int c = 0; c < kNumColls; ++c) o.colls.push_back(c);
  if (o.factor < 1.01 && o.min_bytes != o.max_bytes) die(kExitUsage, "--factor must be > 1");
  if (o.min_bytes > o.max_bytes) die(kExitUsage, "--min is larger than --max");
  if (o.timeout <= 0) die(kExitUsage, "--timeout must be positive");
  if (o.label.empty()) {
    const char* net = getenv("NCCL_NET");
    o.label = (net && *net) ? net : "nccl";
  }
  if (o.min_iters < 1) o.min_iters = 1;
  if (o.max_iters < o.min_iters) o.max_iters = o.min_iters;
  // One double per iteration (and a flag) goes through the 4096-entry scratch.
  if (o.iters > 4000 || o.max_iters > 4000) die(kExitUsage, "at most 4000 iterations per size");
  return o;
}

// nccl-tests' sizes, rounded down to a multiple of 4 * nranks bytes so that
// every rank's block is whole.
std::vector<size_t> make_sizes(const Options& o, int nranks) {
  std::vector<size_t> sizes;
  size_t unit = 4 * (size_t)nranks;
  auto add = [&](size_t s) {
    s = s / unit * unit;
    if (s == 0) s = unit;
    sizes.push_back(s);
  };
  for (double s = (double)o.min_bytes; s <= (double)o.max_bytes * 1.000001; s *= o.factor) {
    add((size_t)llround(s));
    if (o.factor < 1.01) break;
  }
  for (size_t s : o.extra_sizes) add(s);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

// ---------------------------------------------------------------------------
// Per-GPU state

struct Local {
  int rank = 0;    // global rank
  int device = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  void* sendbuf = nullptr;
  void* recvbuf = nullptr;
  void* host = nullptr;  // pinned, receives the copy-back
  double* small = nullptr;  // device scratch for the cross-rank reduction of timings
  std::vector<cudaEvent_t> ev_start, ev_stop;
};

struct Ctx {
  Options opt;
  int nranks = 0;
  std::vector<Local> locals;
  bool printer = false;  // rank 0 (mp) or the process (sp)
  FILE* json = nullptr;
  int vbits = 20;
  int vthreads = 1;
  int nccl_version = 0;
};

void group_end(Ctx& ctx, const std::string& what) {
  g_watchdog.arm(ctx.opt.timeout, what);
  NCCL_CHECK(ncclGroupEnd());
  g_watchdog.disarm();
}

void abort_all(Ctx& ctx) {
  g_watchdog.arm(30, "ncclCommAbort");
  for (auto& l : ctx.locals)
    if (l.comm) ncclCommAbort(l.comm);
  g_watchdog.disarm();
}

// Waits until every local stream is idle. A step that makes no progress (none
// of the first `nev` timed operations completes) for --timeout seconds is a
// hang; an error that NCCL reports asynchronously ends the wait at once.
void wait_all(Ctx& ctx, const std::string& what, size_t nev = 0) {
  double last_progress = now_s();
  std::vector<size_t> done(ctx.locals.size(), 0);
  for (;;) {
    bool idle = true;
    for (size_t k = 0; k < ctx.locals.size(); ++k) {
      Local& l = ctx.locals[k];
      ncclResult_t async = ncclSuccess;
      ncclResult_t r = ncclCommGetAsyncError(l.comm, &async);
      if (r != ncclSuccess || (async != ncclSuccess && async != ncclInProgress)) {
        msg("NCCL async error on rank %d during %s: %s (%s)", l.rank, what.c_str(),
            ncclGetErrorString(r != ncclSuccess ? r : async), ncclGetLastError(l.comm));
        abort_all(ctx);
        exit(kExitError);
      }
      while (done[k] < nev) {
        cudaError_t e = cudaEventQuery(l.ev_stop[done[k]]);
        if (e == cudaErrorNotReady) break;
        if (e != cudaSuccess) die(kExitError, "cudaEventQuery during %s: %s", what.c_str(), cudaGetErrorString(e));
        ++done[k];
        last_progress = now_s();
      }
      cudaError_t e = cudaStreamQuery(l.stream);
      if (e == cudaErrorNotReady) {
        idle = false;
      } else if (e != cudaSuccess) {
        die(kExitError, "CUDA error during %s on rank %d: %s", what.c_str(), l.rank, cudaGetErrorString(e));
      }
    }
    if (idle) return;
    if (now_s() - last_progress > ctx.opt.timeout) {
      msg("HANG: %s made no progress for %.0f s; aborting the communicators", what.c_str(), ctx.opt.timeout);
      abort_all(ctx);
      exit(kExitHang);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

void fill(Ctx& ctx, Local& l, void* buf, size_t count, int kind, uint32_t key, uint32_t salt, size_t chunk) {
  if (count == 0) return;
  CUDA_CHECK(cudaSetDevice(l.device));
  int blocks = (int)std::min<size_t>((count + 255) / 256, 4096);
  fill_kernel<<<blocks, 256, 0, l.stream>>>((uint32_t*)buf, count, kind, key, salt, chunk ? chunk : 1, ctx.vbits);
  CUDA_CHECK(cudaGetLastError());
}

void prepare(Ctx& ctx, int c, size_t bytes, uint32_t salt) {
  int n = ctx.nranks;
  for (auto& l : ctx.locals) {
    size_t sc, rc;
    coll_counts(c, bytes, n, &sc, &rc);
    fill(ctx, l, l.sendbuf, sc, fill_kind(c), (uint32_t)l.rank, salt, sc / n);
    // Poison the result: anything NCCL fails to write shows up as a mismatch
    // (0xA5A5A5A5 is not an integer as a float).
    CUDA_CHECK(cudaMemsetAsync(l.recvbuf, 0xA5, rc * 4, l.stream));
  }
}

// Enqueues one operation on every local GPU, grouped.
void launch(Ctx& ctx, int c, size_t bytes, int root) {
  int n = ctx.nranks;
  NCCL_CHECK(ncclGroupStart());
  for (auto& l : ctx.locals) {
    size_t sc, rc;
    coll_counts(c, bytes, n, &sc, &rc);
    switch (c) {
      case kAllReduce:
        NCCL_CHECK(ncclAllReduce(l.sendbuf, l.recvbuf, sc, ncclFloat, ncclSum, l.comm, l.stream));
        break;
      case kAllGather:
        NCCL_CHECK(ncclAllGather(l.sendbuf, l.recvbuf, sc, ncclUint32, l.comm, l.stream));
        break;
      case kReduceScatter:
        NCCL_CHECK(ncclReduceScatter(l.sendbuf, l.recvbuf, rc, ncclFloat, ncclSum, l.comm, l.stream));
        break;
      case kBroadcast:
        NCCL_CHECK(ncclBroadcast(l.sendbuf, l.recvbuf, sc, ncclUint32, root, l.comm, l.stream));
        break;
      case kAllToAll: {
        size_t m = sc / n;
        NCCL_CHECK(ncclGroupStart());
        for (int p = 0; p < n; ++p) {
          NCCL_CHECK(ncclSend((uint32_t*)l.sendbuf + p * m, m, ncclUint32, p, l.comm, l.stream));
          NCCL_CHECK(ncclRecv((uint32_t*)l.recvbuf + p * m, m, ncclUint32, p, l.comm, l.stream));
        }
        NCCL_CHECK(ncclGroupEnd());
        break;
      }
      case kSendRecv: {
        int next = (l.rank + 1) % n, prev = (l.rank - 1 + n) % n;
        NCCL_CHECK(ncclGroupStart());
        NCCL_CHECK(ncclSend(l.sendbuf, sc, ncclUint32, next, l.comm, l.stream));
        NCCL_CHECK(ncclRecv(l.recvbuf, rc, ncclUint32, prev, l.comm, l.stream));
        NCCL_CHECK(ncclGroupEnd());
        break;
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Host check

struct Mismatch {
  size_t first = SIZE_MAX;
  size_t count = 0;
  uint32_t expected = 0, got = 0;
};

template <typename Expect>
Mismatch check_range(const uint32_t* got, size_t count, bool is_float, int nthreads, Expect expect) {
  std::vector<Mismatch> parts(nthreads);
  std::vector<std::thread> threads;
  size_t per = (count + nthreads - 1) / nthreads;
  for (int t = 0; t < nthreads; ++t) {
    threads.emplace_back([&, t] {
      size_t lo = std::min(count, (size_t)t * per), hi = std::min(count, lo + per);
      Mismatch& m = parts[t];
      for (size_t i = lo; i < hi; ++i) {
        uint32_t e = expect(i);
        bool ok;
        if (is_float) {
          float ef, gf;
          memcpy(&ef, &e, 4);
          memcpy(&gf, &got[i], 4);
          ok = (ef == gf);
        } else {
          ok = (e == got[i]);
        }
        if (!ok) {
          if (m.count == 0) { m.first = i; m.expected = e; m.got = got[i]; }
          ++m.count;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  Mismatch all;
  for (auto& m : parts) {
    if (m.count && m.first < all.first) { all.first = m.first; all.expected = m.expected; all.got = m.got; }
    all.count += m.count;
  }
  return all;
}

inline uint32_t float_bits(int32_t v) {
  float f = (float)v;
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

std::string show(uint32_t bits, bool is_float) {
  char buf[64];
  if (is_float) {
    float f;
    memcpy(&f, &bits, 4);
    snprintf(buf, sizeof buf, "%.9g (0x%08x)", (double)f, bits);
  } else {
    snprintf(buf, sizeof buf, "0x%08x", bits);
  }
  return buf;
}

// Checks every element of rank r's result `got` of collective c against what
// the inputs that prepare() wrote must give.
Mismatch check_result(int c, size_t bytes, int n, int r, int root, uint32_t salt, int vb, int T,
                      const uint32_t* got) {
  size_t sc, rc;
  coll_counts(c, bytes, n, &sc, &rc);
  bool fl = kColls[c].is_float;
  Mismatch m;
  switch (c) {
    case kAllReduce:
      m = check_range(got, rc, fl, T, [&](size_t i) {
        int64_t s = 0;
        for (int q = 0; q < n; ++q) s += pattern_int(q, i, salt, vb);
        return float_bits((int32_t)s);
      });
      break;
    case kReduceScatter:
      m = check_range(got, rc, fl, T, [&](size_t j) {
        int64_t s = 0;
        for (int q = 0; q < n; ++q) s += pattern_int(q, (size_t)r * rc + j, salt, vb);
        return float_bits((int32_t)s);
      });
      break;
    case kAllGather:
      m = check_range(got, rc, fl, T, [&](size_t i) { return pattern_u32(i / sc, i % sc, salt); });
      break;
    case kBroadcast:
      m = check_range(got, rc, fl, T, [&](size_t i) { return pattern_u32(root, i, salt); });
      break;
    case kAllToAll: {
      size_t mm = sc / n;
      m = check_range(got, rc, fl, T, [&](size_t i) {
        return pattern_u32(a2a_key((uint32_t)(i / mm), r), i % mm, salt);
      });
      break;
    }
    case kSendRecv: {
      int prev = (r - 1 + n) % n;
      m = check_range(got, rc, fl, T, [&](size_t i) { return pattern_u32(prev, i, salt); });
      break;
    }
  }
  return m;
}

// Copies one local rank's result back and checks every element. Returns true
// when all match; prints the first mismatch otherwise.
bool verify_local(Ctx& ctx, Local& l, int c, size_t bytes, int root, uint32_t salt) {
  size_t sc, rc;
  coll_counts(c, bytes, ctx.nranks, &sc, &rc);
  CUDA_CHECK(cudaSetDevice(l.device));
  CUDA_CHECK(cudaMemcpyAsync(l.host, l.recvbuf, rc * 4, cudaMemcpyDeviceToHost, l.stream));
  wait_all(ctx, std::string("copy-back of ") + kColls[c].name);
  bool fl = kColls[c].is_float;
  int r = l.rank;
  Mismatch m = check_result(c, bytes, ctx.nranks, r, root, salt, ctx.vbits, ctx.vthreads, (const uint32_t*)l.host);
  if (m.count == 0) return true;
  msg("MISMATCH rank=%d coll=%s bytes=%zu index=%zu expected=%s got=%s (%zu of %zu elements wrong)", r,
      kColls[c].name, bytes, m.first, show(m.expected, fl).c_str(), show(m.got, fl).c_str(), m.count, rc);
  return false;
}

// Element-wise max over all ranks of a host vector (each local rank gives its
// own), through NCCL itself. Every rank gets the result.
std::vector<double> allreduce_max(Ctx& ctx, const std::vector<std::vector<double>>& per_local) {
  size_t len = per_local[0].size();
  for (size_t k = 0; k < ctx.locals.size(); ++k) {
    Local& l = ctx.locals[k];
    CUDA_CHECK(cudaSetDevice(l.device));
    CUDA_CHECK(cudaMemcpyAsync(l.small, per_local[k].data(), len * sizeof(double), cudaMemcpyHostToDevice, l.stream));
  }
  NCCL_CHECK(ncclGroupStart());
  for (auto& l : ctx.locals)
    NCCL_CHECK(ncclAllReduce(l.small, l.small, len, ncclFloat64, ncclMax, l.comm, l.stream));
  group_end(ctx, "result exchange (all_reduce max)");
  std::vector<double> out(len);
  Local& l0 = ctx.locals[0];
  CUDA_CHECK(cudaSetDevice(l0.device));
  CUDA_CHECK(cudaMemcpyAsync(out.data(), l0.small, len * sizeof(double), cudaMemcpyDeviceToHost, l0.stream));
  wait_all(ctx, "result exchange (all_reduce max)");
  return out;
}

void ensure_events(Local& l, int count) {
  CUDA_CHECK(cudaSetDevice(l.device));
  while ((int)l.ev_start.size() < count) {
    cudaEvent_t a, b;
    CUDA_CHECK(cudaEventCreate(&a));
    CUDA_CHECK(cudaEventCreate(&b));
    l.ev_start.push_back(a);
    l.ev_stop.push_back(b);
  }
}

std::string human(size_t b) {
  char buf[32];
  if (b >= (1ull << 30) && b % (1ull << 30) == 0) snprintf(buf, sizeof buf, "%zuG", b >> 30);
  else if (b >= (1ull << 20) && b % (1ull << 20) == 0) snprintf(buf, sizeof buf, "%zuM", b >> 20);
  else if (b >= 1024 && b % 1024 == 0) snprintf(buf, sizeof buf, "%zuK", b >> 10);
  else snprintf(buf, sizeof buf, "%zu", b);
  return buf;
}

std::string json_escape(const std::string& s) {
  std::string o;
  for (char ch : s) {
    if (ch == '"' || ch == '\\') { o += '\\'; o += ch; }
    else if ((unsigned char)ch < 0x20) { char b[8]; snprintf(b, sizeof b, "\\u%04x", ch); o += b; }
    else o += ch;
  }
  return o;
}

// Runs one collective at one size: fill, warm-up, timed iterations, check,
// then agree across ranks. Returns false when any rank's check failed.
bool run_one(Ctx& ctx, int c, size_t bytes, size_t size_index) {
  const Options& o = ctx.opt;
  int n = ctx.nranks;
  int root = (int)(size_index % n);
  uint32_t salt = salt_for(c, size_index);
  int iters, warmup;
  if (o.bench) {
    iters = o.iters > 0 ? o.iters
                        : (int)std::max<size_t>(o.min_iters, std::min<size_t>(o.max_iters, o.budget / bytes));
    warmup = o.warmup >= 0 ? o.warmup : std::max(1, iters / 10);
  } else {
    iters = o.iters > 0 ? o.iters : 1;
    warmup = o.warmup >= 0 ? o.warmup : 0;
  }
  char what[160];
  snprintf(what, sizeof what, "%s of %zu bytes", kColls[c].name, bytes);

  prepare(ctx, c, bytes, salt);
  for (int w = 0; w < warmup; ++w) {
    launch(ctx, c, bytes, root);
    group_end(ctx, std::string("launch of ") + what);
  }
  for (auto& l : ctx.locals) ensure_events(l, iters);
  for (int it = 0; it < iters; ++it) {
    for (auto& l : ctx.locals) {
      CUDA_CHECK(cudaSetDevice(l.device));
      CUDA_CHECK(cudaEventRecord(l.ev_start[it], l.stream));
    }
    launch(ctx, c, bytes, root);
    group_end(ctx, std::string("launch of ") + what);
    for (auto& l : ctx.locals) {
      CUDA_CHECK(cudaSetDevice(l.device));
      CUDA_CHECK(cudaEventRecord(l.ev_stop[it], l.stream));
    }
  }
  wait_all(ctx, what, iters);

  // Per iteration, per local rank: the op's time; then the slowest rank's.
  std::vector<std::vector<double>> per_local(ctx.locals.size(), std::vector<double>(iters + 1, 0));
  for (size_t k = 0; k < ctx.locals.size(); ++k) {
    Local& l = ctx.locals[k];
    CUDA_CHECK(cudaSetDevice(l.device));
    for (int it = 0; it < iters; ++it) {
      float ms = 0;
      CUDA_CHECK(cudaEventElapsedTime(&ms, l.ev_start[it], l.ev_stop[it]));
      per_local[k][it] = ms * 1000.0;  // us
    }
  }

  if (o.verify)
    for (size_t k = 0; k < ctx.locals.size(); ++k)
      if (!verify_local(ctx, ctx.locals[k], c, bytes, root, salt)) per_local[k][iters] = 1;

  std::vector<double> agreed = allreduce_max(ctx, per_local);
  bool all_ok = agreed[iters] == 0;
  std::vector<double> t(agreed.begin(), agreed.begin() + iters);
  std::sort(t.begin(), t.end());
  double median = (iters % 2) ? t[iters / 2] : 0.5 * (t[iters / 2 - 1] + t[iters / 2]);
  double algbw = median > 0 ? (double)bytes / (median * 1e-6) / 1e9 : 0;
  double busbw = algbw * bus_factor(c, n);

  if (ctx.printer) {
    size_t sc, rc;
    coll_counts(c, bytes, n, &sc, &rc);
    const char* status = !o.verify ? "unchecked" : (all_ok ? "OK" : "FAIL");
    printf("%-15s %12zu %7s %12zu %-7s %4s %6d %6d %12.2f %10.3f %10.3f  %s\n", kColls[c].name, bytes,
           human(bytes).c_str(), std::max(sc, rc), kColls[c].is_float ? "float" : "uint32",
           c == kBroadcast ? std::to_string(root).c_str() : "-", warmup, iters, median, algbw, busbw, status);
    char line[1024];
    snprintf(line, sizeof line,
             "{\"label\":\"%s\",\"coll\":\"%s\",\"bytes\":%zu,\"mode\":\"%s\",\"nranks\":%d,\"dtype\":\"%s\","
             "\"count\":%zu,\"root\":%d,\"warmup\":%d,\"iters\":%d,\"time_us\":%.3f,\"time_us_min\":%.3f,"
             "\"time_us_max\":%.3f,\"algbw_gbps\":%.4f,\"busbw_gbps\":%.4f,\"verified\":%s,\"nccl_version\":%d}",
             json_escape(o.label).c_str(), kColls[c].name, bytes, o.mode.c_str(), n,
             kColls[c].is_float ? "float32" : "uint32", std::max(sc, rc), c == kBroadcast ? root : -1, warmup, iters,
             median, t.front(), t.back(), algbw, busbw, !o.verify ? "null" : (all_ok ? "true" : "false"),
             ctx.nccl_version);
    printf("%s\n", line);
    fflush(stdout);
    if (ctx.json) {
      fprintf(ctx.json, "%s\n", line);
      fflush(ctx.json);
    }
  }
  return all_ok;
}

// ---------------------------------------------------------------------------
// Setup

void write_id_file(const std::string& path, const ncclUniqueId& id) {
  struct stat st;
  if (stat(path.c_str(), &st) == 0)
    die(kExitUsage, "id file %s exists already (left from an earlier run?): remove it or use a fresh path",
        path.c_str());
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) die(kExitError, "cannot create %s: %s", tmp.c_str(), strerror(errno));
  if (write(fd, &id, sizeof id) != (ssize_t)sizeof id || fsync(fd) != 0)
    die(kExitError, "cannot write %s: %s", tmp.c_str(), strerror(errno));
  close(fd);
  if (rename(tmp.c_str(), path.c_str()) != 0)
    die(kExitError, "cannot rename %s to %s: %s", tmp.c_str(), path.c_str(), strerror(errno));
}

ncclUniqueId read_id_file(const std::string& path, double timeout) {
  double deadline = now_s() + timeout;
  for (;;) {
    int fd = open(path.c_str(), O_RDONLY);
    if (fd >= 0) {
      ncclUniqueId id;
      ssize_t got = read(fd, &id, sizeof id);
      close(fd);
      if (got == (ssize_t)sizeof id) return id;
    }
    if (now_s() > deadline) die(kExitHang, "HANG: no ncclUniqueId in %s after %.0f s (is rank 0 running?)",
                                path.c_str(), timeout);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void alloc_local(Local& l, size_t max_bytes) {
  CUDA_CHECK(cudaSetDevice(l.device));
  CUDA_CHECK(cudaStreamCreateWithFlags(&l.stream, cudaStreamNonBlocking));
  CUDA_CHECK(cudaMalloc(&l.sendbuf, max_bytes));
  CUDA_CHECK(cudaMalloc(&l.recvbuf, max_bytes));
  CUDA_CHECK(cudaMalloc(&l.small, 4096 * sizeof(double)));
  CUDA_CHECK(cudaMallocHost(&l.host, max_bytes));
}

void free_local(Local& l) {
  CUDA_CHECK(cudaSetDevice(l.device));
  for (auto e : l.ev_start) cudaEventDestroy(e);
  for (auto e : l.ev_stop) cudaEventDestroy(e);
  cudaFree(l.sendbuf);
  cudaFree(l.recvbuf);
  cudaFree(l.small);
  cudaFreeHost(l.host);
  cudaStreamDestroy(l.stream);
}

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  Ctx ctx;
  ctx.opt = parse_args(argc, argv);
  Options& o = ctx.opt;
  g_watchdog.start();

  int ndev = 0;
  CUDA_CHECK(cudaGetDeviceCount(&ndev));
  if (ndev < 1) die(kExitError, "no CUDA device");
  NCCL_CHECK(ncclGetVersion(&ctx.nccl_version));

  if (o.mode == "mp") {
    g_rank_for_msgs = o.rank;
    ctx.nranks = o.nranks;
    Local l;
    l.rank = o.rank;
    l.device = o.device >= 0 ? o.device : o.rank % ndev;
    if (l.device >= ndev) die(kExitUsage, "device %d does not exist (%d visible)", l.device, ndev);
    ctx.locals.push_back(l);
    ctx.printer = (o.rank == 0);
  } else {
    int g = o.ngpus > 0 ? o.ngpus : ndev;
    if (g > ndev) die(kExitUsage, "--ngpus %d but only %d devices are visible", g, ndev);
    ctx.nranks = g;
    for (int i = 0; i < g; ++i) {
      Local l;
      l.rank = i;
      l.device = i;
      ctx.locals.push_back(l);
    }
    ctx.printer = true;
  }
  int n = ctx.nranks;
  // Values of +-2^(vbits-1) summed over n ranks stay below 2^24: exact floats.
  int lg = 0;
  while ((1 << lg) < n) ++lg;
  ctx.vbits = std::max(4, std::min(20, 23 - lg));
  unsigned hw = std::thread::hardware_concurrency();
  ctx.vthreads = o.vthreads > 0 ? o.vthreads : (int)std::max(1u, std::min(8u, hw / 2));

  std::vector<size_t> sizes = make_sizes(o, n);
  size_t max_bytes = sizes.back();

  if (ctx.printer && !o.json_path.empty()) {
    ctx.json = fopen(o.json_path.c_str(), "a");
    if (!ctx.json) die(kExitUsage, "cannot open %s: %s", o.json_path.c_str(), strerror(errno));
  }

  for (auto& l : ctx.locals) alloc_local(l, max_bytes);

  // Communicators.
  if (o.mode == "mp") {
    ncclUniqueId id;
    if (o.rank == 0) {
      NCCL_CHECK(ncclGetUniqueId(&id));
      write_id_file(o.id_file, id);
    } else {
      id = read_id_file(o.id_file, o.timeout);
    }
    Local& l = ctx.locals[0];
    CUDA_CHECK(cudaSetDevice(l.device));
    g_watchdog.arm(o.timeout, "ncclCommInitRank");
    NCCL_CHECK(ncclCommInitRank(&l.comm, n, id, o.rank));
    g_watchdog.disarm();
  } else {
    std::vector<ncclComm_t> comms(n);
    std::vector<int> devs(n);
    for (int i = 0; i < n; ++i) devs[i] = ctx.locals[i].device;
    g_watchdog.arm(o.timeout, "ncclCommInitAll");
    NCCL_CHECK(ncclCommInitAll(comms.data(), n, devs.data()));
    g_watchdog.disarm();
    for (int i = 0; i < n; ++i) ctx.locals[i].comm = comms[i];
  }

  size_t checks = o.colls.size() * sizes.size();
  if (ctx.printer) {
    char hostname[256] = "";
    gethostname(hostname, sizeof hostname - 1);
    const char* sim = getenv("TB5_SIM");
    const char* net = getenv("NCCL_NET");
    printf("# nccl_check: mode=%s nranks=%d label=%s host=%s NCCL %d (compiled against %d.%d.%d)\n", o.mode.c_str(),
           n, o.label.c_str(), hostname, ctx.nccl_version, NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH);
    printf("# env: NCCL_NET=%s TB5_SIM=%s\n", net ? net : "(unset)", sim ? sim : "(unset)");
    printf("# devices:");
    for (auto& l : ctx.locals) {
      cudaDeviceProp p;
      CUDA_CHECK(cudaGetDeviceProperties(&p, l.device));
      printf(" rank%d=cuda:%d(%s)", l.rank, l.device, p.name);
    }
    if (o.mode == "mp") printf(" (other ranks: their own processes)");
    printf("\n# plan: %zu collectives x %zu sizes = %zu checks (%s, %s); sizes:", o.colls.size(), sizes.size(),
           checks, o.bench ? "bench" : "validation", o.verify ? "every element checked on the host" : "NOT verified");
    for (size_t s : sizes) printf(" %s", human(s).c_str());
    printf("\n# busbw factors (nccl-tests): all_reduce 2(n-1)/n, all_gather, reduce_scatter and alltoall (n-1)/n, "
           "broadcast and sendrecv 1; GB/s = 1e9 B/s; time = median per op of the slowest rank\n");
    printf("%-15s %12s %7s %12s %-7s %4s %6s %6s %12s %10s %10s  %s\n", "# coll", "bytes", "size", "count", "type",
           "root", "warmup", "iters", "time_us", "algbw", "busbw", "check");
  }

  size_t failed = 0;
  for (int c : o.colls)
    for (size_t si = 0; si < sizes.size(); ++si)
      if (!run_one(ctx, c, sizes[si], si)) ++failed;

  // ncclCommDestroy finalizes (flushes and closes the transport's
  // connections) before it frees; a peer that never closes is a hang.
  g_watchdog.arm(o.timeout, "ncclCommDestroy");
  for (auto& l : ctx.locals) {
    CUDA_CHECK(cudaSetDevice(l.device));
    NCCL_CHECK(ncclCommDestroy(l.comm));
  }
  g_watchdog.disarm();
  for (auto& l : ctx.locals) free_local(l);
  if (ctx.json) fclose(ctx.json);

  if (ctx.printer) {
    if (!o.verify)
      printf("# nccl_check: DONE (%zu results, not verified)\n", checks);
    else if (failed == 0)
      printf("# nccl_check: PASS (%zu of %zu checks verified on all %d ranks)\n", checks, checks, n);
    else
      printf("# nccl_check: FAIL (%zu of %zu checks failed)\n", failed, checks);
  }
  return failed ? kExitVerify : 0;
}
