"""Model cards: a jinja2 body from ``cards_templates/`` under a YAML header built by huggingface_hub.

The header comes from ``ModelCardData`` and ``EvalResult`` so that it is exactly what the Hub and
its RL leaderboard read (``library_name``, ``tags``, ``model-index`` with a ``mean_reward`` metric
valued ``"{mean:.2f} +/- {std:.2f}"``). Templates are one per framework plus shared partials.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import zoo
from zoo.errors import ZooError
from zoo.registry import Entry

_LAYOUT_TEXT = {
    "state_dict": "`torch.save(model.state_dict())`",
    "dict": "`torch.save({{'{w}': state_dict, '{a}': vars(args)}})`",
    "tuple": "`torch.save(({parts}))`, one state dict per part",
}


def templates_dir() -> Path:
    """``cards_templates/`` shipped in the wheel, else the checkout's."""
    here = Path(__file__).resolve().parent.parent
    for candidate in (here / "_bundled" / "cards_templates", here.parent / "cards_templates"):
        if candidate.is_dir():
            return candidate
    raise ZooError("cards_templates/ not found; reinstall rl-zoo-hub")


def card_metadata(entry: Entry, env_id: str, eval_data: dict):
    """The YAML header, built with huggingface_hub's own classes."""
    from huggingface_hub import EvalResult, ModelCardData

    metrics = eval_data["metrics"]
    result = EvalResult(
        task_type="reinforcement-learning", task_name="reinforcement-learning",
        dataset_type=env_id, dataset_name=env_id, metric_type="mean_reward", metric_name="mean_reward",
        metric_value=f"{metrics['return_mean']:.2f} +/- {metrics['return_std']:.2f}",
    )  # fmt: skip
    tags = [env_id, "reinforcement-learning", "deep-reinforcement-learning", entry.framework, "zoo"]
    return ModelCardData(
        library_name=entry.framework, tags=tags, model_name=entry.algorithm, eval_results=[result]
    )


def render_card(entry: Entry, context: dict[str, Any]):
    """A ``huggingface_hub.ModelCard``: header from :func:`card_metadata`, body from the templates."""
    import jinja2
    from huggingface_hub import ModelCard

    layout = entry.layout
    layout_text = _LAYOUT_TEXT.get(layout.get("kind"), "").format(
        w=layout.get("weights_key"), a=layout.get("args_key"), parts=", ".join(layout.get("parts", []))
    )
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(templates_dir()), undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True, autoescape=False,
    )  # fmt: skip
    template = env.select_template(
        [f"{entry.framework}.md.j2", "default.md.j2"]
    )  # the framework's, else generic
    body = template.render(
        algorithm=entry.algorithm, exp_name=entry.name, framework=entry.framework, layout=layout.get("kind"),
        layout_text=layout_text, zoo_version=zoo.__version__, **context,
    )  # fmt: skip
    data = card_metadata(entry, context["env_id"], context["eval"])
    return ModelCard(f"---\n{data.to_yaml()}\n---\n\n{body}")
