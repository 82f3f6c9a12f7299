"""zoo: the model-zoo layer of reinforcement learning."""

__version__ = "0.1.0"
