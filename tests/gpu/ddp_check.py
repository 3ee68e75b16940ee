#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""PyTorch DistributedDataParallel training over whatever NCCL transport the
environment selects; one process per GPU, every result checked.

Each rank trains the same model (an MLP, its initial weights from one seed;
DDP broadcasts rank 0's) on data of its own (a generator seeded by seed,
rank and step), for --steps steps of SGD. DDP all-reduces the gradients in
buckets through NCCL, in GPU memory. Checks, on rank 0:

- after the last step every rank's parameters are bit-for-bit equal (a
  digest of every parameter's bytes), as DDP's all-reduce must leave them;
- every step's loss is finite.

It writes one JSON object (--out): the losses of every rank and step, the
parameter digests, the torch and NCCL versions and the wall time per step.

`ddp_check.py --compare A.json B.json [--rtol R]` compares two such runs of
the same seed (run-ddp.sh: tb5 against SHM): every rank's loss at every
step equal within the relative tolerance R (default 0: bit for bit; with
more than two ranks NCCL may sum in another order on another transport),
and says how many were bit for bit equal and the largest difference.

Exit status: 0 when the checks pass, 1 when one fails, 2 on bad usage.
"""

import argparse
import hashlib
import json
import math
import os
import sys
import time


def compare(argv):
    p = argparse.ArgumentParser(prog="ddp_check.py --compare")
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--rtol", type=float, default=0.0)
    a = p.parse_args(argv)
    runs = []
    for path in (a.a, a.b):
        with open(path) as f:
            runs.append(json.load(f))
    ra, rb = runs
    keys = ("nranks", "steps", "width", "batch", "seed", "bucket_mb")
    if any(ra.get(k) != rb.get(k) for k in keys):
        print(f"ddp_check: FAIL the runs differ in set-up: "
              f"{[(k, ra.get(k), rb.get(k)) for k in keys if ra.get(k) != rb.get(k)]}")
        return 1
    exact = total = 0
    worst = 0.0
    for x, y in zip(ra["ranks"], rb["ranks"]):
        for i, (u, v) in enumerate(zip(x["losses"], y["losses"])):
            total += 1
            exact += u == v
            rel = abs(u - v) / max(abs(u), abs(v), 1e-30)
            worst = max(worst, rel)
    ok = worst <= a.rtol and total == ra["nranks"] * ra["steps"]
    print(f"ddp_check: {'PASS' if ok else 'FAIL'} losses of {a.a} against {a.b}: "
          f"{exact} of {total} (rank, step) bit for bit equal, largest relative "
          f"difference {worst:.3g} (allowed {a.rtol:g}); parameters "
          f"{'equal' if ra['ranks'][0]['digest'] == rb['ranks'][0]['digest'] else 'not equal'} "
          f"between the runs")
    return 0 if ok else 1


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--nranks", type=int, default=2, help="processes, one GPU each (default 2)")
    p.add_argument("--steps", type=int, default=20, help="training steps (default 20)")
    p.add_argument("--width", type=int, default=2048,
                   help="hidden width of the MLP (default 2048: about 12.6M parameters, "
                        "50 MiB of gradients per step)")
    p.add_argument("--batch", type=int, default=64, help="samples per rank per step (default 64)")
    p.add_argument("--seed", type=int, default=1234, help="seed of weights and data (default 1234)")
    p.add_argument("--bucket-mb", type=int, default=25,
                   help="DDP's bucket_cap_mb: the size of each all-reduce (default 25, DDP's own)")
    p.add_argument("--init-file", required=True,
                   help="a path that does not exist yet: the ranks meet through it (file://)")
    p.add_argument("--out", required=True, help="where rank 0 writes the JSON result")
    a = p.parse_args()
    if not 2 <= a.nranks <= 16:
        p.error("--nranks: 2 to 16")
    if a.steps < 1 or a.width < 8 or a.batch < 1 or a.bucket_mb < 1:
        p.error("--steps, --width, --batch and --bucket-mb must be positive (width >= 8)")
    if os.path.exists(a.init_file):
        p.error(f"--init-file {a.init_file} exists: a stale one would join a dead group")
    return a


def digest(model):
    """sha256 of every parameter's bytes, in order."""
    import torch
    h = hashlib.sha256()
    for name, prm in model.named_parameters():
        h.update(name.encode())
        h.update(prm.detach().to("cpu").contiguous().view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def rank_main(rank, a, queue):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.cuda.set_device(rank)
    dev = torch.device("cuda", rank)
    dist.init_process_group("nccl", init_method="file://" + a.init_file,
                            rank=rank, world_size=a.nranks)
    torch.manual_seed(a.seed)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    model = torch.nn.Sequential(
        torch.nn.Linear(a.width, a.width), torch.nn.ReLU(),
        torch.nn.Linear(a.width, a.width), torch.nn.ReLU(),
        torch.nn.Linear(a.width, a.width), torch.nn.ReLU(),
        torch.nn.Linear(a.width, 16)).to(dev)
    ddp = DDP(model, device_ids=[rank], bucket_cap_mb=a.bucket_mb)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)
    losses, times = [], []
    for step in range(a.steps):
        g = torch.Generator(device="cpu").manual_seed(a.seed * 1000003 + rank * 1009 + step)
        x = torch.randn(a.batch, a.width, generator=g).to(dev)
        y = torch.randn(a.batch, 16, generator=g).to(dev)
        torch.cuda.synchronize(dev)
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(ddp(x), y)
        loss.backward()
        opt.step()
        torch.cuda.synchronize(dev)
        times.append(time.perf_counter() - t0)
        losses.append(loss.item())
    result = {"rank": rank, "losses": losses, "step_s": times, "digest": digest(model)}
    everyone = [None] * a.nranks
    dist.all_gather_object(everyone, result)
    if rank == 0:
        queue.put({"ranks": everyone, "torch": torch.__version__,
                   "nccl": ".".join(str(v) for v in torch.cuda.nccl.version())})
    dist.barrier()
    dist.destroy_process_group()


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--compare":
        return compare(sys.argv[2:])
    a = parse_args()
    import torch
    import torch.multiprocessing as mp
    if torch.cuda.device_count() < a.nranks:
        print(f"ddp_check: {a.nranks} ranks need {a.nranks} GPUs, "
              f"{torch.cuda.device_count()} visible", file=sys.stderr)
        return 2
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    t0 = time.perf_counter()
    procs = [ctx.Process(target=rank_main, args=(r, a, queue)) for r in range(a.nranks)]
    for p in procs:
        p.start()
    got = None
    try:
        got = queue.get(timeout=900)
    except Exception as e:  # queue.Empty, or a rank that died
        print(f"ddp_check: no result from rank 0: {e!r}", file=sys.stderr)
    for p in procs:
        p.join(timeout=120)
        if p.is_alive():
            p.kill()
    codes = [p.exitcode for p in procs]
    if got is None or any(c != 0 for c in codes):
        print(f"ddp_check: ranks exited with {codes}", file=sys.stderr)
        return 1
    ranks = got["ranks"]
    problems = []
    digests = {r["digest"] for r in ranks}
    if len(digests) != 1:
        problems.append("the ranks' parameters differ after the last step: " +
                        ", ".join(f"rank {r['rank']} {r['digest'][:16]}" for r in ranks))
    for r in ranks:
        bad = [i for i, v in enumerate(r["losses"]) if not math.isfinite(v)]
        if bad:
            problems.append(f"rank {r['rank']}: loss not finite at steps {bad}")
    got.update({"nranks": a.nranks, "steps": a.steps, "width": a.width, "batch": a.batch,
                "seed": a.seed, "bucket_mb": a.bucket_mb, "wall_s": time.perf_counter() - t0,
                "problems": problems})
    with open(a.out, "w") as f:
        json.dump(got, f, indent=1)
    for msg in problems:
        print("ddp_check: FAIL " + msg)
    print(f"ddp_check: {a.nranks} ranks, {a.steps} steps, torch {got['torch']} NCCL {got['nccl']}: "
          f"parameters {'equal' if len(digests) == 1 else 'DIFFERENT'} on every rank, "
          f"last loss {ranks[0]['losses'][-1]:.6g}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
