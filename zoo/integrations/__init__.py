"""zoo inside a training process: callbacks that evaluate as ``zoo eval`` does and record as ``zoo watch`` does.

- :mod:`zoo.integrations.sb3`: ``ZooEvalCallback``, a Stable-Baselines3 callback.

Each module imports its library when it is itself imported, so ``import zoo`` needs none of them.
"""
