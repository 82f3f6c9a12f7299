"""A hub repo named where a path could be (``zoo export ORG/REPO``): what it holds, and its model fetched.

What a repo holds (its registry entry and env id) is read from its model card, the one file every release
has, whoever made it: the YAML header gives the env id (``model-index``'s dataset, else the one tag shaped
like an env id) and the library; the experiment is the ``--exp-name`` of the card's enjoy command (zoo's
cards and CleanRL's both show one), else the one registry entry of that library whose algorithm is the
card's model name (huggingface_sb3's cards: ``PPO`` of stable-baselines3 is ``sb3_ppo``). ``--exp-name`` and
``--env-id`` say it instead; given both, the card is not fetched at all. The model then comes as
``zoo enjoy`` fetches it (:func:`zoo.hub.fetch.resolve_model`), from the commit the card was read at.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from zoo.errors import BrokenFile, UsageError, ZooError

if TYPE_CHECKING:
    from zoo.hub.fetch import Source
    from zoo.registry import Entry, Registry

_NAME = r"\w(?:[\w.-]{0,94}\w)?"
#: The Hub's repo id rules, namespace required: word characters, ``.`` and ``-``, no ``--`` or ``..``.
REPO_ID = re.compile(rf"(?!.*(?:--|\.\.)){_NAME}/{_NAME}", re.ASCII)
#: An env id a card may name: gymnasium's ``[namespace/]Name-vN`` and zoo's task names, never ``module:Name``
#: (gymnasium imports that module, and a card must not choose code to run).
_ENV_ID = re.compile(r"[A-Za-z0-9][\w./-]{0,199}", re.ASCII)
_GYM_ID = re.compile(r"(?:[\w.-]+/)?[\w.-]+-v\d+", re.ASCII)
_EXP_FLAG = re.compile(r"\s--exp-name[ =]([\w.-]{1,100})", re.ASCII)
_ENJOY = re.compile(r"\benjoy\b")


def repo_id_of(target: str) -> str:
    """``target`` as a hub repo id; a usage error when it is not one (the caller found no local path by that name)."""
    if not REPO_ID.fullmatch(target):
        raise UsageError(
            f"{target} is neither an existing path nor a hub repo id (ORG/NAME)",
            hint="give a run dir or model file that exists, or a repo id such as "
            "cleanrl/CartPole-v1-dqn-seed1",
        )
    return target


def read_card(text: str, registry: Registry) -> tuple[str | None, str | None]:
    """``(experiment, env id)`` as a model card says them; None for what it does not say."""
    from zoo.hub.card_header import card_metadata

    try:
        meta = card_metadata(text)
    except ValueError as exc:
        raise BrokenFile(
            f"the model card: {exc}", hint="say what the repo holds with --exp-name and --env-id"
        ) from None
    results = [r for m in _dicts(meta.get("model-index")) for r in _dicts(m.get("results"))]
    datasets = [d for r in results if isinstance(d := r.get("dataset"), dict)]
    named = [v for d in datasets for v in (d.get("name"), d.get("type")) if isinstance(v, str)]
    tags = meta.get("tags") if isinstance(meta.get("tags"), list) else []
    shaped = list(dict.fromkeys(t for t in tags if isinstance(t, str) and _GYM_ID.fullmatch(t)))
    candidates = named[:1] or (shaped if len(shaped) == 1 else [])
    env_id = candidates[0] if candidates and _ENV_ID.fullmatch(candidates[0]) else None
    named_exp = _enjoy_exp_name(text)
    if named_exp:
        return named_exp, env_id
    models = [m.get("name") for m in _dicts(meta.get("model-index"))]
    algorithm = next((name for name in models if isinstance(name, str)), None)
    return _entry_of(registry, meta.get("library_name"), algorithm), env_id


def _enjoy_exp_name(text: str) -> str | None:
    """The ``--exp-name`` of the first enjoy command the card shows: zoo's ``zoo enjoy --exp-name dqn ...``,
    CleanRL's ``python -m cleanrl_utils.enjoy --exp-name dqn``. Line by line, in linear time whatever the card."""
    for line in text.splitlines():
        flag = _EXP_FLAG.search(line)
        if flag and _ENJOY.search(line, 0, flag.start()):
            return flag.group(1)
    return None


def _dicts(value: Any) -> list[dict]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _entry_of(registry: Registry, library: Any, algorithm: str | None) -> str | None:
    """The one registry entry of ``library`` (the card's ``library_name``) whose algorithm is ``algorithm``."""
    from zoo.frameworks import get_adapter

    if not isinstance(library, str) or algorithm is None:
        return None
    found = [
        e.name
        for e in registry.entries.values()
        if e.algorithm.lower() == algorithm.lower()
        and e.hub.get("library_name", get_adapter(e.framework).hub.library_name) == library
    ]
    return found[0] if len(found) == 1 else None


def _card_text(source: Source) -> str:
    from zoo.hub.fetch import MAX_CARD_BYTES

    with source.path.open("rb") as fh:
        raw = fh.read(MAX_CARD_BYTES + 1)
    if len(raw) > MAX_CARD_BYTES:
        raise BrokenFile(
            f"the model card of {source.repo_id} is over {MAX_CARD_BYTES >> 20} MiB; not reading it",
            hint="say what the repo holds with --exp-name and --env-id",
        )
    return raw.decode("utf-8", errors="replace")


def resolve_repo(
    repo_id: str,
    registry: Registry,
    *,
    exp_name: str | None,
    env_id: str | None,
    revision: str,
    allow_download: bool,
    notify: Callable[[str], None] | None = None,
) -> tuple[Entry, str, Source]:
    """The repo's registry entry, env id and model (cache first; the hub only with ``allow_download``).
    ``exp_name``/``env_id`` say what the repo holds instead of its card; ``notify`` hears each download first."""
    from zoo.hub.fetch import fetch_card, hub_file, resolve_model

    at = revision
    if exp_name is None or env_id is None:
        card = fetch_card(repo_id, revision, allow_download, notify)
        at = card.commit or revision  # the model the card describes, even when the branch moved on since
        said_exp, said_env = read_card(_card_text(card), registry)
        exp_name, env_id = exp_name or said_exp, env_id or said_env
        if exp_name is None:
            raise ZooError(
                f"the model card of {repo_id} names no experiment zoo knows",
                hint="say it with --exp-name (zoo registry list)",
            )
        if env_id is None:
            raise ZooError(f"the model card of {repo_id} names no env id", hint="say it with --env-id")
    entry = registry.get(exp_name)
    where = hub_file(entry, env_id=env_id, run_seed=0, hf_entity=None, hf_repository=repo_id, revision=at)
    source = resolve_model(dataclasses.replace(where, derived_from=""), None, allow_download, notify)
    return entry, env_id, dataclasses.replace(source, revision=revision)
