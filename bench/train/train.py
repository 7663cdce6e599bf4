#!/usr/bin/env python3
"""Real training as the benchmark: one unmodified-PyTorch training script, launched by torchrun, run
once on plain NCCL and once with braid's drop-in preloaded (LD_PRELOAD=libbraid.so).

    torchrun --standalone --nproc_per_node=N bench/train/train.py --model ddp-comm --out X.json
    # one GPU shared by N processes posing as N hosts (bench/rig/one-gpu-rank.sh):
    torchrun --standalone --nproc_per_node=2 --no-python bench/rig/one-gpu-rank.sh \\
        python3 bench/train/train.py --model fsdp --scale rig --out X.json

Models (--model):
  ddp-comm     DDP on a wide residual MLP whose gradients are large next to its compute
               (~270 MiB of fp32 gradients at --scale full): communication-bound.
  fsdp         FSDP2 (fully_shard) on a small transformer: embedding, blocks of attention + MLP,
               each block sharded, then the root; all_gather_into_tensor + reduce_scatter_tensor.
  ddp-compute  DDP on a small convolutional residual net with large activations and few
               parameters: compute-bound, its gradient allreduce hides behind backward.
--compile [MODE] runs any of them through torch.compile (DDP's graph split at its buckets).

Everything that could differ between two runs is pinned (seeds, TF32 off, deterministic algorithms,
fixed cuBLAS workspace, data from a seeded CPU generator that differs per rank and step), so the
only difference between a plain run and a braid run is the summation order inside the collectives.
Steps are timed with torch.cuda.synchronize() around each step (and CUDA events); a step's time is
the slowest rank's. Rank 0 writes --out JSON; bench/train/compare.py compares two or more of them.
"""
import os

# Must be set before CUDA (cuBLAS) is initialised: deterministic cuBLAS needs a fixed workspace.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import argparse  # noqa: E402
import faulthandler  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
MODELS = ("ddp-comm", "fsdp", "ddp-compute")

# Per-model defaults for each --scale. "full": a real GPU per rank (NVLink or PCIe between them).
# "rig": the one-GPU rig, where 2-4 processes share GPU 0 and NCCL goes over loopback sockets at
# 1-4 GB/s, so the models are small enough for the whole bench/train/run.sh matrix to take minutes.
# Any of these can be overridden by its own flag. The learning rates keep the losses finite and
# bounded over the steps run (the wide MLP diverges at 0.02): a diverging run
# amplifies the harmless reassociation differences of 3+ ranks.
PRESETS = {
    "full": {
        "common": {"steps": 40, "warmup": 5},
        # 4096 wide, 4 blocks: ~71 M parameters, ~272 MiB of fp32 gradients, for batch 64.
        "ddp-comm": {"batch": 64, "width": 4096, "depth": 4, "in_dim": 1024, "classes": 16,
                     "lr": 0.002},
        # d_model 1024, 6 blocks, 16 heads, vocab 8192: ~93 M parameters (353 MiB), each block's
        # all-gather ~48 MiB. 4 x 128 tokens per rank keep the compute near the communication.
        "fsdp": {"batch": 4, "width": 1024, "depth": 6, "heads": 16, "vocab": 8192, "seq": 128,
                 "lr": 3e-4},
        # channels 64-128-256, 2 blocks per stage, 32x32 images: ~3.5 M parameters, batch 128.
        "ddp-compute": {"batch": 128, "width": 64, "depth": 2, "image": 32, "classes": 16,
                        "lr": 0.02},
    },
    "rig": {
        "common": {"steps": 20, "warmup": 5},
        # 1536 wide, 6 blocks: ~16 M parameters, ~60 MiB of gradients (tens of ms over sockets).
        "ddp-comm": {"batch": 64, "width": 1536, "depth": 6, "in_dim": 1024, "classes": 16,
                     "lr": 0.002},
        # d_model 256, 4 blocks, 4 heads, vocab 2048, sequence 64: ~4.2 M parameters.
        "fsdp": {"batch": 8, "width": 256, "depth": 4, "heads": 4, "vocab": 2048, "seq": 64,
                 "lr": 1e-3},
        # channels 16-32-64: ~0.2 M parameters, batch 32.
        "ddp-compute": {"batch": 32, "width": 16, "depth": 2, "image": 32, "classes": 16,
                        "lr": 0.02},
    },
}


# ----------------------------------------------------------------------------------------------
# Models


class MLPBlock(nn.Module):
    """Pre-norm residual MLP block: x + fc(relu(norm(x)))."""

    def __init__(self, width):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.fc = nn.Linear(width, width)

    def forward(self, x):
        return x + self.fc(F.relu(self.norm(x)))


class WideMLP(nn.Module):
    """ddp-comm: few, very wide layers, so every FLOP comes with a lot of gradient bytes."""

    def __init__(self, in_dim, width, depth, classes):
        super().__init__()
        self.inp = nn.Linear(in_dim, width)
        self.blocks = nn.Sequential(*[MLPBlock(width) for _ in range(depth)])
        self.norm = nn.LayerNorm(width)
        self.out = nn.Linear(width, classes)

    def forward(self, x):
        return self.out(self.norm(self.blocks(self.inp(x))))


class ConvBlock(nn.Module):
    """Residual conv block: x + conv(relu(norm(conv(relu(norm(x)))))). GroupNorm rather than
    BatchNorm, so DDP has no buffers to broadcast every step."""

    def __init__(self, channels):
        super().__init__()
        self.n1 = nn.GroupNorm(8 if channels % 8 == 0 else 1, channels)
        self.c1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.n2 = nn.GroupNorm(8 if channels % 8 == 0 else 1, channels)
        self.c2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)

    def forward(self, x):
        return x + self.c2(F.relu(self.n2(self.c1(F.relu(self.n1(x))))))


class ConvNet(nn.Module):
    """ddp-compute: three stages (width, 2*width, 4*width channels) of `depth` residual blocks,
    halving the resolution between stages with strided convolutions, then a global mean and a
    linear head. Large activations, few parameters: compute-bound. No pooling layers (some of
    their CUDA backwards have no deterministic implementation)."""

    def __init__(self, width, depth, classes):
        super().__init__()
        layers = [nn.Conv2d(3, width, 3, padding=1, bias=False)]
        ch = width
        for stage in range(3):
            if stage:
                layers.append(nn.Conv2d(ch, ch * 2, 3, stride=2, padding=1, bias=False))
                ch *= 2
            layers.extend(ConvBlock(ch) for _ in range(depth))
        self.features = nn.Sequential(*layers)
        self.norm = nn.GroupNorm(8 if ch % 8 == 0 else 1, ch)
        self.out = nn.Linear(ch, classes)

    def forward(self, x):
        return self.out(F.relu(self.norm(self.features(x))).mean(dim=(2, 3)))


class Attention(nn.Module):
    """Causal multi-head self-attention written out with matmuls and softmax (deterministic on
    every backend, unlike some fused attention backwards)."""

    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(c // self.heads))
        mask = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
        att = att.masked_fill(mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, c)
        return self.proj(y)


class TransformerBlock(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.n1 = nn.LayerNorm(width)
        self.attn = Attention(width, heads)
        self.n2 = nn.LayerNorm(width)
        self.fc1 = nn.Linear(width, 4 * width)
        self.fc2 = nn.Linear(4 * width, width)

    def forward(self, x):
        x = x + self.attn(self.n1(x))
        return x + self.fc2(F.gelu(self.fc1(self.n2(x))))


class Transformer(nn.Module):
    """fsdp: token and position embeddings, `depth` pre-norm blocks, a final norm and an untied
    output head."""

    def __init__(self, vocab, width, depth, heads, seq):
        super().__init__()
        self.tok = nn.Embedding(vocab, width)
        self.pos = nn.Embedding(seq, width)
        self.blocks = nn.ModuleList(TransformerBlock(width, heads) for _ in range(depth))
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)

    def forward(self, idx):
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.tok(idx) + self.pos(pos)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


# ----------------------------------------------------------------------------------------------
# Data: synthetic, different on every rank and step, the same in every run. Generated on the CPU
# from a seeded generator (independent of the GPU and of torch's global RNG), with labels from a
# fixed random 'teacher', so that the loss is a function of the data and of every parameter.


def batch_generator(args, rank, step):
    return torch.Generator().manual_seed(args.seed * 1_000_003 + rank * 10_007 + step)


def make_teacher(args):
    g = torch.Generator().manual_seed(args.seed + 1)
    if args.model == "ddp-comm":
        return torch.randn(args.in_dim, args.classes, generator=g)
    if args.model == "ddp-compute":
        return torch.randn(3 * 4 * 4, args.classes, generator=g)
    return torch.randperm(args.vocab, generator=g)  # fsdp: a fixed token permutation


def make_batch(args, rank, step, teacher):
    g = batch_generator(args, rank, step)
    if args.model == "ddp-comm":
        x = torch.randn(args.batch, args.in_dim, generator=g)
        return x, (x @ teacher).argmax(dim=1)
    if args.model == "ddp-compute":
        x = torch.randn(args.batch, 3, args.image, args.image, generator=g)
        # The label depends on a coarse 4x4 summary of the image.
        coarse = F.adaptive_avg_pool2d(x, 4).flatten(1)
        return x, (coarse @ teacher).argmax(dim=1)
    # fsdp: next-token-like target, the permuted current token shifted by the previous one, so
    # that both the embedding and the attention have something to learn.
    x = torch.randint(0, args.vocab, (args.batch, args.seq), generator=g)
    prev = torch.cat([torch.zeros_like(x[:, :1]), x[:, :-1]], dim=1)
    return x, (teacher[x] + prev) % args.vocab


# ----------------------------------------------------------------------------------------------


def nccl_options(spec):
    """ProcessGroupNCCL.Options whose NCCL config sets the fields `spec` names ("a=1,b=x"); None for ""."""
    if not spec:
        return None
    options = dist.ProcessGroupNCCL.Options()
    for item in spec.split(","):
        name, _, value = item.partition("=")
        if not hasattr(options.config, name):
            raise SystemExit(f"--nccl-config: ncclConfig has no field {name!r}")
        setattr(options.config, name, value if name == "net_name" else int(value))
    return options


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--model", choices=MODELS, required=True)
    p.add_argument("--scale", choices=sorted(PRESETS), default="full",
                   help="size preset: full (a GPU per rank) or rig (ranks sharing one GPU over sockets)")
    p.add_argument("--steps", type=int, help="steps in all, warmup included (losses are kept for all)")
    p.add_argument("--warmup", type=int, help="first steps left out of the step-time median")
    p.add_argument("--batch", type=int, help="samples (sequences) per rank per step")
    p.add_argument("--dtype", choices=sorted(DTYPES), default="float32",
                   help="parameter/gradient dtype (bfloat16 needs a much looser compare tolerance)")
    p.add_argument("--width", type=int, help="MLP width, d_model, or the first conv stage's channels")
    p.add_argument("--depth", type=int, help="MLP blocks, transformer blocks, or conv blocks per stage")
    p.add_argument("--in-dim", type=int, help="ddp-comm: input features")
    p.add_argument("--classes", type=int, help="ddp-comm, ddp-compute: classes")
    p.add_argument("--heads", type=int, help="fsdp: attention heads")
    p.add_argument("--vocab", type=int, help="fsdp: vocabulary")
    p.add_argument("--seq", type=int, help="fsdp: sequence length")
    p.add_argument("--image", type=int, help="ddp-compute: image side")
    p.add_argument("--lr", type=float)
    p.add_argument("--momentum", type=float, default=0.9, help="SGD momentum (the DDP models)")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--compile", nargs="?", const="default", default="",
                   choices=("default", "reduce-overhead", "max-autotune-no-cudagraphs"),
                   help="torch.compile the wrapped model, in this mode (default: not compiled)")
    p.add_argument("--bucket-cap-mb", type=float, default=25.0, help="DDP's bucket_cap_mb (its default: 25)")
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                   help="cpu (with gloo) only to test this script on a machine without a GPU")
    p.add_argument("--nccl-config", default="",
                   help="the NCCL communicator's config through ProcessGroupNCCL.Options, as Megatron sets it: "
                        "comma-separated name=value of its fields (max_ctas=16,cga_cluster_size=2,net_name=Socket)")
    p.add_argument("--out", default="", help="rank 0 writes the JSON results here")
    args = p.parse_args(argv)
    preset = dict(PRESETS[args.scale]["common"], **PRESETS[args.scale][args.model])
    for key, value in preset.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if args.warmup >= args.steps:
        p.error(f"--warmup {args.warmup} leaves no timed step of --steps {args.steps}")
    if args.model == "fsdp" and args.width % args.heads:
        p.error(f"--width {args.width} is not a multiple of --heads {args.heads}")
    return args


def set_determinism():
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    torch.use_deterministic_algorithms(True)


def build(args, device, dtype, world_size, local_rank):
    """The model (same initial weights on every rank: built on the CPU from one seed, then moved),
    the training wrapper around it (DDP or FSDP2), and its optimizer."""
    torch.manual_seed(args.seed)
    if args.model == "ddp-comm":
        model = WideMLP(args.in_dim, args.width, args.depth, args.classes)
    elif args.model == "ddp-compute":
        model = ConvNet(args.width, args.depth, args.classes)
    else:
        model = Transformer(args.vocab, args.width, args.depth, args.heads, args.seq)
    params = sum(p.numel() for p in model.parameters())
    model = model.to(device=device, dtype=dtype)

    if args.model == "fsdp":
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard

        mesh = init_device_mesh(device.type, (world_size,))
        for block in model.blocks:
            fully_shard(block, mesh=mesh)
        fully_shard(model, mesh=mesh)
        opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.0)
        net = torch.compile(model, mode=args.compile) if args.compile else model
        return model, net, opt, params

    ids = [local_rank] if device.type == "cuda" else None
    ddp = DDP(model, device_ids=ids, output_device=local_rank if ids else None,
              bucket_cap_mb=args.bucket_cap_mb)
    opt = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=args.momentum)
    # torch.compile on DDP: its optimizer splits the graph at the buckets, and the gradient
    # all-reduces still come from DDP's hooks between the compiled pieces.
    net = torch.compile(ddp, mode=args.compile) if args.compile else ddp
    return model, net, opt, params


def loss_of(args, net, x, y):
    out = net(x)
    if args.model == "fsdp":
        return F.cross_entropy(out.float().flatten(0, 1), y.flatten())
    return F.cross_entropy(out.float(), y)


def param_checksum(model, device):
    """This rank's float64 sum of the full parameters. FSDP parameters are DTensor shards: each is
    gathered whole first, so that every rank sums the same full model, and the ranks must agree."""
    local = torch.zeros((), dtype=torch.float64, device=device)
    with torch.no_grad():
        for p in model.parameters():
            full = p.full_tensor() if hasattr(p, "full_tensor") else p
            local += full.detach().double().sum()
    return local


def loaded_libraries():
    """Shared objects of NCCL or braid mapped into this process: proof of what the preload did."""
    found = set()
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split()[-1] if len(line.split()) >= 6 else ""
                name = os.path.basename(path)
                if "nccl" in name or "braid" in name:
                    found.add(path)
    except OSError:
        pass
    return sorted(found)


def main(argv=None):
    args = parse_args(argv)
    # A run that hangs can be asked where each Python thread is: kill -USR1 <rank's pid>.
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    rank = int(os.environ["RANK"])
    world_size = int(os.environ["WORLD_SIZE"])
    dtype = DTYPES[args.dtype]
    cuda = args.device == "cuda"

    set_determinism()
    if cuda:
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
    dist.init_process_group(backend="nccl" if cuda else "gloo",
                            pg_options=nccl_options(args.nccl_config) if cuda else None)

    model, net, opt, params = build(args, device, dtype, world_size, local_rank)
    teacher = make_teacher(args)
    nccl = torch.cuda.nccl.version() if cuda else None
    nccl = list(nccl) if isinstance(nccl, tuple) else nccl
    grad_mib = params * dtype.itemsize / 2**20
    if rank == 0:
        print(f"model={args.model} scale={args.scale} world_size={world_size} params={params} "
              f"({grad_mib:.1f} MiB as {args.dtype}) steps={args.steps} warmup={args.warmup} "
              f"batch={args.batch} bucket_cap_mb={args.bucket_cap_mb} torch={torch.__version__} "
              f"nccl={nccl} LD_PRELOAD={os.environ.get('LD_PRELOAD', '')!r}", flush=True)

    def sync():
        if cuda:
            torch.cuda.synchronize(device)

    # losses[k] is rank 0's loss on its own batch at step k, computed before step k's update:
    # losses[0] depends only on the initial weights, losses[1:] on every earlier step's reduced
    # gradients. times[k] is this rank's wall time for step k (zero_grad, forward, backward with
    # its collectives, optimizer step), between two device synchronisations.
    losses, times, event_times = [], [], []
    for step in range(args.steps):
        x, y = make_batch(args, rank, step, teacher)
        x = x.to(device=device, dtype=dtype if x.is_floating_point() else x.dtype)
        y = y.to(device)
        sync()
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = loss_of(args, net, x, y)
        loss.backward()  # DDP's allreduces / FSDP's all-gathers and reduce-scatters run here
        opt.step()
        if cuda:
            end.record()
        sync()
        dt = time.perf_counter() - t0
        value = loss.item()
        losses.append(value)
        times.append(dt)
        event_times.append(start.elapsed_time(end) / 1e3 if cuda else dt)
        if rank == 0:
            print(f"step {step:3d} loss {value!r} ({dt * 1e3:.2f} ms)", flush=True)

    # A step takes as long as its slowest rank: the per-step maximum over ranks.
    t = torch.tensor([times, event_times], dtype=torch.float64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    step_times, step_event_times = t[0].tolist(), t[1].tolist()
    timed = step_times[args.warmup:]

    # Parameter checksum: DDP ranks (and FSDP's gathered parameters) must be bitwise identical,
    # so min == max across ranks; rank 0's own value is recorded.
    local = param_checksum(model, device)
    lo, hi = local.clone(), local.clone()
    dist.all_reduce(lo, op=dist.ReduceOp.MIN)
    dist.all_reduce(hi, op=dist.ReduceOp.MAX)
    checksum, lo, hi = local.item(), lo.item(), hi.item()

    if rank == 0:
        median = statistics.median(timed)
        config = {k: v for k, v in vars(args).items() if k not in ("out",)}
        result = {
            "model": args.model,
            "config": config,
            "world_size": world_size,
            "params": params,
            "grad_mib": grad_mib,
            "steps": args.steps,
            "warmup": args.warmup,
            "losses": losses,
            "step_times_s": step_times,
            "step_event_times_s": step_event_times,
            "rank0_step_times_s": times,
            "median_step_time_s": median,
            "median_step_event_time_s": statistics.median(step_event_times[args.warmup:]),
            "mean_step_time_s": statistics.fmean(timed),
            "param_checksum": checksum,
            "param_checksum_min": lo,
            "param_checksum_max": hi,
            "ranks_agree": lo == hi,
            "torch": torch.__version__,
            "cuda": torch.version.cuda,
            "nccl": nccl,
            "device": torch.cuda.get_device_name(device) if cuda else "cpu",
            "backend": dist.get_backend(),
            "host": socket.gethostname(),
            "ld_preload": os.environ.get("LD_PRELOAD", ""),
            "loaded_libraries": loaded_libraries(),
            "env": {k: v for k, v in sorted(os.environ.items())
                    if k.startswith(("NCCL_", "BRAID_")) and k != "NCCL_HOSTID"},
        }
        print(f"median step {median * 1e3:.3f} ms over {len(timed)} steps; param_checksum {checksum!r} "
              f"ranks_agree={lo == hi} (min {lo!r} max {hi!r})", flush=True)
        if args.out:
            os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
            tmp = args.out + ".tmp"
            with open(tmp, "w") as f:
                json.dump(result, f, indent=1)
            os.replace(tmp, args.out)
            print(f"wrote {args.out}", flush=True)

    # Every rank leaves together (rank 0 was still writing).
    dist.barrier(device_ids=[local_rank]) if cuda else dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
