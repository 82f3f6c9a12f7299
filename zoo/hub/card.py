"""Model cards: a jinja2 body from ``cards_templates/`` under a YAML header built by huggingface_hub.

The header comes from ``ModelCardData`` and ``EvalResult`` so that it is exactly what the Hub and
its RL leaderboard read (``library_name``, ``tags``, ``model-index`` with a ``mean_reward`` metric
valued ``"{mean:.2f} +/- {std:.2f}"``). Templates are one per framework plus shared partials.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from zoo.errors import ZooError
from zoo.version import __version__


def templates_dir() -> Path:
    """``cards_templates/`` shipped in the wheel, else the checkout's."""
    here = Path(__file__).resolve().parent.parent
    for candidate in (here / "_bundled" / "cards_templates", here.parent / "cards_templates"):
        if candidate.is_dir():
            return candidate
    raise ZooError("cards_templates/ not found; reinstall rl-zoo-hub")


def card_metadata(target, eval_data: dict):
    """The YAML header, built with huggingface_hub's own classes: the library's Hub name and tags."""
    from huggingface_hub import EvalResult, ModelCardData

    entry, env_id, hub = target.entry, target.env_id, target.adapter.hub
    metrics = eval_data["metrics"]
    result = EvalResult(
        task_type="reinforcement-learning",
        task_name="reinforcement-learning",
        dataset_type=env_id,
        dataset_name=env_id,
        metric_type="mean_reward",
        metric_name="mean_reward",
        metric_value=f"{metrics['return_mean']:.2f} +/- {metrics['return_std']:.2f}",
    )
    library = entry.hub.get("library_name", hub.library_name)
    tags = list(
        dict.fromkeys(
            [
                env_id,
                library,
                *hub.tags,
                *entry.hub.get("tags", ()),
                "reinforcement-learning",
                "deep-reinforcement-learning",
                "zoo",
            ]
        )
    )
    return ModelCardData(library_name=library, tags=tags, model_name=entry.algorithm, eval_results=[result])


def render_card(target, context: dict[str, Any]):
    """A ``huggingface_hub.ModelCard``: header from :func:`card_metadata`, body from the adapter's template."""
    import jinja2
    from huggingface_hub import ModelCard

    from zoo.artifacts.tensorboard import text_summary

    entry, adapter, run = target.entry, target.adapter, target.run
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(templates_dir()),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )
    template = env.get_template(f"{adapter.hub.card_template}.md.j2")
    body = template.render(
        algorithm=entry.algorithm,
        exp_name=entry.name,
        framework=adapter.hub.display_name,
        zoo_version=__version__,
        hyperparameters=text_summary(run.events_file) if run.events_file else None,
        **adapter.card_context(entry, run),
        **context,
    )
    data = card_metadata(target, context["eval"])
    return ModelCard(f"---\n{data.to_yaml()}\n---\n\n{body}")
