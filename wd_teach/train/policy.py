"""Policies: fully connected actor-critic networks, one per group of agents that share it.

Agents that play the same role (every tagger of every game, say) share one network: their
observations are rows of one batch, so a policy step for a hundred thousand agents is a few
matrix products. A run names its groups with a mapping, policy name -> agent indices, and
`agent_groups` checks that every agent is in exactly one group.

Three kinds of policy, by the actions they make:

    CategoricalActorCritic   discrete actions, one or several heads (acceleration and turn):
                             the actor gives each head's probabilities, which the Sampler
                             draws from on the device (A2C, PPO)
    GaussianActorCritic      continuous actions: a Normal with a learned mean per dimension
                             and a learned spread, drawn with torch on the device (A2C, PPO)
    DeterministicActorCritic continuous actions: an actor that gives one action, explored
                             around with OUNoise, and a critic Q(obs, action) (DDPG)

By default each has an actor and a critic of its own (no shared body): the two losses then
never pull one set of weights two ways, and either network can change size on its own. With
`shared=True` (policies.NAME.shared in a config) the two share one body of hidden layers
and differ only in their output layers, the shape of WarpDrive's FullyConnected model: one
pass of the hidden layers instead of two, about half the policy's arithmetic and memory
traffic, in the rollout and in the update.

On a GPU two things make the same networks cheaper without changing what they compute:
the input layer pads its rows to 16 bytes (AlignedInput), and each Linear followed by a
ReLU runs as one product with the bias and the ReLU fused into it, and in bf16 the output
layer's gradient comes out of its product with the top ReLU's mask already applied
(Layers, ReLUStack).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TypeVar

import numpy as np
import torch
import torch.nn.functional as F
from gymnasium import spaces
from torch import nn

from wd_teach.errors import ConfigError
from wd_teach.fast.triton_kernels import masked_product, relu_backward
from wd_teach.train.groups import AgentGroup, agent_groups  # noqa: F401 (their old home)

LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
T = TypeVar("T")


# -- building blocks --------------------------------------------------------------------------


def layer(n_in: int, n_out: int, gain: float = math.sqrt(2),
          kind: type[nn.Linear] = nn.Linear) -> nn.Linear:
    """A linear layer with orthogonal weights of the given gain and zero biases: the start
    that keeps activations of a deep MLP at a steady size."""
    linear = kind(n_in, n_out)
    nn.init.orthogonal_(linear.weight, gain)
    nn.init.zeros_(linear.bias)
    return linear


class AlignedInput(nn.Linear):
    """The input layer, padded on a GPU so that its rows are 16 bytes long.

    cuBLAS picks its fast tensor-core kernels only when a matrix's rows start on 16-byte
    boundaries: a multiple of 8 features in bf16, of 4 in fp32. Observations are as wide
    as the env makes them (Tag's are 77), and at that width the first layer's product
    falls back to a kernel several times slower than the layers after it. So on a GPU
    the input and the weight get zero columns up to the next multiple of 8. A zero
    feature times a zero weight adds exactly nothing: the layer computes the same
    function, its parameters keep their shape, and the padding is never stored.
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
    start, so each replay makes them afresh from the weights of that moment."""
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


def compute_dtype(x: torch.Tensor) -> torch.dtype:
    """The dtype a product of `x` runs in: autocast's (bf16) where it is on, else x's."""
    if x.is_cuda and torch.is_autocast_enabled("cuda"):
        return torch.get_autocast_dtype("cuda")
    return x.dtype


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
    together with the ReLU mask of the layer below (fused.masked_product). Where that
    product is small (an output layer's few gradients, in bf16) one Triton kernel makes it
    masked, writing the gradient once; elsewhere it is cuBLAS's product, then the mask in
    one pass (fused.relu_backward). The bias gradients come from the same passes.

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
    names as nn.Sequential, the same function; on the CPU, or with other activations,
    exactly nn.Sequential."""

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


#: The hidden layers' activation, by name (policies.NAME.activation).
ACTIVATIONS = {"tanh": nn.Tanh, "relu": nn.ReLU}


def hidden_layers(sizes: Sequence[int], activation: type[nn.Module] = nn.Tanh) -> list[nn.Module]:
    """Linear layers of `sizes` (the first is the input), each followed by `activation`.
    The first layer is an AlignedInput."""
    layers: list[nn.Module] = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:], strict=True):
        layers += [layer(n_in, n_out, kind=nn.Linear if layers else AlignedInput),
                   activation()]
    return layers


def mlp(sizes: Sequence[int], out: int, out_gain: float,
        activation: type[nn.Module] = nn.Tanh) -> nn.Sequential:
    """Hidden layers of `sizes` (the first is the input), each followed by `activation`,
    then a linear output layer of `out` units."""
    return Layers(*hidden_layers(sizes, activation), layer(sizes[-1], out, out_gain))


class ActorCritic(nn.Module):
    """An actor with `actor_size` outputs and a critic with one, either as two networks of
    their own or as one shared body with two output layers (`shared`)."""

    def __init__(self, obs_size: int, actor_size: int, hidden: Sequence[int], *,
                 shared: bool = False, activation: str = "tanh"):
        super().__init__()
        kind = ACTIVATIONS[activation]
        self.shared = shared
        if shared:
            self.body = Layers(*hidden_layers([obs_size, *hidden], kind))
            self.actor = layer(hidden[-1], actor_size, 0.01)
            self.critic = layer(hidden[-1], 1, 1.0)
        else:
            self.body = nn.Identity()
            self.actor = mlp([obs_size, *hidden], actor_size, out_gain=0.01, activation=kind)
            self.critic = mlp([obs_size, *hidden], 1, out_gain=1.0, activation=kind)

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

    def actor_and_value(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The actor's output and the state value, the shared body run once. On a GPU the
        two output layers of a shared body run as one product (stacked_heads)."""
        return self.split(self.outputs(obs))

    def stacked_heads(self, features: torch.Tensor) -> torch.Tensor:
        """The actor's and the critic's output layers as one product over the features.

        Each alone reads the whole [rows, hidden] feature matrix for a few outputs (Tag's
        12 logits, one value), and at those widths the output rows are not 16 bytes long,
        so cuBLAS falls back to slow kernels, forward and backward. Their weights stacked,
        with zero rows up to a multiple of 8 outputs, make one aligned product that reads
        the features once: [.., actor's outputs, value, padding]."""
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

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        return self.critic(self.body(obs)).squeeze(-1)

    def inputs(self, obs: torch.Tensor) -> torch.Tensor:
        """`obs` as the first product reads it (AlignedInput.pad: on a GPU, the compute
        dtype and an aligned width), for a learner that reads each sample many times:
        padded once, its minibatches skip the pad and the cast on every pass. The policy
        computes the same function of either."""
        first = (self.body if self.shared else self.actor)[0]
        if not obs.is_cuda or not isinstance(first, AlignedInput):
            return obs
        return first.pad(obs)


# -- discrete actions -------------------------------------------------------------------------


class CategoricalActorCritic(ActorCritic):
    """Discrete actions in one or several heads, and a state value.

    The actor's output is every head's logits side by side; `probabilities` turns each
    head into a softmax, which is the layout the Sampler reads ([.., sum of num_actions]).
    Small initial actor weights make the first actions almost uniform.
    """

    def __init__(self, obs_size: int, num_actions: Sequence[int], hidden: Sequence[int],
                 **body):
        counts = [int(n) for n in num_actions]
        super().__init__(obs_size, sum(counts), hidden, **body)
        self.num_actions = counts

    def logits(self, obs: torch.Tensor) -> torch.Tensor:
        return self.actor(self.body(obs))

    def per_head(self, logits: torch.Tensor) -> torch.Tensor | list[torch.Tensor]:
        """The logits per head: one [.., heads, n] view where the heads are of one size (so
        one kernel serves them all), else a list of the heads' [.., n_i]."""
        counts = self.num_actions
        if len(set(counts)) == 1:
            return logits.unflatten(-1, (len(counts), counts[0]))
        return list(logits.split(counts, dim=-1))

    def probabilities(self, logits: torch.Tensor) -> torch.Tensor:
        """Each head's softmax, side by side along the last axis."""
        heads = self.per_head(logits)
        if isinstance(heads, torch.Tensor):
            return torch.softmax(heads, dim=-1).flatten(-2)
        return torch.cat([torch.softmax(h, dim=-1) for h in heads], dim=-1)

    def log_softmax(self, logits: torch.Tensor) -> torch.Tensor | list[torch.Tensor]:
        """Each head's log-probabilities, in the form `per_head` gives."""
        heads = self.per_head(logits)
        if isinstance(heads, torch.Tensor):
            return torch.log_softmax(heads, dim=-1)
        return [torch.log_softmax(h, dim=-1) for h in heads]

    def log_prob(self, logits: torch.Tensor, actions: torch.Tensor,
                 log_softmax=None) -> torch.Tensor:
        """log pi(actions): `actions` [.., heads] (long); the heads' log-probabilities add.
        `log_softmax` is this policy's log_softmax(logits), where it is at hand."""
        log_p = self.log_softmax(logits) if log_softmax is None else log_softmax
        if isinstance(log_p, torch.Tensor):
            return log_p.gather(-1, actions.unsqueeze(-1)).squeeze(-1).sum(-1)
        return sum(h.gather(-1, actions[..., i:i + 1]).squeeze(-1) for i, h in enumerate(log_p))

    def entropy(self, logits: torch.Tensor, log_softmax=None) -> torch.Tensor:
        """The heads' entropies, added: -sum p log p, with p = exp(log p)."""
        log_p = self.log_softmax(logits) if log_softmax is None else log_softmax
        if isinstance(log_p, torch.Tensor):
            return -(log_p.exp() * log_p).sum((-2, -1))
        return sum(-(h.exp() * h).sum(-1) for h in log_p)

    def evaluate(self, obs: torch.Tensor, actions: torch.Tensor):
        """(log-probability of `actions`, entropy, value): what the losses need."""
        return self.evaluate_outputs(self.outputs(obs), actions)

    def evaluate_outputs(self, outputs, actions: torch.Tensor):
        """`evaluate` from what `outputs` gave: a function of tensors alone, which a
        learner may compile together with its loss. Each head's log-softmax is worked out
        once, for both the log-probability and the entropy."""
        logits, value = self.split(outputs)
        log_p = self.log_softmax(logits)
        return (self.log_prob(logits, actions, log_p), self.entropy(logits, log_p), value)


# -- continuous actions -----------------------------------------------------------------------


class GaussianActorCritic(ActorCritic):
    """Continuous actions: a Normal(mean(obs), exp(log_std)) per action dimension, and a
    state value. The draw is not clipped here; the rollout clips what the env receives and
    keeps the draw itself, whose log-probability is what the losses need."""

    def __init__(self, obs_size: int, action_size: int, hidden: Sequence[int],
                 log_std: float = 0.0, **body):
        super().__init__(obs_size, action_size, hidden, **body)
        self.log_std = nn.Parameter(torch.full((action_size,), float(log_std)))

    def mean(self, obs: torch.Tensor) -> torch.Tensor:
        return self.actor(self.body(obs))

    def evaluate(self, obs: torch.Tensor, actions: torch.Tensor):
        """(log-probability of `actions`, entropy, value), each summed over dimensions."""
        return self.evaluate_outputs(self.outputs(obs), actions)

    def evaluate_outputs(self, outputs, actions: torch.Tensor):
        """`evaluate` from what `outputs` gave (see CategoricalActorCritic's)."""
        mean, value = self.split(outputs)
        log_std = self.log_std.expand(actions.shape)
        log_prob = -0.5 * ((actions - mean) / log_std.exp()) ** 2 - log_std - LOG_SQRT_2PI
        entropy = (0.5 + LOG_SQRT_2PI + log_std).sum(-1)
        return log_prob.sum(-1), entropy, value


class DeterministicActorCritic(nn.Module):
    """DDPG's pair: an actor obs -> action, squashed into [low, high] by tanh, and a critic
    Q(obs, action). ReLU, as DDPG's authors used."""

    def __init__(self, obs_size: int, action_size: int, hidden: Sequence[int],
                 low: Sequence[float], high: Sequence[float]):
        super().__init__()
        self.actor = mlp([obs_size, *hidden], action_size, out_gain=0.01, activation=nn.ReLU)
        self.critic = mlp([obs_size + action_size, *hidden], 1, out_gain=1.0,
                          activation=nn.ReLU)
        low, high = (torch.as_tensor(np.asarray(v, np.float32)) for v in (low, high))
        self.register_buffer("middle", (high + low) / 2)
        self.register_buffer("half_range", (high - low) / 2)

    def action(self, obs: torch.Tensor) -> torch.Tensor:
        return self.middle + self.half_range * torch.tanh(self.actor(obs))

    def q(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        return self.critic(torch.cat([obs, action], dim=-1)).squeeze(-1)


class OUNoise:
    """Ornstein-Uhlenbeck noise, one process per (env, agent, action dimension), on the
    device: x += theta * (0 - x) + sigma * N(0, 1). Successive values are correlated, so an
    explored action drifts instead of jittering, which suits physical controls. `reset(done)`
    starts the finished environments' processes again at 0."""

    def __init__(self, shape: Sequence[int], device: torch.device, generator: torch.Generator,
                 theta: float = 0.15, sigma: float = 0.2):
        self.theta, self.sigma, self.generator = float(theta), float(sigma), generator
        self.state = torch.zeros(tuple(shape), device=device)

    def sample(self) -> torch.Tensor:
        shock = torch.randn(self.state.shape, generator=self.generator,
                            device=self.state.device)
        self.state.add_(self.sigma * shock - self.theta * self.state)
        return self.state

    def reset(self, done: torch.Tensor) -> None:
        """done: [envs] bool."""
        keep = (~done).to(self.state.dtype).view(-1, *([1] * (self.state.dim() - 1)))
        self.state.mul_(keep)


# -- making the right policy for an action space ----------------------------------------------


def action_counts(space: spaces.Space) -> list[int]:
    """The actions of each head of a discrete space."""
    if isinstance(space, spaces.Discrete):
        return [int(space.n)]
    return [int(n) for n in space.nvec]


def make_policy(kind: str, obs_size: int, action_space: spaces.Space,
                hidden: Sequence[int], *, shared: bool = False,
                activation: str | None = None, **options) -> nn.Module:
    """The policy of `kind` ('stochastic' or 'deterministic') for one agent's spaces.
    `shared`: one body for actor and critic; `activation`: the hidden layers' (None: tanh
    for the stochastic policies, ReLU for DDPG's, as their authors used)."""
    if kind == "deterministic":
        if not isinstance(action_space, spaces.Box):
            raise ConfigError(f"DDPG needs continuous actions (a Box), but this environment's "
                              f"are {action_space}. Use algorithm.name: ppo or a2c.")
        if shared or activation not in (None, "relu"):
            raise ConfigError("DDPG's critic reads the action beside the observation, so it "
                              "shares no body with the actor, and its layers are ReLU: leave "
                              "policies.NAME.shared and .activation out with algorithm ddpg.")
        return DeterministicActorCritic(obs_size, int(np.prod(action_space.shape)), hidden,
                                        action_space.low, action_space.high)
    body = {"shared": shared, "activation": activation or "tanh"}
    if isinstance(action_space, spaces.Box):
        return GaussianActorCritic(obs_size, int(np.prod(action_space.shape)), hidden,
                                   **options, **body)
    return CategoricalActorCritic(obs_size, action_counts(action_space), hidden, **body)
