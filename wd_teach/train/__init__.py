"""Training (notebooks 07 and 08): shared policies learn from rollouts that stay on the device.

    config.py      the run's settings, read from an env's config.yaml
    policy.py      the networks, one per group of agents
    acting.py      actions from a policy, drawn by the sampler
    rollout.py     a rollout of steps, kept on the device
    algorithms/    A2C, PPO, DDPG: one loss each
    trainer.py     Trainer: the loop
    metrics.py report.py checkpoint.py runs.py speed.py lightning.py   around the loop
"""
