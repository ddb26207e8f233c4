"""Example environments for wd_teach, one folder each (imported as wd_teach_envs)."""
