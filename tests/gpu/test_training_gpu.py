"""Training end to end on a GPU, on both kernel backends: the shapes are right, nothing is
NaN, the time breakdown adds up, and the rollout makes no host round trip."""

import math

import pytest
import torch

from wd_teach.device import BACKENDS
from wd_teach.train.trainer import Trainer

SMALL_TAG = ["env.num_envs=16", "env.params.num_taggers=3", "env.params.num_runners=20",
             "env.params.num_nearest=5", "env.params.episode_length=20", "trainer.steps=20",
             "policies.taggers.hidden=[64, 64]", "policies.runners.hidden=[64, 64]"]


def tag_trainer(backend, *more):
    return Trainer("tag_continuous", gpu=True, sets=[f"env.backend={backend}", *SMALL_TAG,
                                                      *more])


@pytest.mark.parametrize("backend", BACKENDS)
def test_tag_trains_end_to_end(backend):
    trainer = tag_trainer(backend)
    assert trainer.device.type == "cuda" and trainer.backend == backend
    for _ in range(3):
        row = trainer.iterate(profile=True)
    buffer = trainer.rollout.buffer
    assert buffer.obs.shape == (20, 16, 23, trainer.env.obs_size)
    assert buffer.actions.shape == (20, 16, 23, 2) and buffer.actions.is_cuda
    assert buffer.dones.shape == (20, 16)
    for name in ("obs", "values", "log_probs", "rewards"):
        assert torch.isfinite(getattr(buffer, name)).all(), name
    for group in ("taggers", "runners"):
        for metric in ("return", "policy_loss", "value_loss", "entropy"):
            assert math.isfinite(row[f"{group}/{metric}"]), f"{group}/{metric}"
    phases = ["policy", "sampling", "env step", "training", "other"]
    assert all(row[f"time/{p}"] >= 0 for p in phases)
    assert sum(row[f"time/{p}"] for p in phases) == pytest.approx(row["time/total"], rel=1e-3)
    assert row["time/other"] < 0.5 * row["time/total"]
    # the GPU timeline and the host's clock agree about the iteration's length
    assert row["time/total"] == pytest.approx(row["seconds"], rel=0.5)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("env, sets", [
    ("tag_continuous", SMALL_TAG),
    ("cartpole", ["env.num_envs=32", "trainer.steps=16"]),
    ("pendulum", ["env.num_envs=32", "trainer.steps=8", "algorithm.replay_size=2560"]),
    ("pendulum", ["env.num_envs=32", "trainer.steps=8", "algorithm.name=ppo",
                  "algorithm.num_minibatches=2"]),
])
def test_the_rollout_never_synchronises(backend, env, sets):
    """torch's sync debug mode turns any implicit wait for the GPU into an error."""
    trainer = Trainer(env, gpu=True, sets=[f"env.backend={backend}", *sets])
    trainer.iterate()  # compile and bind the kernels first
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        buffer = trainer.rollout.collect()
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert torch.isfinite(buffer.rewards).all()


def test_pycuda_and_numba_train_alike():
    """The same seed and config on both backends: the same actions and the same weights
    (the kernels agree bit for bit on Tag, and the sampler draws the same numbers)."""
    trainers = [tag_trainer(backend) for backend in BACKENDS]
    for trainer in trainers:
        trainer.train(2, progress=False)
    first, second = (t.rollout.buffer for t in trainers)
    assert torch.equal(first.actions, second.actions)
    assert torch.allclose(first.rewards, second.rewards)


def test_resume_on_the_gpu(tmp_path):
    straight = tag_trainer("numba")
    straight.train(3, progress=False)
    first = tag_trainer("numba")
    first.train(2, progress=False)
    resumed = Trainer.from_checkpoint(first.save(tmp_path / "tag.safetensors"), gpu=True)
    resumed.train(1, progress=False)
    assert torch.equal(straight.wrapper.store["loc_x"], resumed.wrapper.store["loc_x"])
    for name, policy in straight.policies.items():
        for want, got in zip(policy.parameters(), resumed.policies[name].parameters(),
                             strict=True):
            torch.testing.assert_close(want, got)



@pytest.mark.parametrize("backend", BACKENDS)
def test_the_shipped_demo_goes_on_training_on_the_gpu(backend):
    """The trained Tag demo the package ships is a whole run: it resumes as one, on either
    backend, and trains on from its 4,000th iteration."""
    from wd_teach.train.playback import pretrained_checkpoint

    trainer = Trainer.from_checkpoint(pretrained_checkpoint("tag_demo"), gpu=True)
    if trainer.backend != backend:
        state = trainer.state_dict()
        config = state["config"]
        config["env"]["backend"] = backend
        trainer = Trainer(config, gpu=True).load_state_dict(state, where="tag_demo")
    before = [p.detach().clone() for p in trainer.policies["taggers"].parameters()]
    trainer.train(1, progress=False)
    assert trainer.iteration == 4001 and trainer.backend == backend
    after = list(trainer.policies["taggers"].parameters())
    assert any(not torch.equal(a, b) for a, b in zip(before, after, strict=True))

def test_lightning_module_on_the_gpu(tmp_path):
    from wd_teach.train.lightning import TrainingModule, make_lightning_trainer, measure_overhead

    module = TrainingModule("cartpole", gpu=True, sets=["env.num_envs=32", "trainer.steps=16"])
    trainer = make_lightning_trainer(module, 4, out=tmp_path, progress=False)
    trainer.fit(module)
    assert len(module.history) == 4
    assert next(module.parameters()).is_cuda
    plain = Trainer("cartpole", gpu=True, sets=["env.num_envs=32", "trainer.steps=16"])
    plain.train(4, progress=False)
    # the update ran as a recorded graph under Lightning as often as without it (first
    # runs, a recording, replays), and Lightning counted the replayed steps too
    assert module.run.update_replays == plain.update_replays > 0
    c = module.run.config.algorithm
    assert trainer.global_step == 4 * c.epochs * c.num_minibatches
    for want, got in zip(plain.policies["cart"].parameters(),
                         module.run.policies["cart"].parameters(), strict=True):
        torch.testing.assert_close(want, got)
    assert (tmp_path / "lightning.ckpt").is_file()
    result = measure_overhead("cartpole", iterations=3, warmup=1, gpu=True,
                              sets=["env.num_envs=32", "trainer.steps=16"])
    assert result["plain_steps_per_second"] > 0 and result["lightning_steps_per_second"] > 0


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_the_padded_input_layer_computes_the_plain_layer_on_the_gpu(precision):
    """Tag's 77 features take the padded product on a GPU: the same outputs and weight
    gradients as the plain layer, to the precision's rounding."""
    from torch import nn

    from wd_teach.fast.policy import AlignedInput

    torch.manual_seed(0)
    layer = AlignedInput(77, 256).cuda()
    x = torch.randn(4096, 77, device="cuda")
    tol = {"fp32": 1e-5, "bf16": 2e-2}[precision]
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=precision == "bf16"):
        padded = layer(x)
        plain = nn.functional.linear(x, layer.weight, layer.bias)
    torch.testing.assert_close(padded.float(), plain.float(), rtol=tol, atol=tol)
    padded.float().square().mean().backward()
    grad, layer.weight.grad = layer.weight.grad.clone(), None
    plain.float().square().mean().backward()
    assert grad.shape == (256, 77)
    torch.testing.assert_close(grad, layer.weight.grad, rtol=tol, atol=tol)


@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_observations_padded_once_give_the_same_bits_on_the_gpu(precision, shared):
    """PPO pads and casts its observations once (ActorCritic.inputs) and gathers
    minibatches of them: on the GPU the policy's answers and gradients are bit for bit
    those from the raw observations."""
    from wd_teach.fast.policy import FastCategoricalActorCritic

    torch.manual_seed(0)
    policy = FastCategoricalActorCritic(77, [6, 6], [256, 256], shared=shared,
                                        activation="relu").cuda()
    obs = torch.randn(4096, 77, device="cuda")
    actions = torch.randint(0, 6, (4096, 2), device="cuda")
    results = []
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=precision == "bf16"):
        inputs = policy.inputs(obs)
        assert inputs.shape == (4096, 80)
        assert inputs.dtype == (torch.bfloat16 if precision == "bf16" else torch.float32)
        for x in (obs, inputs):
            policy.zero_grad()
            log_prob, entropy, value = policy.evaluate(x, actions)
            (log_prob.mean() + entropy.mean() + value.square().mean()).backward()
            results.append([log_prob, entropy, value,
                            *[p.grad.clone() for p in policy.parameters()]])
    for raw, padded in zip(*results, strict=True):
        assert torch.equal(raw, padded)


@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_the_fused_linear_relu_computes_the_pair_on_the_gpu(precision, shared, monkeypatch):
    """A shared ReLU policy at Tag's sizes on the GPU: with the fused products (the
    default: hidden layers with their ReLU, both output layers in one) and without them,
    the same outputs and weight gradients to the precision's rounding, and the fused run
    really made the two hidden layers' fused products."""
    from wd_teach.fast import policy
    from wd_teach.fast import triton_kernels as fused
    from wd_teach.fast.policy import FastCategoricalActorCritic

    torch.manual_seed(0)
    net = FastCategoricalActorCritic(77, [3, 4], [256, 256], shared=shared,
                                     activation="relu").cuda()
    x = torch.randn(4096, 77, device="cuda")
    tol = {"fp32": 1e-5, "bf16": 2e-2}[precision]
    products = []
    triton_product = fused._triton_masked_product
    monkeypatch.setattr(fused, "_triton_masked_product",
                        lambda *a: products.append(a[0].shape) or triton_product(*a))

    def run():
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=precision == "bf16"):
            logits, value = net.actor_and_value(x)
        loss = logits.float().square().mean() + value.float().square().mean()
        return (logits.float(), value.float(),
                *torch.autograd.grad(loss, list(net.parameters())))

    calls, fused_product = [], torch._addmm_activation
    monkeypatch.setattr(torch, "_addmm_activation",
                        lambda *a, **k: calls.append(a[1].dtype) or fused_product(*a, **k))
    fused_run = run()
    layers = 2 if shared else 4
    assert calls == [torch.bfloat16 if precision == "bf16" else torch.float32] * layers
    # bf16: the output layers' gradients into the top hidden layer came from Triton's
    # masked product (one stacked output layer, or the actor's and the critic's); fp32,
    # and a hidden layer's gradient into the one below, keep cuBLAS's product
    assert len(products) == {"fp32": 0, "bf16": 1 if shared else 2}[precision]
    monkeypatch.setattr(policy, "FUSE_LINEAR_RELU", False)
    monkeypatch.setattr(policy, "FUSE_HEADS", False)
    plain = run()
    assert len(calls) == layers  # the switch turned the fused products off
    for a, b in zip(fused_run, plain, strict=True):
        torch.testing.assert_close(a, b, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_the_fused_relu_backward_runs_triton_on_the_gpu(dtype):
    """The one-pass ReLU backward (wd_teach.fast.triton_kernels) on a GPU: Triton's kernel is the
    path taken, its gradient is PyTorch's bit for bit, its bias gradient the row sum, and
    two runs give the same bits (partial sums in a fixed order, no atomics)."""
    from wd_teach.fast import triton_kernels as fused

    torch.manual_seed(0)
    rows = 100_003  # the last block of rows is not full
    grad = torch.randn(rows, 256, device="cuda").to(dtype)
    out = torch.relu(torch.randn(rows, 256, device="cuda")).to(dtype)
    assert fused._fusable(grad, out), "Triton's kernel is not the path taken here"
    g, db = fused.relu_backward(grad, out)
    want = torch.ops.aten.threshold_backward(grad, out, 0)
    assert torch.equal(g, want)
    assert db.dtype == dtype
    tol = {torch.float32: 1e-4, torch.bfloat16: 1e-2}[dtype]
    torch.testing.assert_close(db.float(), want.float().sum(0), rtol=tol, atol=tol * 10)
    assert torch.equal(db, fused.relu_backward(grad, out)[1])


@pytest.mark.parametrize("k, cols", [(16, 256), (13, 128), (1, 64), (256, 256)])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_the_masked_product_runs_triton_on_the_gpu(dtype, k, cols):
    """(a @ w) masked by h > 0 in one Triton kernel: the stacked heads' gradient into the
    top layer (k 16), an actor's 13 outputs, a critic's one; and a hidden layer's (256),
    which masked_product leaves to cuBLAS (slower in Triton) but the kernel must still get
    right. Its values are cuBLAS's product to one rounding of the dtype (both sum in fp32
    and round once), its zeros exactly where h is not positive, its bias gradient the row
    sum, the same bits on a second run."""
    from wd_teach.fast import triton_kernels as fused

    torch.manual_seed(k)
    rows = 100_003
    a = torch.randn(rows, k, device="cuda").to(dtype)
    w = (torch.randn(k, cols, device="cuda") / k ** 0.5).to(dtype)
    h = torch.relu(torch.randn(rows, cols, device="cuda")).to(dtype)
    if k <= 64:
        assert fused._product_fusable(a, w, h), "Triton's kernel is not the path taken here"
        product = fused.masked_product
    else:
        assert not fused._product_fusable(a, w, h)
        product = fused._triton_masked_product
    g, db = product(a, w, h)
    want = torch.ops.aten.threshold_backward(a @ w, h, 0)
    assert g.dtype == db.dtype == dtype
    assert torch.equal(g[h <= 0], torch.zeros_like(g[h <= 0]))
    ulp = {torch.bfloat16: 2 ** -7, torch.float16: 2 ** -10}[dtype]
    assert ((g.float() - want.float()).abs() <= ulp * want.float().abs() + 1e-6).all()
    assert (g == want).float().mean() > 0.95  # almost all the very same bits
    torch.testing.assert_close(db.float(), g.float().sum(0), rtol=1e-2, atol=1e-1)
    again = product(a, w, h)
    assert torch.equal(g, again[0]) and torch.equal(db, again[1])


@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_a_compiled_loss_is_the_plain_loss_on_the_gpu(precision, shared):
    """trainer.compile on a GPU: Inductor's fused kernels for PPO's loss of a minibatch at
    Tag's widths give the plain loss's values and the same gradient for the output
    layers (the stacked heads' one tensor, or the actor's and the critic's) to fp32's
    rounding: the loss runs in fp32 either way, only the order of its sums differs (in
    bf16 the gradient is rounded to bf16 after, so one bf16 rounding apart at most)."""
    from wd_teach.fast.learners import PPOLearner
    from wd_teach.fast.policy import FastCategoricalActorCritic
    from wd_teach.train.algorithms import ppo
    from wd_teach.train.algorithms.base import LearnerOptions

    torch.compiler.reset()
    torch.manual_seed(0)
    policy = FastCategoricalActorCritic(77, [6, 6], [256, 256], shared=shared,
                                        activation="relu").cuda()
    rows = 20_000
    obs = torch.randn(rows, 77, device="cuda")
    tensors = (torch.randint(0, 6, (rows, 2), device="cuda"),
               -torch.rand(rows, device="cuda") * 3, torch.randn(rows, device="cuda"),
               torch.randn(rows, device="cuda"), torch.randn(rows, device="cuda"))
    results = []
    for compile in (False, True):
        options = LearnerOptions(lr=1e-3, generator=torch.Generator("cuda"))
        learner = PPOLearner(policy, ppo.Config(), options, compile=compile)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=precision == "bf16"):
            outputs = policy.outputs(obs)
            leaves = [outputs] if isinstance(outputs, torch.Tensor) else list(outputs)
            losses = learner.compiled_loss(outputs, *tensors)
        results.append([*losses, *torch.autograd.grad(losses[0], leaves)])
    from torch._dynamo.utils import counters
    assert counters["stats"]["unique_graphs"] >= 1  # the compiled one really compiled
    for got, want in zip(results[1], results[0], strict=True):
        assert got.dtype == want.dtype and got.shape == want.shape
        rtol = 1e-4 if got.dtype == torch.float32 else 2 ** -7  # bf16: one rounding apart
        torch.testing.assert_close(got.float(), want.float(), rtol=rtol, atol=1e-6)
