"""Interop: wd-teach's batched, on-device envs as other libraries expect an env to look.

A layer above the env layer: it builds on EnvWrapper and the env contract alone, so every
env, shipped or a learner's own folder, fits without an edit, and nothing below imports it.

    torchrl.py     TorchRLEnv: any env as a TorchRL EnvBase, agents grouped by their roles
                   (pip install "wd-teach[torchrl]")
    gymnasium.py   GymnasiumVectorEnv, GymnasiumEnv: a single-agent env as gymnasium's
                   vector env (NumPy in and out), and one copy of it as a gymnasium.Env
    pettingzoo.py  PettingZooEnv: one game of any multi-agent env as a PettingZoo
                   ParallelEnv, agents named by role (pip install "wd-teach[pettingzoo]")
    wrapped.py     what they share: an env from a name, a folder or an object; a new seed
                   for the start states; agents grouped by role

`import wd_teach` does not import this layer: TorchRL and PettingZoo are optional extras.
"""
