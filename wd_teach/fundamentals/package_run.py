"""What compute-sanitizer watches of the package's own kernels (tests/gpu/
test_sanitizer_package_gpu.py): Tag continuous, Tag on a grid and speaker_listener, each
stepped through two episodes on one backend, every action drawn by the sampler (argmax too)
where the env's actions are discrete heads of one size for every agent, and every finished env
reset on the device. So each env's step kernels, Tag's nearest-neighbour search, the sampler's
two kernels and the resetter run, and little else: a training would add hundreds of torch's
kernels, each as slow under the tool as ours (a short one took minutes under memcheck).

    python -m wd_teach.fundamentals.package_run --backend numba [--envs 8]
"""

from __future__ import annotations

import argparse

import torch
from gymnasium import spaces

#: Both Tag games at one small size where every kernel still runs (the search over 60 agents).
TAG = {"num_taggers": 6, "num_runners": 54, "num_nearest": 5, "episode_length": 6}
ENVS = {"tag_continuous": TAG, "tag_grid": TAG, "speaker_listener": {"episode_length": 6}}
NUM_ENVS = 8


def heads_of(space: spaces.Space) -> list[int] | None:
    """The sampler's heads for an action space it can draw for, else None."""
    if isinstance(space, spaces.Discrete):
        return [int(space.n)]
    if isinstance(space, spaces.MultiDiscrete) and space.nvec.ndim == 1:
        return [int(n) for n in space.nvec]
    return None


def run(backend: str, num_envs: int = NUM_ENVS) -> dict[str, int]:
    """Step every env of ENVS for two episodes on `backend`; the steps each took."""
    from wd_teach.env.registry import find_env
    from wd_teach.env.wrapper import EnvWrapper
    from wd_teach.sampler.sampler import Sampler

    steps = {}
    for name, params in ENVS.items():
        wrapper = EnvWrapper(find_env(name).env_class(**params), num_envs, backend, seed=1)
        wrapper.reset()
        heads = heads_of(wrapper.action_space)
        sampler = (Sampler(wrapper.store, heads, backend=backend, seed=2)
                   if heads is not None else None)
        for step in range(2 * wrapper.env.episode_length):
            if sampler is None:
                actions = wrapper.random_actions()
            else:
                probs = [torch.softmax(torch.randn(num_envs, wrapper.num_agents, n,
                                                   device=wrapper.device), dim=-1)
                         for n in heads]
                draw = sampler.argmax if step % 3 == 2 else sampler.sample
                actions = draw(probs if len(probs) > 1 else probs[0])
            wrapper.step(actions)
        if wrapper.device.type == "cuda":
            torch.cuda.synchronize()
        steps[name] = 2 * wrapper.env.episode_length
    return steps


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", default="numba")
    parser.add_argument("--envs", type=int, default=NUM_ENVS)
    args = parser.parse_args(argv)
    for name, count in run(args.backend, args.envs).items():
        print(f"stepped {name} {count} times on {args.backend}")


if __name__ == "__main__":
    main()
