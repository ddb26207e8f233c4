"""The fast floor's policies: the plain floor's networks (wd_teach/train/policy.py), computed
in fewer and fused kernels on a GPU. The same classes' twins, the same parameters under the
same names (a checkpoint of one floor loads on the other), the same function: on the CPU,
where there is nothing to gain, they run the plain code; tests/test_floors_equal.py holds
an update of each equal to the plain one.

    AlignedInput       the input layer, padded to 16-byte rows on a GPU
    ReLUStack, Layers  Linear-ReLU pairs as one fused product; their backward with the mask
                       inside the gradient's product (triton_kernels)
    stacked_heads      a shared body's actor and critic output layers as one product
    fixed_weights      each weight's cast, padded and stacked form made once a rollout
    inputs, outputs    the learner's pre-padded observations and the output layers' product
                       as the compiled loss reads it (wd_teach/fast/learners.py)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TypeVar

import torch
import torch.nn.functional as F
from torch import nn

from wd_teach.fast.triton_kernels import masked_product, relu_backward
from wd_teach.train.policy import (
    CategoricalActorCritic,
    DeterministicActorCritic,
    GaussianActorCritic,
)

T = TypeVar("T")


def compute_dtype(x: torch.Tensor) -> torch.dtype:
    """The dtype a product of `x` runs in: autocast's (bf16) where it is on, else x's."""
    if x.is_cuda and torch.is_autocast_enabled("cuda"):
        return torch.get_autocast_dtype("cuda")
    return x.dtype


class AlignedInput(nn.Linear):
    """The input layer, padded on a GPU so that its rows are 16 bytes long.

    cuBLAS picks its fast tensor-core kernels only when a matrix's rows start on 16-byte
    boundaries: a multiple of 8 features in bf16, of 4 in fp32. Observations are as wide
    as the env makes them (Tag's are 77), and at that width the first layer's product
    falls back to a kernel several times slower than the layers after it. So on a GPU
    the input and the weight get zero columns up to the next multiple of 8. A zero
    feature times a zero weight adds exactly nothing: the layer computes the same
    function, its parameters keep their shape, and the padding is never stored.

    Replaces nn.Linear as the first layer (wd_teach.train.policy.hidden_layers). Gained
    (bench/NOTES.md, round three, 6a and 6b; Tag, 500 envs, bf16): the first product's
    fallback kernels, 22.5 ms an iteration, went; with the padded input filled in the
    product's dtype, 128.0 -> 124.0 ms for A2C, 471.8 -> 452.8 ms for PPO.
    """

    ALIGN = 8

    @property
    def width(self) -> int:
        """The input width the product reads: in_features up to a multiple of ALIGN."""
        return self.in_features + (-self.in_features % self.ALIGN)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not x.is_cuda or self.in_features % self.ALIGN == 0:
            return super().forward(x)
        return self.padded(x)

    def padded(self, x: torch.Tensor) -> torch.Tensor:
        """The product with input and weight padded to a multiple of ALIGN features.

        The padded input is made in the dtype the product reads (bf16 under autocast), so
        zeroing it and copying into it replaces the cast autocast would make anyway: one
        memset more than the plain layer, and no pass over the data of its own."""
        return F.linear(*self.operands(x), self.bias)

    def pad(self, x: torch.Tensor) -> torch.Tensor:
        """`x` as the product reads it: in the compute dtype, with zero columns up to
        `width`. A learner that reads the same samples many times (PPO's epochs) pads them
        once; the layer takes an input of `width` columns as padded already."""
        if x.shape[-1] == self.width:
            return x.to(compute_dtype(x))
        inputs = x.new_zeros((*x.shape[:-1], self.width), dtype=compute_dtype(x))
        inputs[..., :self.in_features] = x
        return inputs

    def operands(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The input and the weight the product reads, padded to a multiple of ALIGN
        features (as they are where the width is one already)."""
        n = self.in_features
        if n % self.ALIGN == 0:
            return x, self.weight
        return self.pad(x), prepared(self.weight, "padded", self.padded_weight)

    def padded_weight(self) -> torch.Tensor:
        """The weight with zero columns up to `width`."""
        weight = self.weight.new_zeros((self.out_features, self.width))
        weight[:, :self.in_features] = self.weight
        return weight


# -- weights made ready once while they stay fixed --------------------------------------------

_PREPARED: dict | None = None  # inside fixed_weights(): (id, what) -> (owner, tensor)


@contextmanager
def fixed_weights() -> Iterator[None]:
    """A block in which no weight changes and no gradient is taken (a rollout): each
    weight's form for the products (cast to the compute dtype, padded, the two output
    layers stacked) is made once, at its first use, and reused after. Without it every
    step makes its own: in a 128-step rollout of two ReLU policies some 3,000 small
    kernels (bench/NOTES.md, round seven). A recorded rollout records them once, at its
    start, so each replay makes them afresh from the weights of that moment.

    Replaces the plain Rollout's `fixed_weights` context (a nullcontext: each step makes
    every weight's form anew); the trainer hands the Rollout this one on the fast floor.
    Gained, with the masked product from the output layers (round seven, PPO at 500
    envs, bf16, shared bodies): 193.7 -> 178.2 ms an iteration for the two together."""
    global _PREPARED
    outer = _PREPARED
    _PREPARED = {} if outer is None else outer
    try:
        yield
    finally:
        _PREPARED = outer


def prepared(owner, what, make: Callable[[], T]) -> T:
    """make(): inside fixed_weights (and with no gradient taken), made once for (owner,
    what) and reused; anywhere else, made on every call."""
    if _PREPARED is None or torch.is_grad_enabled():
        return make()
    key = (id(owner), what)
    if key not in _PREPARED:
        _PREPARED[key] = (owner, make())  # the owner kept alive: its id stays its own
    return _PREPARED[key][1]


def cast(tensor: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """`tensor` in `dtype` (prepared: made once inside fixed_weights)."""
    if tensor.dtype == dtype:
        return tensor
    return prepared(tensor, dtype, lambda: tensor.to(dtype))



# -- Linear-ReLU pairs as one product ----------------------------------------------------------

#: Whether a Linear followed by a ReLU runs as one fused product on a GPU (Layers), and
#: whether a shared body's two output layers run as one (ActorCritic.stacked_heads). Switches
#: for benchmarks that measure the difference; the function computed is the same.
FUSE_LINEAR_RELU = True
FUSE_HEADS = True


class ReLUStack(torch.autograd.Function):
    """Hidden layers h = relu(h @ weight.T + bias), one after another, and, if asked, a
    linear output layer after them, as one node of the autograd graph.

    Forward, each hidden layer is one cuBLASLt product with the bias and the ReLU in its
    epilogue: its [rows, out] result is written once, where a Linear then a ReLU write it,
    read it and write it again (at Tag's 1.1 M rows a step, 10,000 envs, that pass over
    280 MB is about a third of the layer's time).

    Backward, the layers are in one node so that each layer's input gradient is made
    together with the ReLU mask of the layer below (triton_kernels.masked_product). Where
    that product is small (an output layer's few gradients, in bf16) one Triton kernel makes
    it masked, writing the gradient once; elsewhere it is cuBLAS's product, then the mask in
    one pass (triton_kernels.relu_backward). The bias gradients come from the same passes.

    Replaces nn.Linear then nn.ReLU, layer by layer (the plain floor's nn.Sequential).
    Gained (bench/NOTES.md; Tag, shared ReLU bodies, bf16): the forward epilogue, round
    four's change 11, 81.4 -> 75.1 ms an iteration at 500 envs (+8%), 1,374.9 -> 1,223.4 ms
    at 10,000 (+12%); the one-pass ReLU backward, change 15, +4% / +5%; the masked product
    from the output layers, round seven, 0.70 ms against 1.27 for 1.6 M rows of 256.

    x [rows, in]; `with_output`; then weight, bias of each layer in order (the output
    layer's last), all of one dtype. The input's gradient is made only where it is needed
    (observations need none)."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, with_output: bool, *params: torch.Tensor):
        weights, biases = params[0::2], params[1::2]
        hidden = len(weights) - int(with_output)
        outs = []
        h = x
        for weight, bias in zip(weights[:hidden], biases[:hidden], strict=True):
            h = torch._addmm_activation(bias, h, weight.t())
            outs.append(h)
        if with_output:
            h = torch.addmm(biases[-1], h, weights[-1].t())
        ctx.with_output, ctx.hidden = with_output, hidden
        ctx.save_for_backward(x, *outs, *params)
        return h

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        saved = ctx.saved_tensors
        hidden = ctx.hidden
        inputs = saved[:hidden + 1]  # each layer's input: x, then every hidden output
        params = saved[hidden + 1:]
        weights = params[0::2]
        grads: list[torch.Tensor | None] = [None] * len(params)
        top = inputs[hidden]  # the last hidden layer's output
        if ctx.with_output:
            grads[-2], grads[-1] = grad.t() @ top, grad.sum(0)
            grad, grad_bias = masked_product(grad, weights[-1], top)
        else:
            grad, grad_bias = relu_backward(grad, top)
        # Here and below `grad` is the gradient before the ReLU of layer `i`.
        grad_x = None
        for i in reversed(range(hidden)):
            grads[2 * i], grads[2 * i + 1] = grad.t() @ inputs[i], grad_bias
            if i > 0:
                grad, grad_bias = masked_product(grad, weights[i], inputs[i])
            elif ctx.needs_input_grad[0]:
                grad_x = grad @ weights[0]
        return (grad_x, None, *grads)


def relu_stack(linears: Sequence[nn.Linear], x: torch.Tensor, output=None) -> torch.Tensor:
    """relu(...relu(linears[0](x))...) through ReLUStack, then `output` if given (an
    nn.Linear, or a (weight, bias) pair), in the dtype autocast would use, any leading dims
    (flattened to rows for the products and back)."""
    first = linears[0]
    inputs, weight = (first.operands(x) if isinstance(first, AlignedInput)
                      else (x, first.weight))
    params = [weight, first.bias, *[p for lin in linears[1:] for p in (lin.weight, lin.bias)]]
    if output is not None:
        params += list(output) if isinstance(output, tuple) else [output.weight, output.bias]
    dtype = compute_dtype(inputs)
    rows = inputs.reshape(-1, inputs.shape[-1]).to(dtype)
    out = ReLUStack.apply(rows, output is not None, *(cast(p, dtype) for p in params))
    return out.view(*inputs.shape[:-1], out.shape[-1])


def fuses(x: torch.Tensor) -> bool:
    """Whether Layers fuses its Linear-ReLU pairs for input `x`: on a GPU, unless switched
    off (the CPU has no fused product to gain from)."""
    return x.is_cuda and FUSE_LINEAR_RELU


def stacks_heads(x: torch.Tensor) -> bool:
    """Whether a shared body's two output layers run as one product for input `x`
    (ActorCritic.stacked_heads): on a GPU, unless switched off."""
    return x.is_cuda and FUSE_HEADS


class Layers(nn.Sequential):
    """nn.Sequential that, on a GPU, runs each stretch of Linear-ReLU pairs, and the
    Linear after them if there is one, as one ReLUStack. The same modules and parameter
    names as nn.Sequential (a checkpoint of either floor loads on the other), the same
    function; on the CPU, or with other activations, exactly nn.Sequential. Replaces the
    plain floor's nn.Sequential (ActorCritic.sequence); what it gained is ReLUStack's."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not fuses(x):
            return super().forward(x)
        modules = list(self)
        i = 0
        while i < len(modules):
            pairs = []
            while (i + 1 < len(modules) and isinstance(modules[i], nn.Linear)
                   and isinstance(modules[i + 1], nn.ReLU)):
                pairs.append(modules[i])
                i += 2
            if not pairs:
                x = modules[i](x)
                i += 1
                continue
            output = None  # a Linear after the pairs (not followed by a ReLU) joins them
            if i < len(modules) and isinstance(modules[i], nn.Linear):
                output = modules[i]
                i += 1
            x = relu_stack(pairs, x, output)
        return x

    def then_linear(self, x: torch.Tensor, weight: torch.Tensor,
                    bias: torch.Tensor) -> torch.Tensor:
        """F.linear(self(x), weight, bias): on a GPU, where these layers are Linear-ReLU
        pairs alone, that output layer joins their ReLUStack."""
        modules = list(self)
        pairs = modules[0::2]
        if (fuses(x) and len(modules) % 2 == 0 and all(isinstance(m, nn.Linear) for m in pairs)
                and all(isinstance(m, nn.ReLU) for m in modules[1::2])):
            return relu_stack(pairs, x, (weight, bias))
        return F.linear(self(x), weight, bias)


# -- the twins -------------------------------------------------------------------------------

class FastActorCritic:
    """What the fast twins of CategoricalActorCritic and GaussianActorCritic add: their
    layers (AlignedInput first, Layers around them), a shared body's two output layers as
    one product, and the split a learner needs to compile its loss: `outputs(obs)` (the
    output layers' product, outside the compiled loss) and `evaluate_outputs(outputs,
    actions)` (everything after it, inside)."""

    input_layer, sequence = AlignedInput, Layers

    def outputs(self, obs: torch.Tensor):
        """What the output layers give for `obs`, as they give it: on a GPU, a shared
        body's two output layers are one product (stacked_heads) and this is its [.., 8k]
        result, the actor's columns, the value's and zero padding; otherwise the pair
        (actor's output, value). `split` makes the pair of either. A learner hands a loss
        this whole, so that the loss's backward writes the product's gradient in one
        piece instead of one zero-filled piece per view."""
        if self.shared and stacks_heads(obs):
            return self.body.then_linear(obs, *self.stacked_weights())
        features = self.body(obs)
        return self.actor(features), self.critic(features).squeeze(-1)

    def split(self, outputs) -> tuple[torch.Tensor, torch.Tensor]:
        """(actor's output, value) from what `outputs` gave: views of the stacked product's
        columns, or the pair as it is."""
        if isinstance(outputs, tuple):
            return outputs
        n = self.actor.out_features
        return outputs[..., :n], outputs[..., n]

    def actor_and_value(self, obs: torch.Tensor, state: torch.Tensor | None = None):
        """The plain ActorCritic.actor_and_value, and on a GPU with a shared body, the two
        output layers as one product (stacked_heads). Independent critics only: the
        trainer takes the plain floor for a centralized one (trainer.critic)."""
        if state is not None:
            raise ValueError("the fast floor's policies have independent critics: make a "
                             "centralized one on the plain floor (WD_TEACH_FAST=0).")
        return self.split(self.outputs(obs))

    def stacked_heads(self, features: torch.Tensor) -> torch.Tensor:
        """The actor's and the critic's output layers as one product over the features.

        Each alone reads the whole [rows, hidden] feature matrix for a few outputs (Tag's
        12 logits, one value), and at those widths the output rows are not 16 bytes long,
        so cuBLAS falls back to slow kernels, forward and backward. Their weights stacked,
        with zero rows up to a multiple of 8 outputs, make one aligned product that reads
        the features once: [.., actor's outputs, value, padding].

        Replaces the plain actor(features) and critic(features). Gained (bench/NOTES.md,
        round four, change 12; Tag, bf16): 75.1 -> 66.3 ms an iteration at 500 envs (+13%),
        1,223 -> 1,034 ms at 10,000 (+18%)."""
        return F.linear(features, *self.stacked_weights())

    def stacked_weights(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(weight, bias) of stacked_heads: the actor's rows, the critic's, zero rows up
        to a multiple of 8 (prepared: made once inside fixed_weights)."""
        return prepared(self, "stacked", self._stacked)

    def _stacked(self) -> tuple[torch.Tensor, torch.Tensor]:
        n = self.actor.out_features
        pad = -(n + 1) % 8
        weight = torch.cat([self.actor.weight, self.critic.weight,
                            self.actor.weight.new_zeros(pad, self.actor.in_features)])
        bias = torch.cat([self.actor.bias, self.critic.bias, self.actor.bias.new_zeros(pad)])
        return weight, bias

    def evaluate_outputs(self, outputs, actions: torch.Tensor):
        """The plain `evaluate` from what `outputs` gave: a function of tensors alone, which
        a learner may compile together with its loss (wd_teach/fast/learners.py)."""
        out, value = self.split(outputs)
        return (*self.log_prob_and_entropy(out, actions), value)

    def inputs(self, obs: torch.Tensor) -> torch.Tensor:
        """`obs` as the first product reads it (AlignedInput.pad: on a GPU, the compute
        dtype and an aligned width), for a learner that reads each sample many times:
        padded once, its minibatches skip the pad and the cast on every pass. The policy
        computes the same function of either. (Round five of bench/NOTES.md: PPO's
        per-minibatch pad and cast, 9 + 2.6 ms an iteration at 500 envs, went.)"""
        first = (self.body if self.shared else self.actor)[0]
        if not obs.is_cuda or not isinstance(first, AlignedInput):
            return obs
        return first.pad(obs)


class FastCategoricalActorCritic(FastActorCritic, CategoricalActorCritic):
    """CategoricalActorCritic in the fast floor's layers (FastActorCritic)."""


class FastGaussianActorCritic(FastActorCritic, GaussianActorCritic):
    """GaussianActorCritic in the fast floor's layers (FastActorCritic)."""


class FastDeterministicActorCritic(DeterministicActorCritic):
    """DeterministicActorCritic (DDPG's ReLU networks) in the fast floor's layers."""

    input_layer, sequence = AlignedInput, Layers


#: The classes make_policy makes on the fast floor (wd_teach.train.policy.CLASSES' twins).
CLASSES = (FastCategoricalActorCritic, FastGaussianActorCritic, FastDeterministicActorCritic)
