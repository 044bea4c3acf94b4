"""PyTorch peer of dpfil's mnist-cnn and cifar-cnn (models/arch.go): the clipped
per-sample gradient sum and the FIL step (k one-hot input tangent directions per
sample through the clipped gradient), each in the variants a PyTorch user would try
(issue 30 item 1), so that the benchmark can take the fastest:

  gradient path (PATH grad), VARIANT one of
    vmap:N   functorch vmap(grad) over chunks of N samples (0: the whole batch);
    hooks    Opacus-style per-sample gradients from the layers' inputs and output
             gradients of one batched backward pass (unfold + einsum for a conv,
             einsum for a dense layer), then norms, scales and the scaled sum;
    ghost    ghost clipping: every weight-gradient norm from activations and output
             gradients (a conv's two T×T Gram matrices, a dense layer's ‖a‖²‖δ‖²),
             no per-sample gradient, then one reweighted backward pass;
    mixed    the same with Bu et al.'s per-layer choice: a conv's norm by ghost when
             T·(K+O) < K·O (T output positions, K = C·kh·kw, O out channels), else
             from its unfold + einsum per-sample gradient;
  FIL step (PATH fil), VARIANT fwd:N or rev:N: forward-over-reverse jvp or
    reverse-over-reverse vjp, vmapped over chunks of N samples (0: the whole batch).

MKLDNN=0 in the environment (or the `time` argument) switches
torch.backends.mkldnn off.

Benchmark tool only (docs/perf.md, "Against the best PyTorch variant", says how it is
run and what it measured): dpfil never imports or runs it.

    python3 torch_peer.py check DIR MODEL     # every variant against `dpfilbench export` output
    python3 torch_peer.py time MODEL PATH BATCH K SECONDS [VARIANT [MKLDNN]]   # one JSON line

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

    def forward_record(self, params, X):
        """Batched logits (B×D input) and, for each layer with parameters in order, a
        record (kind, a, z, k, s): its input a (a conv's already padded), its output z
        (a tensor of the autograd graph), kernel size and stride (conv)."""
        h = X.reshape((-1,) + self.input)
        recs, pi = [], 0
        for kind, a in self.layers:
            if kind == "normalize":
                h = (h - self.mean) / self.std
            elif kind == "conv":
                out, k, s, (pt, pb, pl, pr) = a
                if pt or pb or pl or pr:
                    h = F.pad(h, (pl, pr, pt, pb))
                z = F.conv2d(h, params[pi], params[pi + 1], stride=s)
                recs.append(("conv", h, z, k, s))
                h = z
                pi += 2
            elif kind == "tanh":
                h = torch.tanh(h)
            elif kind == "pool":
                h = F.avg_pool2d(h, a[0], a[1])
            elif kind == "flatten":
                h = h.reshape(h.shape[0], -1)
            elif kind == "dense":
                z = F.linear(h, params[pi], params[pi + 1])
                recs.append(("dense", h, z, 0, 0))
                h = z
                pi += 2
        return h, recs


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

    def clipped_sum_vmap(self, params, X, Y, chunk=0):
        """clipped_sum over chunks of chunk samples (0: one call): clipping is per
        sample, so the chunks' sums add up."""
        B = X.shape[0]
        chunk = chunk or B
        if chunk >= B:
            return self.clipped_sum(params, X, Y)
        out = None
        for s in range(0, B, chunk):
            c = self.clipped_sum(params, X[s:s + chunk], Y[s:s + chunk])
            out = c if out is None else out + c
        return out

    def _output_grads(self, params, X, y, retain=False):
        """Records of one batched forward pass and the output gradients δ of every
        layer with parameters for the summed loss (δ of sample b is its own loss's)."""
        with torch.enable_grad():
            p = [t.detach().requires_grad_() for t in params]
            z, recs = self.net.forward_record(p, X)
            losses = F.cross_entropy(z, y, reduction="none")
            ds = torch.autograd.grad(losses.sum(), [r[2] for r in recs], retain_graph=retain)
        return p, losses, recs, ds

    @staticmethod
    def _unfold(a, k, s):
        """A conv's patches per sample: B × (C·k·k) × T."""
        return F.unfold(a.detach(), k, stride=s)

    def per_sample_hooks(self, params, X, y):
        """Opacus-style per-sample gradients (list of B×shape tensors, dpfil's order)."""
        _, _, recs, ds = self._output_grads(params, X, y)
        B = X.shape[0]
        gs = []
        for (kind, a, _, k, s), d in zip(recs, ds):
            if kind == "conv":
                d = d.reshape(B, d.shape[1], -1)                          # B×O×T
                gw = torch.einsum("bot,bkt->bok", d, self._unfold(a, k, s))  # B×O×K
                gs += [gw, d.sum(2)]
            else:
                gs += [torch.einsum("bo,bi->boi", d, a.detach()), d]
        return gs

    def clipped_each_hooks(self, params, X, y):
        gs = self.per_sample_hooks(params, X, y)
        B = X.shape[0]
        flat = torch.cat([t.reshape(B, -1) for t in gs], 1)
        return flat * clip_scale(flat.norm(dim=1))[:, None]

    def clipped_sum_hooks(self, params, X, y):
        """Σ_b s_b g_b from the hook-style per-sample gradients (flat, P values)."""
        gs = self.per_sample_hooks(params, X, y)
        B = X.shape[0]
        sq = sum(t.reshape(B, -1).pow(2).sum(1) for t in gs)
        sc = clip_scale(sq.sqrt())
        return torch.cat([torch.einsum("b,bj->j", sc, t.reshape(B, -1)) for t in gs])

    def clipped_sum_ghost(self, params, X, y, mixed=False):
        """Ghost clipping: per-sample gradient norms from activations and output
        gradients (with mixed, a conv's by unfold + einsum where that is cheaper by
        Bu et al.'s rule), then one reweighted backward pass gives Σ_b s_b g_b."""
        p, losses, recs, ds = self._output_grads(params, X, y, retain=True)
        B = X.shape[0]
        sq = torch.zeros(B, dtype=X.dtype, device=X.device)
        for (kind, a, _, k, s), d in zip(recs, ds):
            if kind == "conv":
                d = d.reshape(B, d.shape[1], -1)           # B×O×T
                u = self._unfold(a, k, s)                  # B×K×T
                K, T, O = u.shape[1], u.shape[2], d.shape[1]
                if mixed and T * (K + O) >= K * O:
                    sq += torch.einsum("bot,bkt->bok", d, u).pow(2).sum((1, 2))
                else:
                    ga = torch.bmm(u.transpose(1, 2), u)   # B×T×T
                    gd = torch.bmm(d.transpose(1, 2), d)
                    sq += (ga * gd).sum((1, 2))
                sq += d.sum(2).pow(2).sum(1)
            else:
                sq += a.detach().pow(2).sum(1) * d.pow(2).sum(1) + d.pow(2).sum(1)
        sc = clip_scale(sq.sqrt()).detach()
        with torch.enable_grad():
            g = torch.autograd.grad((losses * sc).sum(), p)
        return torch.cat([t.reshape(-1) for t in g])

    def grad_variant(self, variant):
        """The clipped-sum function (params, X, Y one-hot, y labels) of a variant name."""
        if variant.startswith("vmap:"):
            c = int(variant[5:])
            return lambda p, X, Y, y: self.clipped_sum_vmap(p, X, Y, c)
        if variant == "hooks":
            return lambda p, X, Y, y: self.clipped_sum_hooks(p, X, y)
        if variant in ("ghost", "mixed"):
            m = variant == "mixed"
            return lambda p, X, Y, y: self.clipped_sum_ghost(p, X, y, m)
        raise ValueError(f"unknown gradient variant {variant!r}")

    def fil_variant(self, variant):
        """The FIL function (params, X, Y, coords) of fwd:N / rev:N, over chunks of N."""
        kind, _, c = variant.partition(":")
        if kind not in ("fwd", "rev") or not c.isdigit():
            raise ValueError(f"unknown FIL variant {variant!r}")
        fil, c = (self.fil_fwd if kind == "fwd" else self.fil_rev), int(c)

        def run(p, X, Y, coords):
            B = X.shape[0]
            n = c or B
            return torch.cat([fil(p, X[s:s + n], Y[s:s + n], coords[s:s + n]) for s in range(0, B, n)])
        return run

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


GRAD_VARIANTS = ("vmap:0", "vmap:2", "hooks", "ghost", "mixed")
FIL_VARIANTS = ("fwd:0", "fwd:2", "rev:0", "rev:2")


def set_mkldnn(on):
    torch.backends.mkldnn.enabled = bool(on)


def check(dirname, model):
    """Compares every variant's outputs with dpfil's exported ones, with mkldnn on
    and off; exit status 1 on a mismatch."""
    torch.set_default_dtype(torch.float32)
    dev = device()
    peer = Peer(model)
    params = peer.net.unflatten(torch.from_numpy(load(dirname, "params.npy")).to(dev))
    X = torch.from_numpy(load(dirname, "x.npy")).to(dev)
    y = torch.from_numpy(load(dirname, "y.npy")).to(dev)
    Y = F.one_hot(y, 10).float()
    coords = torch.from_numpy(load(dirname, "coords.npy")).to(dev)
    want = {k: load(dirname, k + ".npy") for k in ("clipped", "sum", "losses", "fil")}
    ok = True
    for mk in ((True, False) if dev.type == "cpu" else (True,)):
        set_mkldnn(mk)
        got = [
            ("losses", "losses", peer.per_sample_losses(params, X, y)),
            ("clipped", "clipped vmap", peer.clipped_each(params, X, Y)),
            ("clipped", "clipped hooks", peer.clipped_each_hooks(params, X, y)),
        ]
        got += [("sum", "sum " + v, peer.grad_variant(v)(params, X, Y, y)) for v in GRAD_VARIANTS]
        got += [("fil", "fil " + v, peer.fil_variant(v)(params, X, Y, coords)) for v in FIL_VARIANTS]
        for k, name, g in got:
            w = want[k].astype(np.float64)
            g = g.detach().cpu().numpy().astype(np.float64)
            scale = np.max(np.abs(w))
            err = np.max(np.abs(g - w)) / scale
            # float32 tolerance relative to the largest value: a few float32 ulp per
            # accumulated term of a P-long (or k-direction) sum.
            tol = 2e-4 if k == "fil" else 5e-5
            status = "ok" if err <= tol else "MISMATCH"
            ok = ok and err <= tol
            print(f"{model} mkldnn {'on ' if mk else 'off'} {name:13s} max |torch - dpfil| / max |dpfil| = "
                  f"{err:.2e} (tol {tol:.0e}, torch on {dev}) {status}")
    set_mkldnn(True)
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


def time_path(model, path, batch, k, seconds, variant="", mkldnn=True, warmup=None):
    """Runs the path's variant (grad: vmap:N, hooks, ghost, mixed; fil: fwd:N, rev:N)
    warmup times untimed, then for at least seconds (at least one call); returns a
    dict with wall and process CPU seconds."""
    peer, params, X, Y, coords = make_problem(model, batch, k)
    y = Y.argmax(1)
    set_mkldnn(mkldnn)
    if path == "grad":
        variant = variant or "vmap:0"
        fn = peer.grad_variant(variant)

        def call():
            with torch.no_grad():
                fn(params, X, Y, y)
    else:
        variant = variant or "fwd:0"
        fn = peer.fil_variant(variant)

        def call():
            with torch.no_grad():
                fn(params, X, Y, coords)
    dev = X.device
    cuda = dev.type == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    if warmup is None:
        warmup = int(os.environ.get("TORCH_WARMUP", "1" if not cuda else "2"))
    for _ in range(warmup):
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
           "variant": variant, "mkldnn": bool(mkldnn), "threads": torch.get_num_threads(),
           "calls": calls, "samples": calls * batch, "warmup_calls": warmup,
           "wall_s": wall, "cpu_s": cpu_seconds() - c0, "samples_per_s": calls * batch / wall,
           "device": str(dev), "torch": torch.__version__}
    if cuda:
        out.update({"gpu_s": gpu_s, "gpu_name": torch.cuda.get_device_name(dev),
                    "tf32_matmul": torch.backends.cuda.matmul.allow_tf32, "tf32_cudnn": torch.backends.cudnn.allow_tf32})
    set_mkldnn(True)
    return out


def main(argv):
    if len(argv) >= 3 and argv[0] == "check":
        return check(argv[1], argv[2])
    if len(argv) >= 6 and argv[0] == "time":
        torch.set_num_threads(int(os.environ.get("TORCH_THREADS", "2")))
        variant = argv[6] if len(argv) > 6 else ""
        rest = argv[7:]
        if variant in ("fwd", "rev"):  # the older form JVP [CHUNK] (scripts/gpu-peer-tune.sh)
            variant += ":" + (rest[0] if rest else "0")
            rest = rest[1:]
        mk = (rest[0] if rest else os.environ.get("MKLDNN", "1")) != "0"
        try:
            print(json.dumps(time_path(argv[1], argv[2], int(argv[3]), int(argv[4]), float(argv[5]), variant, mk)))
        except ValueError as e:
            print(f"torch_peer.py time: {e}", file=sys.stderr)
            return 2
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
