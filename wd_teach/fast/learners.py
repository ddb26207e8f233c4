"""The fast floor's learners: A2C's and PPO's updates as the plain floor writes them
(wd_teach/train/algorithms/), their losses compiled and their observations padded once.

A plain learner asks the policy to `evaluate(obs, actions)` and computes the loss from what
it gives. A fast learner splits that call in two: the policy's output layers
(FastActorCritic.outputs, with its fused products and stacked heads) run as they are, and
everything after them, the distribution's log-probabilities and entropy and the loss to its
number, is one function of tensors that torch.compile can make into a few fused kernels
(trainer.compile). The observations reach the first product padded and cast once
(FastActorCritic.inputs), straight from the rollout buffer's views.

They need the fast floor's policies (wd_teach/fast/policy.py), which the trainer makes with
them: both are chosen in one place, Trainer's floor (wd_teach.floors).
"""

from __future__ import annotations

import functools

import torch

from wd_teach.train.algorithms import a2c, ppo
from wd_teach.train.algorithms.common import flat, normalize

#: torch.compile's backend for compiled losses: Inductor (Triton kernels on a GPU). The
#: tests set "aot_eager" on the CPU, which traces the same graphs and runs them with
#: PyTorch's own kernels.
COMPILE_BACKEND = "inductor"


def compiled(loss, on: bool):
    """`loss` compiled with torch.compile where `on` (trainer.compile), else `loss`
    itself. A loss of one minibatch is some fifty small kernels forward and backward
    (each head's softmax, the gathers, the ratio, the clip, the means), each a pass over
    memory; compiled, Triton fuses them into a few. It compiles on its first call
    (seconds) for each batch size it meets, every size fixed into its graph: the kernels
    are made for the rows they will see. (A graph for any size is made for the size it
    first saw: Tag's PPO at 500 envs then ran 388,000 env steps/s, not 406,000, when that
    was 100 envs' taggers.) One graph per size serves every policy group and every trainer
    of the process, so a recorded update and the step-by-step one run the very same
    kernels. A recorded update replays the compiled kernels like any others.

    Replaces the plain loss, run op by op. Gained (bench/NOTES.md, round seven; Tag, bf16,
    shared bodies, 500 envs): PPO by trajectories 178.2 -> 157.7 ms an iteration (405,832
    env steps/s); A2C with the masked product and fixed weights, 60.6 -> 51.8 ms."""
    if not on:
        return loss
    return torch.compile(loss, fullgraph=True, dynamic=False, backend=COMPILE_BACKEND)


class A2CLearner(a2c.Learner):
    """a2c.Learner whose `part_loss` runs the output layers, then the compiled loss."""

    def __init__(self, policy, config: a2c.Config, options, compile: bool = False):
        super().__init__(policy, config, options)
        self.compile = compile
        self.compiled_loss = compiled(self._part_loss, compile)

    def part_loss(self, obs, actions, advantages, returns, samples, weight=None):
        """Replaces a2c.Learner.part_loss: the observations padded from the buffer's
        strided group view in one pass (round five), the output layers, the compiled loss."""
        outputs = self.policy.outputs(flat(self.policy.inputs(obs)))
        if not isinstance(samples, torch.Tensor):  # counted agents in the game are one
            samples = advantages.new_full((), samples)  # a fill on the device: a graph records it
        return self.compiled_loss(outputs, actions, advantages, returns, samples, weight)

    def _part_loss(self, outputs, actions, advantages, returns, samples: torch.Tensor,
                   weight=None):
        """The loss of one part from the policy's outputs (FastActorCritic.outputs); a
        function of tensors alone, so it can be compiled whole. `samples`, the batch's
        size, comes as a tensor too: as a number it would be fixed into the compiled
        graph, and each policy group, of its own size, would need a graph of its own."""
        log_prob, entropy, value = self.policy.evaluate_outputs(outputs, actions)
        log_prob, entropy, value, returns = a2c.counted_only(weight, log_prob, entropy, value,
                                                             returns)
        return a2c.loss(log_prob, entropy, value, advantages, returns, self.config, samples)


class PPOLearner(ppo.Learner):
    """ppo.Learner whose observations are padded once for every epoch and whose
    minibatch loss runs the output layers, then the compiled loss."""

    def __init__(self, policy, config: ppo.Config, options, compile: bool = False):
        super().__init__(policy, config, options)
        self.compile = compile
        self.compiled_loss = compiled(self._minibatch_loss, compile)

    def sample_rows(self, batch, advantages, returns) -> tuple[torch.Tensor, ...]:
        """Replaces ppo.Learner.sample_rows: the observations made once as the policy's
        first product reads them (padded, in the compute dtype), already in the rows'
        order, so no minibatch of any epoch pads or casts them again (round five)."""
        if self.config.shuffle == "trajectories":
            obs = self.policy.inputs(batch.obs.movedim(0, 2)).flatten(0, 1)
        else:
            obs = flat(self.policy.inputs(batch.obs))
        return (obs, *map(self.rows, (batch.actions, batch.log_probs, batch.values,
                                      advantages, returns)))

    def minibatch_loss(self, obs, actions, old_log_probs, old_values, advantages, returns,
                       weight=None):
        """Replaces ppo.Learner.minibatch_loss: the output layers, then the compiled loss."""
        return self.compiled_loss(self.policy.outputs(obs), actions, old_log_probs,
                                  old_values, advantages, returns, weight)

    def _minibatch_loss(self, outputs, actions, old_log_probs, old_values, advantages,
                        returns, weight=None):
        """The plain minibatch loss from the policy's outputs: a function of tensors
        alone, so it can be compiled whole."""
        log_prob, entropy, value = self.policy.evaluate_outputs(outputs, actions)
        if self.config.normalize_advantages:
            advantages = normalize(advantages, weight=weight)
        return ppo.loss(log_prob, entropy, value, old_log_probs, old_values, advantages,
                        returns, self.config, weight)


#: The fast twin of each algorithm's Learner, by module; DDPG has none (it keeps its own).
LEARNERS = {a2c: A2CLearner, ppo: PPOLearner}


def learner_class(algorithm, compile: bool = False):
    """What makes the fast floor's learner for `algorithm` (a module of
    wd_teach.train.algorithms) from (policy, config, options): its fast twin, its loss
    compiled where `compile` (trainer.compile), or the module's own Learner where it has no
    twin. Only a twin has a loss to compile (wd_teach.floors.COMPILED_LOSSES)."""
    twin = LEARNERS.get(algorithm)
    if twin is None:
        return algorithm.Learner
    return functools.partial(twin, compile=compile)
