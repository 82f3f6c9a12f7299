"""The framework-free forms of a release, each proven to act like the policy before it is kept.

``zoo push`` stages them beside the run's native files:

- ``agent.pt``: TorchScript called the Open RL Leaderboard's way (:mod:`zoo.release.agent`);
- ``model.safetensors`` + ``config.json``: the tensors and zoo's description of the computation
  (:mod:`zoo.release.config`), which ``zoo eval`` / ``zoo enjoy`` load first, with torch alone;
- ``policy.onnx`` + ``policy.onnx.metadata.json``: what ``zoo export`` writes.

Each is written, loaded back the way its users load it, and compared with the policy's deterministic action
on the parity check's observations (:func:`zoo.exporter.parity.check_parity`). The first form that fails
stops the release: :class:`FormFailed` names it and how far it was off.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from pathlib import Path

from zoo.errors import ZooError
from zoo.release.agent import AGENT_FILE
from zoo.release.config import CONFIG_FILE, FORMAT, FORMAT_VERSION, WEIGHTS_FILE
from zoo.strict_json import dumps

ONNX_FILE = "policy.onnx"
#: What each form is for, as the card's file table says it.
PURPOSE = {
    AGENT_FILE: "TorchScript for the Open RL Leaderboard and torch alone: raw observations in, env actions out",
    WEIGHTS_FILE: "every tensor of the policy (normalizer included), nothing pickled",
    CONFIG_FILE: "how to compute the action from model.safetensors (zoo-policy format)",
    ONNX_FILE: "ONNX for onnxruntime and robots (zoo export)",
    ONNX_FILE + ".metadata.json": "what policy.onnx takes and gives, and its parity evidence",
}


class FormFailed(ZooError):
    """A form does not act like the policy; nothing of the release is uploaded."""


@dataclass
class Form:
    name: str
    path: Path
    parity: dict


def _proven(name: str, policy, runner, spec, tolerance: float) -> dict:
    """The form's parity with the source policy, on raw observations (``spec``: the one the form was written from)."""
    from zoo.exporter import _parity_failure, term_scales
    from zoo.exporter.parity import check_parity

    parity = check_parity(policy, runner, spec.obs_groups, tolerance=tolerance, scales=term_scales(spec))
    if not parity.ok:
        raise FormFailed(
            f"{name} does not act like the model: {_parity_failure(parity)}; nothing was uploaded",
            hint="this is a bug in zoo's release forms for this policy; please report it "
            "(zoo export writes the other forms)",
        )
    return parity.to_json()


def write_forms(
    policy,
    *,
    facts: dict,
    preset_notes: list[str],
    obs_terms: dict,
    folder: Path,
    exported_at: str | None = None,
    exporter: str = "auto",
) -> list[Form]:
    """Every framework-free form of ``policy`` in ``folder``, each proven; ``facts`` are the export sidecar's
    (task, env, exp_name, framework, checkpoint). Raises FormFailed, or ZooError when the policy cannot be
    exported at all. The same policy and ``exported_at`` give the same bytes (a re-push of an unchanged run
    changes nothing). ``exporter``: the ONNX exporter, as ``zoo export --exporter`` takes it."""
    import numpy as np
    import torch

    from zoo.exporter import DEFAULT_TOLERANCE, _is_box, _spec, export_policy, with_obs_terms
    from zoo.exporter.obs import flatten_obs
    from zoo.exporter.parity import sample_batch

    folder.mkdir(parents=True, exist_ok=True)
    # once, its observation terms applied: every form is written from it and takes raw observations
    spec = with_obs_terms(_spec(policy, facts.get("framework", "this framework's")), obs_terms)
    onnx = export_policy(
        policy,
        target=facts,
        preset_notes=preset_notes,
        fmt="onnx",
        out=folder / ONNX_FILE,
        exported_at=exported_at,
        exporter=exporter,
        spec=spec,
    )
    tolerance = DEFAULT_TOLERANCE if _is_box(policy.action_space) else 0.0
    example = torch.from_numpy(
        flatten_obs(sample_batch(policy.observation_space, 2, np.random.default_rng(1)), spec.obs_groups)
    )
    forms = [
        Form(ONNX_FILE, onnx.path, onnx.meta["parity"]),
        Form(ONNX_FILE + ".metadata.json", onnx.sidecar, onnx.meta["parity"]),
    ]
    forms.append(_agent(policy, spec, facts["task"], example, folder, tolerance))
    forms += _safetensors(policy, spec, onnx.meta, example, folder, tolerance)
    return forms


def _agent(policy, spec, env_id: str, example, folder: Path, tolerance: float) -> Form:
    from zoo.release.agent import AgentRunner, write_agent

    path = folder / AGENT_FILE
    write_agent(spec, env_id, policy.action_space, example, path)
    runner = AgentRunner(
        path,
        policy.observation_space,
        env_id,
        spec.obs_shape,
        policy.action_space,
        spec.recurrent is not None,
    )
    return Form(AGENT_FILE, path, _proven(AGENT_FILE, policy, runner, spec, tolerance))


def _safetensors(policy, spec, sidecar: dict, example, folder: Path, tolerance: float) -> list[Form]:
    import torch
    from safetensors.torch import save_file

    from zoo.artifacts.digest import sha256_file
    from zoo.exporter.writers import _core_inputs
    from zoo.release.config import GraphRunner, read_config
    from zoo.release.graph import trace

    inputs = ["obs", "h", "c"] if spec.recurrent is not None else ["obs"]
    graph, tensors = trace(spec.module, _core_inputs(spec, example), inputs)
    weights = folder / WEIGHTS_FILE
    # one metadata key: safetensors writes a header's keys in no fixed order, and a re-push must write the same bytes
    save_file({k: v.contiguous() for k, v in tensors.items()}, str(weights), metadata={"format": "pt"})
    config = {key: value for key, value in sidecar.items() if key not in ("opset", "file_sha256", "exporter")}
    outputs = ["actions", "h", "c"] if spec.recurrent is not None else ["actions"]
    if config.get("recurrent"):  # the graph's names for the states, not the ONNX file's h_in / h_out
        shape = next(iter(config["recurrent"]["state_shapes"].values()))
        config["recurrent"] = {
            **config["recurrent"],
            "state_shapes": {name: shape for name in inputs[1:]},
            "inputs": inputs,
            "outputs": outputs,
        }
    config.update(
        {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "inputs": inputs,
            "outputs": outputs,
            "exporter": {"name": "torch.export", "torch_version": torch.__version__},
            "weights": WEIGHTS_FILE,
            "file_sha256": sha256_file(weights),
            "graph": graph,
        }
    )
    path = folder / CONFIG_FILE
    path.write_text(dumps(config, what=CONFIG_FILE, indent=1) + "\n", encoding="utf-8")
    runner = GraphRunner(path, read_config(path))  # read back as a downloader reads it
    config["parity"] = _proven(f"{WEIGHTS_FILE} + {CONFIG_FILE}", policy, runner, spec, tolerance)
    path.write_text(dumps(config, what=CONFIG_FILE, indent=1) + "\n", encoding="utf-8")
    return [Form(WEIGHTS_FILE, weights, config["parity"]), Form(CONFIG_FILE, path, config["parity"])]


def without_loader_files(forms: dict[str, Path], loader_files: tuple[str, ...]) -> dict[str, Path]:
    """``forms`` less those whose names a library's own hub loader reads at the repo root (its run's files keep
    those names), and less model.safetensors when its config.json goes: a weights file no config describes."""
    from zoo.release.config import CONFIG_FILE, WEIGHTS_FILE

    dropped = set(loader_files) | ({WEIGHTS_FILE} if CONFIG_FILE in loader_files else set())
    return {name: path for name, path in forms.items() if name not in dropped}


def forms_for_target(target, folder: Path, options=None, exporter: str = "auto") -> list[Form]:
    """:func:`write_forms` for a resolved target (:class:`zoo.targets.Target`): its policy loaded as ``zoo
    eval`` loads it (``options``: :class:`zoo.frameworks.LoadOptions`, default on the CPU), the facts from its
    eval env. UnsupportedError when its policy has no export."""
    import dataclasses

    from zoo.errors import UnsupportedError
    from zoo.frameworks import LoadOptions
    from zoo.targets import env_spec, load_target_policy

    options = dataclasses.replace(options or LoadOptions(), device="cpu", seed=0)
    policy = load_target_policy(target, options)
    if getattr(policy, "export_spec", None) is None:
        raise UnsupportedError(f"{target.entry.framework} policies cannot be exported yet")
    spec = env_spec(target, options=options)
    facts = {
        "task": target.env_id,
        "env": spec.to_json(),
        "exp_name": target.entry.name,
        "framework": target.entry.framework,
        "checkpoint": target.model_file.name,
    }
    stamp = _dt.datetime.fromtimestamp(target.model_file.stat().st_mtime, _dt.UTC).isoformat(
        timespec="seconds"
    )
    return write_forms(
        policy,
        facts=facts,
        preset_notes=spec.deployment_notes(),
        obs_terms=spec.obs_terms(),
        folder=folder,
        exported_at=stamp,
        exporter=exporter,
    )
