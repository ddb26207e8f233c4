"""Checker for 00_welcome: how big is the grid for a given simulation?

Knowing the launch shape by heart is what lets a learner read a kernel: which block is which
environment, which thread is which agent, and which threads have no agent at all.
"""

from __future__ import annotations

from wd_teach.errors import WdTeachError
from wd_teach.exercises.verdict import verdict_of
from wd_teach.launch import launch_geometry


@verdict_of("your three numbers")
def check_launch_shape(num_envs: int, num_agents: int, max_threads: int,
                       total_blocks, threads_per_block, idle_threads) -> bool:
    """Check the three numbers a learner worked out for `num_envs` x `num_agents` agents on a
    GPU whose blocks hold at most `max_threads` threads.

    total_blocks:       blocks in the whole grid
    threads_per_block:  threads in each block
    idle_threads:       threads in the whole grid that have no agent to work on
    """
    answers = {"total_blocks": total_blocks, "threads_per_block": threads_per_block,
               "idle_threads": idle_threads}
    missing = [name for name, value in answers.items() if value is None or value is ...]
    if missing:
        print(f"Not yet: fill in {', '.join(missing)}.")
        return False
    try:
        geometry = launch_geometry(num_envs, num_agents, max_threads)
    except WdTeachError as err:
        print(f"These sizes cannot be launched at all: {err}")
        return False
    blocks = geometry.grid[0] * geometry.grid[1]
    threads = geometry.threads
    idle = blocks * threads - num_envs * num_agents
    want = {"total_blocks": blocks, "threads_per_block": threads, "idle_threads": idle}
    hints = {
        "threads_per_block": "a block holds one thread per agent, but never more than "
                             "max_threads: min(num_agents, max_threads).",
        "total_blocks": "each environment needs ceil(num_agents / threads_per_block) blocks, "
                        "and every environment gets its own.",
        "idle_threads": "every block has threads_per_block threads; the ones past an "
                        "environment's last agent have nothing to do. Count all threads, then "
                        "take away one per agent slot.",
    }
    right = True
    for name in want:
        if answers[name] == want[name]:
            print(f"  {name} = {answers[name]:,}: right.")
        else:
            right = False
            print(f"  {name} = {answers[name]}: not quite. Hint: {hints[name]}")
    if right:
        print(f"All right: a grid {geometry.grid} of blocks of {threads:,} threads covers "
              f"{num_envs:,} x {num_agents:,} agents.")
    return right
