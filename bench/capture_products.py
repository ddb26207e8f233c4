"""Does a product give the same bits eager and replayed from a CUDA graph, in tf32?

    python bench/capture_products.py
    CUBLAS_WORKSPACE_CONFIG=:4096:8 python bench/capture_products.py

A replayed training iteration equals the step-by-step one only if cuBLAS runs the same
kernel for each product in both. This times nothing: for the products of a Tag update
(forward with and without the fused ReLU, the two heads as one, and the backward's input
and weight gradients, whose long sums cuBLAS may split) at a rollout step's rows (55,000)
and an update part's (1,000,000), it runs each product eagerly twice and as a recorded
graph twice, with tf32 on, and prints whether the four results are equal bit for bit and
the largest difference between eager and replayed.
"""

import os

import torch
import torch.nn.functional as F

torch.backends.cuda.matmul.allow_tf32 = True
dev = "cuda"
print("env", {k: os.environ.get(k)
             for k in ("CUBLAS_WORKSPACE_CONFIG", "CUBLASLT_WORKSPACE_SIZE")})
g = torch.Generator(device=dev).manual_seed(0)


def case(name, fn, *shapes):
    xs = [torch.randn(s, device=dev, generator=g) for s in shapes]
    e1 = fn(*xs).clone()
    e2 = fn(*xs).clone()
    statics = [x.clone() for x in xs]
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            fn(*statics)
    torch.cuda.current_stream().wait_stream(s)
    gr = torch.cuda.CUDAGraph()
    with torch.cuda.graph(gr):
        out = fn(*statics)
    gr.replay()
    torch.cuda.synchronize()
    c1 = out.clone()
    gr.replay()
    c2 = out.clone()
    print(f"{name:42s} eager==eager {torch.equal(e1, e2)!s:5} "
          f"graph==graph {torch.equal(c1, c2)!s:5} eager==graph {torch.equal(e1, c1)!s:5} "
          f"maxdiff {float((e1 - c1).abs().max()):.3g}", flush=True)


for n in (55_000, 1_000_000):
    case(f"linear fwd N={n}", lambda x, w, b: F.linear(x, w, b), (n, 256), (256, 256), (256,))
    case(f"addmm_relu fwd N={n}", lambda x, w, b: torch._addmm_activation(b, x, w.t()),
         (n, 256), (256, 256), (256,))
    case(f"heads fwd N={n}", lambda x, w, b: F.linear(x, w, b), (n, 256), (8, 256), (8,))
    case(f"grad_x N={n}", lambda gy, w: gy @ w, (n, 256), (256, 256))
    case(f"grad_w N={n}", lambda gy, x: gy.t() @ x, (n, 256), (n, 256))
    case(f"grad_w heads N={n}", lambda gy, x: gy.t() @ x, (n, 8), (n, 256))
    case(f"grad_w obs N={n}", lambda gy, x: gy.t() @ x, (n, 256), (n, 36))
