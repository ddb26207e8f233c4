"""Training (notebooks 07 and 08): shared policies learn from rollouts that stay on the device.

    config.py      the run's settings, read from an env's config.yaml
    groups.py      which agents each policy acts for
    policy.py      the networks, one per group of agents (their fast twins: wd_teach/fast/)
    acting.py      actions from a policy, drawn by the sampler
    rollout.py     a rollout of steps, kept on the device
    algorithms/    A2C, PPO, DDPG: one loss each
    trainer.py     Trainer: the loop
    evaluation.py  the trained policies play fresh envs, through the rollout's own loop
    metrics.py report.py checkpoint.py runs.py speed.py lightning.py   around the loop
    data_parallel.py   one GPU per process: gradients, weights, metrics shared (08, 09)

`from wd_teach.train import Trainer` works; the trainer module is imported on first use.
"""


def __getattr__(name: str):
    if name == "Trainer":
        from wd_teach.train.trainer import Trainer

        return Trainer
    raise AttributeError(f"module 'wd_teach.train' has no attribute {name!r}")
