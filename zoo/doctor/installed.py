"""What this machine has, as ``zoo doctor`` reports it: read from package metadata and the environment.

Nothing here installs, downloads or reads a credential. Versions come from distribution metadata (a
package is not imported to learn its version); torch alone is imported, because only torch can say
whether CUDA is usable. The Hub settings are environment variables; of a token only the *name* of
the variable that holds one is reported, never its value, and no token file is opened.
"""

from __future__ import annotations

import os
import platform
import sys
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, distribution, distributions, version

from zoo.version import __version__

DIST = "rl-zoo-hub"
#: The libraries every zoo command leans on, reported first.
CORE = ("torch", "gymnasium", "numpy", "huggingface_hub", "safetensors", "onnx", "onnxruntime")
#: Environment variables that hold a Hub token (huggingface_hub reads them in this order).
TOKEN_VARIABLES = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")


def installed_version(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


@dataclass
class Extra:
    """One of zoo's optional dependency groups: the distributions it brings and what of it is missing."""

    name: str
    requires: list[str]
    missing: list[str] = field(default_factory=list)

    @property
    def installed(self) -> bool:
        return not self.missing


#: How deep the extras an extra asks of its requirements are followed (``gymnasium[mujoco]``: one level).
EXTRA_DEPTH = 3


def extras() -> list[Extra]:
    """zoo's extras from its own metadata (``Requires-Dist: x; extra == "name"``), each checked: every
    distribution it requires is installed, with what the extras it asks of them require (``gymnasium[mujoco]``
    is gymnasium *and* mujoco), and the modules zoo imports from it are found (``find_spec``, nothing imported:
    :func:`zoo.frameworks.extra_modules`). An extra counts as installed when ``import`` would find all of it."""
    from importlib.util import find_spec

    from zoo.frameworks import extra_modules

    try:
        meta = distribution(DIST).metadata
    except PackageNotFoundError:  # zoo run from a source tree that was never installed
        return []
    found = {name: Extra(name, []) for name in meta.get_all("Provides-Extra") or []}
    for name, extra in found.items():
        for requirement in _requirements(meta, name):
            _expand(requirement, extra, EXTRA_DEPTH)
        extra.missing += [
            m for m in extra_modules(name) or () if m not in extra.missing and find_spec(m) is None
        ]
    return list(found.values())


def requirement_problems(names: list[str]) -> list[str]:
    """Each installed distribution that zoo's extras ``names`` require at a version outside zoo's range (a
    missing one is the module checks' to report); nothing when zoo runs from a source tree never installed."""
    try:
        meta = distribution(DIST).metadata
    except PackageNotFoundError:
        return []
    problems = []
    for name in names:
        for requirement in _requirements(meta, name):
            found = installed_version(requirement.name)
            if found is not None and not requirement.specifier.contains(found, prereleases=True):
                problems.append(
                    f"{requirement.name} {found} is outside zoo's {requirement.name}{requirement.specifier}"
                )
    return problems


def _requirements(meta, extra: str) -> list:
    """The requirements a distribution's metadata lists under ``extra``."""
    from packaging.requirements import Requirement

    requirements = [Requirement(line) for line in meta.get_all("Requires-Dist") or []]
    return [r for r in requirements if r.marker is not None and r.marker.evaluate({"extra": extra})]


def _expand(requirement, extra: Extra, depth: int) -> None:
    """Record ``requirement`` in ``extra`` (missing when not installed), then what the extras it names require."""
    if requirement.name in extra.requires:
        return
    extra.requires.append(requirement.name)
    if installed_version(requirement.name) is None:
        extra.missing.append(requirement.name)
        return
    if depth > 0:
        meta = distribution(requirement.name).metadata
        for wanted in sorted(requirement.extras):
            for nested in _requirements(meta, wanted):
                _expand(nested, extra, depth - 1)


def torch_backend() -> dict:
    """torch's version and what it can run on here (importing torch is the only way to know)."""
    try:
        import torch
    except ImportError:
        return {"installed": False, "cuda_available": False}
    cuda = torch.cuda.is_available()
    return {
        "installed": True,
        "version": torch.__version__,
        "cuda_build": torch.version.cuda,
        "cuda_available": cuda,
        "devices": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] if cuda else [],
        "cpu_threads": torch.get_num_threads(),
    }


def hub_settings() -> dict:
    """Where the Hugging Face cache is and how the client is pointed, from the environment alone."""
    from huggingface_hub import constants  # computes paths from the environment; creates nothing

    token_var = next((name for name in TOKEN_VARIABLES if os.environ.get(name)), None)
    return {
        "endpoint": os.environ.get("HF_ENDPOINT") or constants.ENDPOINT,
        "endpoint_set": "HF_ENDPOINT" in os.environ,
        "cache": constants.HF_HUB_CACHE,
        "home": constants.HF_HOME,
        "token": f"set in {token_var} (value not shown)" if token_var else "no token variable set",
        "offline": os.environ.get("HF_HUB_OFFLINE", "") not in ("", "0", "false", "False"),
        "xet_disabled": os.environ.get("HF_HUB_DISABLE_XET", "") not in ("", "0"),
        "zoo_allow_network": os.environ.get("ZOO_ALLOW_NETWORK", "") == "1",
    }


def hardware() -> dict:
    """The host: CPU count, memory and platform (what a handoff's resource caps are read against)."""
    memory = None
    if hasattr(os, "sysconf") and "SC_PHYS_PAGES" in os.sysconf_names:
        memory = round(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 2**30, 1)
    return {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "memory_gib": memory,
        "python": sys.version.split()[0],
    }


def frameworks() -> dict[str, dict]:
    """Each framework adapter's libraries with their installed versions (None: not installed)."""
    from zoo.frameworks import framework_names, get_adapter

    return {
        name: {pkg: installed_version(pkg) for pkg in get_adapter(name).packages}
        for name in framework_names()
    }


def environment() -> dict:
    """``zoo doctor`` with no flags: everything above, as one JSON-ready dict."""
    return {
        "zoo": __version__,
        "packages": {name: installed_version(name) for name in CORE},
        "torch": torch_backend(),
        "frameworks": frameworks(),
        "extras": {e.name: {"installed": e.installed, "missing": e.missing} for e in extras()},
        "hub": hub_settings(),
        "hardware": hardware(),
    }


def freeze() -> list[str]:
    """A dependency lock in ``pip freeze`` form, from the installed distributions' metadata (pip is not run)."""
    pins = {dist.metadata["Name"]: dist.version for dist in distributions() if dist.metadata["Name"]}
    return [f"{name}=={pins[name]}" for name in sorted(pins, key=str.lower)]
