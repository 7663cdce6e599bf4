#!/usr/bin/env python3
"""Small deterministic DDP training run, standard PyTorch only, for comparing braid's NCCL drop-in
(LD_PRELOAD=libbraid.so) with plain NCCL.

Launch with torchrun (one process per GPU):

    python3 -m torch.distributed.run --standalone --nproc_per_node=N bench/ddp/train_ddp.py --out X.json

Everything that could differ between two runs is pinned (seeds, TF32 off, deterministic
algorithms, fixed cuBLAS workspace), so that the only source of difference between a plain-NCCL run
and a braid run is the summation order inside the gradient allreduce. Rank 0 writes the per-step
losses and a parameter checksum to --out; bench/ddp/compare_losses.py compares two such files.
"""
import os

# Must be set before CUDA (cuBLAS) is initialised: deterministic cuBLAS needs a fixed workspace.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import argparse  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


class Block(nn.Module):
    """Pre-norm residual MLP block: x + fc(relu(norm(x))). The residual and the norm keep the
    gradients of every layer (and so of every DDP bucket) at a useful size through a deep stack."""

    def __init__(self, width):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.fc = nn.Linear(width, width)

    def forward(self, x):
        return x + self.fc(F.relu(self.norm(x)))


class MLP(nn.Module):
    def __init__(self, in_dim, width, depth, classes):
        super().__init__()
        self.inp = nn.Linear(in_dim, width)
        self.blocks = nn.Sequential(*[Block(width) for _ in range(depth)])
        self.norm = nn.LayerNorm(width)
        self.out = nn.Linear(width, classes)

    def forward(self, x):
        return self.out(self.norm(self.blocks(self.inp(x))))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--batch", type=int, default=64, help="samples per rank per step")
    p.add_argument("--dtype", choices=sorted(DTYPES), default="float32",
                   help="parameter/gradient dtype (bfloat16 needs a much looser compare tolerance)")
    p.add_argument("--width", type=int, default=2048)
    p.add_argument("--depth", type=int, default=11, help="residual blocks of width x width")
    p.add_argument("--in-dim", type=int, default=1024)
    p.add_argument("--classes", type=int, default=16)
    p.add_argument("--lr", type=float, default=0.02)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--bucket-cap-mb", type=float, default=25.0, help="DDP's bucket_cap_mb (its default)")
    p.add_argument("--out", default="", help="rank 0 writes the JSON results here")
    return p.parse_args()


def make_batch(args, rank, step, teacher):
    """Synthetic data, different on every rank and step, the same in every run. Generated on the CPU
    from a seeded generator (independent of the GPU and of torch's global RNG), labels from a fixed
    random linear 'teacher' so the loss actually falls."""
    g = torch.Generator().manual_seed(args.seed * 1_000_003 + rank * 10_007 + step)
    x = torch.randn(args.batch, args.in_dim, generator=g)
    y = (x @ teacher).argmax(dim=1)
    return x, y


def main():
    args = parse_args()
    local_rank = int(os.environ["LOCAL_RANK"])
    rank = int(os.environ["RANK"])
    world_size = int(os.environ["WORLD_SIZE"])
    dtype = DTYPES[args.dtype]

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    torch.use_deterministic_algorithms(True)

    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)
    dist.init_process_group(backend="nccl")

    # Same initial weights on every rank (DDP also broadcasts rank 0's at construction).
    torch.manual_seed(args.seed)
    model = MLP(args.in_dim, args.width, args.depth, args.classes).to(device=device, dtype=dtype)
    teacher = torch.randn(args.in_dim, args.classes, generator=torch.Generator().manual_seed(args.seed + 1))
    params = sum(p.numel() for p in model.parameters())

    ddp = DDP(model, device_ids=[local_rank], output_device=local_rank, bucket_cap_mb=args.bucket_cap_mb)
    opt = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=args.momentum)

    if rank == 0:
        print(f"world_size={world_size} params={params} ({params * dtype.itemsize / 2**20:.1f} MiB as {args.dtype}) "
              f"bucket_cap_mb={args.bucket_cap_mb} torch={torch.__version__} nccl={torch.cuda.nccl.version()} "
              f"LD_PRELOAD={os.environ.get('LD_PRELOAD', '')!r}", flush=True)

    # losses[k] is rank 0's loss on its own batch at step k, computed before step k's update:
    # losses[0] depends only on the initial weights (and DDP's broadcast), losses[1:] on the
    # allreduced gradients of every earlier step.
    losses = []
    for step in range(args.steps):
        x, y = make_batch(args, rank, step, teacher)
        x, y = x.to(device=device, dtype=dtype), y.to(device)
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(ddp(x).float(), y)
        loss.backward()  # DDP allreduces the gradient buckets here
        opt.step()
        value = loss.item()  # synchronises
        dt = time.perf_counter() - t0
        losses.append(value)
        if rank == 0:
            print(f"step {step:3d} loss {value!r} ({dt * 1e3:.1f} ms)", flush=True)

    # Parameter checksum: every rank's sum of its parameters in float64. DDP ranks must hold
    # bitwise identical parameters, so min == max across ranks; rank 0's own value is recorded.
    with torch.no_grad():
        local = torch.zeros((), dtype=torch.float64, device=device)
        for p in model.parameters():
            local += p.detach().double().sum()
    lo, hi = local.clone(), local.clone()
    dist.all_reduce(lo, op=dist.ReduceOp.MIN)
    dist.all_reduce(hi, op=dist.ReduceOp.MAX)
    checksum, lo, hi = local.item(), lo.item(), hi.item()

    if rank == 0:
        nccl = torch.cuda.nccl.version()
        result = {
            "losses": losses,
            "world_size": world_size,
            "steps": args.steps,
            "batch": args.batch,
            "dtype": args.dtype,
            "params": params,
            "param_checksum": checksum,
            "param_checksum_min": lo,
            "param_checksum_max": hi,
            "ranks_agree": lo == hi,
            "torch": torch.__version__,
            "nccl": list(nccl) if isinstance(nccl, tuple) else nccl,
            "ld_preload": os.environ.get("LD_PRELOAD", ""),
        }
        print(f"param_checksum {checksum!r} ranks_agree={lo == hi} (min {lo!r} max {hi!r})", flush=True)
        if args.out:
            os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
            with open(args.out, "w") as f:
                json.dump(result, f, indent=1)
            print(f"wrote {args.out}", flush=True)

    dist.destroy_process_group()


if __name__ == "__main__":
    main()
