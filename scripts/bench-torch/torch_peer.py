"""PyTorch peer of dpfil's mnist-cnn and cifar-cnn (models/arch.go): per-sample
clipped gradients (functorch vmap(grad)) and the FIL step (k one-hot input tangent
directions per sample through the clipped gradient, two jvp formulations).

Benchmark tool only (scripts/bench-torch/README.md): dpfil never imports or runs it.

    python3 torch_peer.py check DIR MODEL     # compare with `dpfilbench export` output
    python3 torch_peer.py time MODEL PATH BATCH K SECONDS [JVP [CHUNK]]   # one JSON line

TORCH_DEVICE=cuda runs both on the GPU (scripts/gpu-check.sh) with TF32 off for
matmuls and cuDNN convolutions (true float32, as dpfil's cuBLAS calls), times
TORCH_WARMUP (default 2) untimed calls first, synchronises after every call and
reports the GPU time between CUDA events beside the wall time.

The parameter layout is dpfil's (LayerSpec): conv W [Out][InC][KH][KW] then b, dense
W [Out][In] then b, layer after layer, which is also torch's conv2d/linear layout.
Clipping is dpfil bench engine's: smooth, C = 1, exact GELU:
g~ = g / (GELU(|g|/C - 1) + 1).
"""
import json
import math
import os
import resource
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
try:  # torch ≥ 2.0; functorch for Debian's torch 1.13
    from torch.func import grad, jvp, vjp, vmap
except ImportError:
    from functorch import grad, jvp, vjp, vmap


def device():
    """The device of $TORCH_DEVICE (cpu by default); on cuda, TF32 is switched off."""
    dev = torch.device(os.environ.get("TORCH_DEVICE", "cpu"))
    if dev.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    return dev

CIFAR_MEAN = (0.4914, 0.4822, 0.4465)
CIFAR_STD = (0.2470, 0.2435, 0.2616)


def same_pad(n, k, stride):
    out = (n + stride - 1) // stride
    total = max((out - 1) * stride + k - n, 0)
    return total // 2, total - total // 2


class Net:
    """A pure-function network: layers as (kind, config), params a list of tensors."""

    def __init__(self, name):
        self.name = name
        if name == "mnist-cnn":
            self.input = (1, 28, 28)
            # (kind, args): conv (out, k, stride, (pt, pb, pl, pr)), pool (k, stride)
            self.layers = [
                ("conv", (16, 8, 2, same_pad(28, 8, 2) + same_pad(28, 8, 2))),
                ("tanh", None), ("pool", (2, 1)),
                ("conv", (32, 4, 2, (0, 0, 0, 0))), ("tanh", None), ("pool", (2, 1)),
                ("flatten", None), ("dense", 32), ("tanh", None), ("dense", 10),
            ]
        elif name == "cifar-cnn":
            self.input = (3, 32, 32)
            self.layers = [("normalize", None)]
            for out, hw in ((32, 32), (64, 16), (128, 8)):
                p = same_pad(hw, 3, 1) + same_pad(hw, 3, 1)
                self.layers += [("conv", (out, 3, 1, p)), ("tanh", None),
                                ("conv", (out, 3, 1, p)), ("tanh", None), ("pool", (2, 2))]
            self.layers += [("flatten", None), ("dense", 128), ("tanh", None), ("dense", 10)]
        else:
            raise ValueError(name)
        # Parameter shapes in dpfil's flat order.
        self.shapes = []
        c, h, w = self.input
        flat = None
        for kind, a in self.layers:
            if kind == "conv":
                out, k, s, (pt, pb, pl, pr) = a
                self.shapes += [(out, c, k, k), (out,)]
                c, h, w = out, (h + pt + pb - k) // s + 1, (w + pl + pr - k) // s + 1
            elif kind == "pool":
                k, s = a
                h, w = (h - k) // s + 1, (w - k) // s + 1
            elif kind == "flatten":
                flat = c * h * w
            elif kind == "dense":
                self.shapes += [(a, flat), (a,)]
                flat = a
        self.nparams = sum(int(np.prod(s)) for s in self.shapes)
        self.d = int(np.prod(self.input))
        self.mean = torch.tensor(CIFAR_MEAN, device=device()).view(3, 1, 1)
        self.std = torch.tensor(CIFAR_STD, device=device()).view(3, 1, 1)

    def unflatten(self, flat):
        out, off = [], 0
        for s in self.shapes:
            n = int(np.prod(s))
            out.append(flat[off:off + n].reshape(s).clone())
            off += n
        return tuple(out)

    def forward(self, params, x):
        """Logits of one sample x (D values) or a batch (B×D)."""
        h = x.reshape((-1,) + self.input)
        pi = 0
        for kind, a in self.layers:
            if kind == "normalize":
                h = (h - self.mean) / self.std
            elif kind == "conv":
                out, k, s, (pt, pb, pl, pr) = a
                if pt == pb and pl == pr:
                    h = F.conv2d(h, params[pi], params[pi + 1], stride=s, padding=(pt, pl))
                else:
                    h = F.conv2d(F.pad(h, (pl, pr, pt, pb)), params[pi], params[pi + 1], stride=s)
                pi += 2
            elif kind == "tanh":
                h = torch.tanh(h)
            elif kind == "pool":
                h = F.avg_pool2d(h, a[0], a[1])
            elif kind == "flatten":
                h = h.reshape(h.shape[0], -1)
            elif kind == "dense":
                h = F.linear(h, params[pi], params[pi + 1])
                pi += 2
        return h


def clip_scale(norm, C=1.0):
    """Smooth clipping's factor s(|g|) = 1/(GELU(|g|/C - 1) + 1), exact GELU."""
    return 1.0 / (F.gelu(norm / C - 1.0) + 1.0)


class Peer:
    def __init__(self, name):
        self.net = Net(name)

        def loss(params, x, y):
            # softmax cross-entropy written out (nll_loss has no forward-mode AD
            z = self.net.forward(params, x).reshape(-1)
            # in torch 1.13); y is the one-hot label (vmap cannot index by a tensor)
            return torch.logsumexp(z, 0) - (z * y).sum()

        self.loss = loss
        self.grad1 = grad(loss)
        # per-sample gradients of a batch: tuple of (B, *shape)
        self.psg = vmap(self.grad1, in_dims=(None, 0, 0))

        def clipped_flat(params, x, y):
            g = self.grad1(params, x, y)
            flat = torch.cat([t.reshape(-1) for t in g])
            return flat * clip_scale(torch.linalg.vector_norm(flat))

        self.clipped_flat = clipped_flat

    def per_sample_losses(self, params, X, Y):
        z = self.net.forward(params, X)
        return F.cross_entropy(z, Y, reduction="none")

    def clipped_sum(self, params, X, Y):
        """Y: one-hot labels (B×10). Sum over the batch of the clipped per-sample gradients (flat, P values)."""
        g = self.psg(params, X, Y)
        B = X.shape[0]
        sq = sum(t.reshape(B, -1).pow(2).sum(1) for t in g)
        sc = clip_scale(sq.sqrt())
        return torch.cat([(t.reshape(B, -1) * sc[:, None]).sum(0) for t in g])

    def clipped_each(self, params, X, Y):
        g = self.psg(params, X, Y)
        B = X.shape[0]
        flat = torch.cat([t.reshape(B, -1) for t in g], 1)
        return flat * clip_scale(flat.norm(dim=1))[:, None]

    def fil_fwd(self, params, X, Y, coords):
        """Σ_j |J e_{coords[s,j]}|² per sample; forward-over-reverse (functorch jvp)."""
        E = F.one_hot(coords, self.net.d).to(X.dtype)  # B×k×D, built outside vmap

        def one_dir(x, y, e):
            _, t = jvp(lambda xx: self.clipped_flat(params, xx, y), (x,), (e,))
            return t.pow(2).sum()

        per_dir = vmap(vmap(one_dir, in_dims=(None, None, 0)), in_dims=(0, 0, 0))
        return per_dir(X, Y, E).sum(1)

    def fil_rev(self, params, X, Y, coords):
        """The same by reverse-over-reverse: J e = vjp of (u ↦ Jᵀu) at e."""
        E = F.one_hot(coords, self.net.d).to(X.dtype)

        def sample(x, y, E):
            f = lambda xx: self.clipped_flat(params, xx, y)
            g, vjp_fn = vjp(f, x)
            _, vjp2 = vjp(lambda u: vjp_fn(u)[0], torch.zeros_like(g))
            t = vmap(lambda e: vjp2(e)[0])(E)
            return t.pow(2).sum()

        return vmap(sample)(X, Y, E)


def load(dirname, name):
    return np.load(os.path.join(dirname, name))


def check(dirname, model):
    """Compares the peer's outputs with dpfil's exported ones; exit status 1 on a mismatch."""
    torch.set_default_dtype(torch.float32)
    dev = device()
    peer = Peer(model)
    params = peer.net.unflatten(torch.from_numpy(load(dirname, "params.npy")).to(dev))
    X = torch.from_numpy(load(dirname, "x.npy")).to(dev)
    y = torch.from_numpy(load(dirname, "y.npy")).to(dev)
    Y = F.one_hot(y, 10).float()
    coords = torch.from_numpy(load(dirname, "coords.npy")).to(dev)
    want = {k: load(dirname, k + ".npy") for k in ("clipped", "sum", "losses", "fil")}
    got = {
        "losses": peer.per_sample_losses(params, X, y).detach().cpu().numpy(),
        "clipped": peer.clipped_each(params, X, Y).detach().cpu().numpy(),
        "sum": peer.clipped_sum(params, X, Y).detach().cpu().numpy(),
        "fil": peer.fil_fwd(params, X, Y, coords).detach().cpu().numpy(),
        "fil_rev": peer.fil_rev(params, X, Y, coords).detach().cpu().numpy(),
    }
    ok = True
    for k, g in got.items():
        w = want[k.replace("_rev", "")].astype(np.float64)
        g = g.astype(np.float64)
        scale = np.max(np.abs(w))
        err = np.max(np.abs(g - w)) / scale
        # float32 tolerance relative to the largest value: a few float32 ulp per
        # accumulated term of a P-long (or k-direction) sum.
        tol = 2e-4 if k.startswith("fil") else 5e-5
        status = "ok" if err <= tol else "MISMATCH"
        ok = ok and err <= tol
        print(f"{model} {k:8s} max |torch - dpfil| / max |dpfil| = {err:.2e} (tol {tol:.0e}, torch on {dev}) {status}")
    return 0 if ok else 1


def cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def make_problem(model, batch, k, seed=1):
    peer = Peer(model)
    dev = device()
    g = torch.Generator().manual_seed(seed)
    params = peer.net.unflatten((torch.randn(peer.net.nparams, generator=g) * 0.05).to(dev))
    X = torch.rand(batch, peer.net.d, generator=g).to(dev)
    Y = F.one_hot(torch.randint(0, 10, (batch,), generator=g), 10).float().to(dev)
    coords = torch.randint(0, peer.net.d, (batch, k), generator=g).to(dev)
    return peer, params, X, Y, coords


def time_path(model, path, batch, k, seconds, jvp_kind="fwd", chunk=0):
    """Runs the path once to warm up, then for at least seconds; returns a dict."""
    peer, params, X, Y, coords = make_problem(model, batch, k)
    chunk = chunk or batch
    if path == "grad":
        def call():
            with torch.no_grad():
                peer.clipped_sum(params, X, Y)
    else:
        fil = peer.fil_fwd if jvp_kind == "fwd" else peer.fil_rev

        def call():
            with torch.no_grad():
                for s in range(0, batch, chunk):
                    fil(params, X[s:s + chunk], Y[s:s + chunk], coords[s:s + chunk])
    dev = X.device
    cuda = dev.type == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    warmup = int(os.environ.get("TORCH_WARMUP", "1" if not cuda else "2"))
    for _ in range(max(warmup, 1)):
        call()
    sync()
    calls, gpu_s = 0, 0.0
    t0, c0 = time.perf_counter(), cpu_seconds()
    while calls == 0 or time.perf_counter() - t0 < seconds:
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
        call()
        if cuda:
            end.record()
            end.synchronize()
            gpu_s += start.elapsed_time(end) / 1e3
        calls += 1
    wall = time.perf_counter() - t0
    out = {"model": model, "path": path, "batch": batch, "coords": k if path == "fil" else 0,
           "jvp": jvp_kind if path == "fil" else "", "threads": torch.get_num_threads(),
           "calls": calls, "samples": calls * batch, "warmup_calls": max(warmup, 1),
           "wall_s": wall, "cpu_s": cpu_seconds() - c0, "samples_per_s": calls * batch / wall,
           "device": str(dev), "torch": torch.__version__, "chunk": chunk}
    if cuda:
        out.update({"gpu_s": gpu_s, "gpu_name": torch.cuda.get_device_name(dev),
                    "tf32_matmul": torch.backends.cuda.matmul.allow_tf32, "tf32_cudnn": torch.backends.cudnn.allow_tf32})
    return out


def main(argv):
    if len(argv) >= 3 and argv[0] == "check":
        return check(argv[1], argv[2])
    if len(argv) >= 6 and argv[0] == "time":
        torch.set_num_threads(int(os.environ.get("TORCH_THREADS", "2")))
        jk = argv[6] if len(argv) > 6 else "fwd"
        chunk = int(argv[7]) if len(argv) > 7 else 0
        print(json.dumps(time_path(argv[1], argv[2], int(argv[3]), int(argv[4]), float(argv[5]), jk, chunk)))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
