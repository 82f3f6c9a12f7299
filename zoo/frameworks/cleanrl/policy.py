"""CleanRL policies: the acting part of a checkpoint plus its eval-mode behaviour.

Heads (``policy.head`` in the registry):

- ``q_values``/``c51``: argmax of Q; stochastic mode is epsilon-greedy (CleanRL's
  ``dqn_eval``/``c51_eval`` use epsilon 0.05).
- ``gaussian``: the mean action; stochastic mode samples ``Normal(mean, exp(logstd))``
  like ``ppo_eval``.
- ``categorical``: the module gives logits; the argmax, and in stochastic mode a sample from
  ``Categorical(logits)`` (CleanRL's JAX PPO evals sample Gumbel-max, the same distribution).
- ``deterministic_actor``: the tanh-rescaled actor; stochastic mode adds
  ``N(0, action_scale * exploration_noise)`` and clips, like ``ddpg_eval``/``td3_eval``.

All randomness comes from generators seeded at construction, so one seed gives one
result, bit for bit.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from zoo.rollout_guard import require_finite


def _flat_forward(module):
    """``module``'s forward as a flat list of the same torch calls, or ``module`` itself.

    ``nn.Module.__call__`` costs a few microseconds per submodule: at eval's batch sizes, 40% of a small
    MLP's forward pass. The module is traced once with ``torch.fx``; its ``Linear``, ``ReLU`` and ``Tanh``
    submodules (and ``F.relu``) become the function their ``forward`` calls, on the very same parameter
    tensors (shared, not copied), and the steps run in order. The same kernels on the same tensors: the
    results are bit-identical. A module that fx cannot trace, or with hooks, is called as it is.
    """
    import torch
    import torch.nn.functional as F
    from torch import fx, nn

    if any(m._forward_hooks or m._forward_pre_hooks for m in module.modules()):
        return module
    try:
        graph = fx.symbolic_trace(module).graph
    except Exception:  # noqa: BLE001 - any forward fx cannot trace keeps the module's own call
        return module
    slot: dict = {}  # node -> index of its value in the values list (0: the input)
    steps: list = []
    placeholders = [node for node in graph.nodes if node.op == "placeholder"]
    if len(placeholders) != 1:
        return module

    def ref(arg):
        if isinstance(arg, fx.Node):
            return ("v", slot[arg])
        if isinstance(arg, (tuple, list)) and any(isinstance(a, fx.Node) for a in arg):
            return None  # nested node arguments: not flattened
        return ("c", arg)

    output = None
    for node in graph.nodes:
        if node.op == "placeholder":
            slot[node] = 0
            continue
        if node.op == "output":
            output = node.args[0]
            break
        if node.op == "get_attr":
            value = module
            for part in node.target.split("."):
                value = getattr(value, part)
            step = (lambda v: lambda values: v)(value)
        else:
            target, args, kwargs = node.target, node.args, dict(node.kwargs)
            if node.op == "call_module":
                sub = module.get_submodule(target)
                if type(sub) is nn.Linear:
                    target, args = torch._C._nn.linear, (args[0], sub.weight, sub.bias)
                elif type(sub) is nn.ReLU and not sub.inplace:
                    target = torch.relu
                elif type(sub) is nn.Tanh:
                    target = torch.tanh
                else:
                    target = sub
            elif node.op == "call_method":
                return module  # tensor methods (view, ...): not flattened
            elif node.op == "call_function" and target is F.relu:
                if kwargs.pop("inplace", False):
                    return module
                target = torch.relu
            if kwargs:
                return module
            refs = [ref(a) for a in args]
            if any(r is None for r in refs):
                return module
            step = _call(target, refs)
        steps.append(step)
        slot[node] = len(steps)
    if not isinstance(output, fx.Node):
        return module
    out = slot[output]

    def forward(x):
        values = [x]
        for step in steps:
            values.append(step(values))
        return values[out]

    return forward


def _call(target, refs):
    """One step: ``target`` on the values and constants that ``refs`` name."""
    if len(refs) == 1 and refs[0][0] == "v":
        i = refs[0][1]
        return lambda values: target(values[i])
    if len(refs) == 2 and refs[0][0] == "v" and refs[1][0] == "v":
        i, j = refs[0][1], refs[1][1]
        return lambda values: target(values[i], values[j])
    if len(refs) == 3 and refs[0][0] == "v" and refs[1][0] == "c" and refs[2][0] == "c":
        i, w, b = refs[0][1], refs[1][1], refs[2][1]
        return lambda values: target(values[i], w, b)
    return lambda values: target(*[values[r] if kind == "v" else r for kind, r in refs])


class CleanRLPolicy:
    """A :class:`zoo.policy.Policy` over one CleanRL ``nn.Module``."""

    is_recurrent = False

    def __init__(
        self, module, head: str, observation_space, action_space, eval_cfg: dict, device: str, seed: int
    ):
        import torch

        self.module = module.eval()
        self._forward = _flat_forward(self.module.actor_mean if head == "gaussian" else self.module)
        self.head = head
        self.observation_space = observation_space
        self.action_space = action_space
        self.device = torch.device(device)
        self.epsilon = float(eval_cfg.get("epsilon", 0.0))
        self.exploration_noise = float(eval_cfg.get("exploration_noise", 0.0))
        self._rng = np.random.default_rng(seed)
        self._torch_rng = torch.Generator().manual_seed(seed)
        if head == "deterministic_actor":
            self._low = np.asarray(action_space.low, dtype=np.float32)
            self._high = np.asarray(action_space.high, dtype=np.float32)

    def _noise(self, shape) -> Any:
        import torch

        return torch.randn(shape, generator=self._torch_rng).to(self.device)

    def act(
        self, obs_batch: np.ndarray, state: Any = None, deterministic: bool = True
    ) -> tuple[np.ndarray, Any]:
        import torch

        with torch.inference_mode():
            if self.device.type == "cpu" and type(obs_batch) is np.ndarray and obs_batch.dtype == np.float32:
                x = torch.from_numpy(obs_batch)  # what as_tensor gives here, without its argument handling
            else:
                x = torch.as_tensor(obs_batch, device=self.device, dtype=torch.float32)
            if self.head in ("q_values", "c51"):
                values = self._forward(x)
                require_finite(values, "Q-values")  # their argmax would otherwise be a valid-looking action
                actions = values.argmax(dim=1).cpu().numpy()
                if not deterministic and self.epsilon > 0:
                    explore = self._rng.random(len(actions)) < self.epsilon
                    random_actions = self._rng.integers(self.action_space.n, size=len(actions))
                    actions = np.where(explore, random_actions, actions)
                return actions, state
            if self.head == "categorical":
                logits = self._forward(x)
                require_finite(logits, "action logits")
                if deterministic:
                    return logits.argmax(dim=1).cpu().numpy(), state
                probs = torch.softmax(logits.double().cpu(), dim=1)
                return torch.multinomial(probs, 1, generator=self._torch_rng).squeeze(1).numpy(), state
            if self.head == "gaussian":
                mean = self._forward(x)
                if not deterministic:
                    mean = mean + torch.exp(self.module.actor_logstd) * self._noise(mean.shape)
                return mean.cpu().numpy(), state
            actions = self._forward(x)
            if not deterministic and self.exploration_noise > 0:
                actions = (
                    actions + self._noise(actions.shape) * self.module.action_scale * self.exploration_noise
                )
                return np.clip(actions.cpu().numpy(), self._low, self._high), state
            return actions.cpu().numpy(), state

    def reset(self, done_mask: np.ndarray) -> None:
        """Feed-forward policies carry no state between steps."""

    def export_spec(self):
        """The deterministic head on a CPU copy of the network: argmax index, mean, or scaled tanh actor."""
        import copy

        from zoo.exporter.modules import ArgmaxActions
        from zoo.exporter.obs import obs_layout
        from zoo.policy import ExportSpec

        module = copy.deepcopy(self.module).cpu().eval()
        obs_shape, groups = obs_layout(self.observation_space)
        if self.head in ("q_values", "c51", "categorical"):
            what = {
                "c51": "argmax over expected Q-values (C51 atoms)",
                "categorical": "argmax over the actor's logits",
            }
            what = what.get(self.head, "argmax over Q-values")
            return ExportSpec(ArgmaxActions(module), obs_shape, groups, None, baked=[what])
        if self.head == "gaussian":
            return ExportSpec(module.actor_mean, obs_shape, groups, None, baked=["Gaussian mean"])
        low, high = self._low.tolist(), self._high.tolist()
        return ExportSpec(
            module, obs_shape, groups, None, baked=[f"tanh rescaled to the action bounds [{low}, {high}]"]
        )
