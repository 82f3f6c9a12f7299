"""``zoo check`` for one SB3 zip: decode, rebuild, load weights, find statistics (the adapter's shared fit check
then compares it with the env).

Every step is the safe one ``zoo eval`` takes (restricted unpickler, ``weights_only=True``), so
"ready to evaluate" means the eval will load it; a refused global is an error naming it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from zoo.artifacts.report import WARNING, RunReport
from zoo.errors import LayoutMismatch
from zoo.frameworks.sb3.archive import SB3Archive, exp_name_for

if TYPE_CHECKING:
    from zoo.frameworks.base import Adapter
    from zoo.frameworks.sb3.rlzoo_config import RunConfig
    from zoo.registry import Entry


def algorithm_mismatch(archive: SB3Archive, entry: Entry) -> LayoutMismatch | None:
    """The zip holds another algorithm than the entry names (check and load say it the same way)."""
    if archive.algorithm and archive.algorithm != entry.algorithm:
        return LayoutMismatch(
            f"the zip holds an SB3 {archive.algorithm} model, {entry.name} is {entry.algorithm}",
            f"pass --exp-name {exp_name_for(archive.algorithm)}",
        )
    return None


def _stats(report: RunReport, archive: SB3Archive, env_id: str | None, config: RunConfig | None) -> None:
    """Record the VecNormalize statistics the eval applies; unsafe or broken ones raise."""
    from zoo.frameworks.sb3.normalize import load_stats
    from zoo.frameworks.sb3.rlzoo_config import statistics_file

    path = statistics_file(archive.path, env_id, config)
    report.details["normalization"] = None
    if path is None:
        return
    normalizer = load_stats(path)
    report.details["normalization"] = {
        "file": str(path),
        "norm_obs": normalizer is not None,
        **(normalizer.describe() if normalizer else {}),
    }


def inspect_model(
    adapter: Adapter, report: RunReport, archive: SB3Archive, entry: Entry, env_id: str | None
) -> Any | None:
    """Fill ``report`` for a zip whose registry entry is known: the model rebuilt as the loader rebuilds it (the
    fit check's input), or None when the report says why the inspection ends here; the first error raises."""
    from zoo.artifacts.finite import in_arrays
    from zoo.artifacts.report import flag_nonfinite
    from zoo.frameworks.sb3.archive import policy_kwargs
    from zoo.frameworks.sb3.build import missing_contrib, rebuild
    from zoo.frameworks.sb3.fit import SB3_HINT
    from zoo.frameworks.sb3.rlzoo_config import policy_kwargs_difference, run_config_for

    mismatch = algorithm_mismatch(archive, entry)
    if mismatch:
        raise mismatch
    if adapter.missing_extra(entry, env_id) == "sb3":
        report.flag(WARNING, "missing optional extra 'sb3' to evaluate it", SB3_HINT)
        return None
    contrib = missing_contrib(archive)
    if contrib:
        report.flag(WARNING, contrib.message, contrib.hint)
        return None
    rebuilt = rebuild(archive)
    weights = rebuilt.policy.state_dict()
    report.details.update(
        observation_space=str(rebuilt.observation_space),
        action_space=str(rebuilt.action_space),
        tensors=len(weights),
    )
    flag_nonfinite(report, in_arrays(weights), "policy.pth: ")
    if archive.notes:
        report.details["compat"] = list(archive.notes)
    config = run_config_for(archive.path, env_id) if env_id else None
    _stats(report, archive, env_id, config)
    if config is not None:
        report.details["run_config"] = config.describe()
        difference = policy_kwargs_difference(config, policy_kwargs(archive))
        if difference:
            report.flag(
                WARNING, f"policy_kwargs differ: {difference}", "zoo builds the policy the zip states"
            )
    return rebuilt
