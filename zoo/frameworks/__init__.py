"""Framework adapters: one module (or package) per training library, ``zoo/frameworks/<name>``.

A registry entry's ``framework`` names its adapter; adding a framework is one adapter plus
registry entries. Every adapter provides:

- ``entry_problem(raw: dict) -> (field, problem) | None``: check the framework's own registry fields.
- ``discover(root: Path) -> Iterator[Run]``: the runs (or lone model files) under ``root``,
  from directory listings and names only.
- ``inspect_run(run: Run, registry: Registry) -> RunReport``: ``zoo check``'s verdict, without
  executing any file.
- ``load_policy(model_file, entry, env_id, *, device, seed, trust_pickle) -> Policy``: safe loading
  (``torch.load(weights_only=True)``, restricted unpickling); full unpickling only when trusted.
- ``env_spec(entry, env_id, video_dir=None) -> EnvSpec``: the eval env.

The policy ``load_policy`` returns may also provide ``export_spec() -> zoo.policy.ExportSpec`` (a
plain torch module computing its deterministic action from the raw observation, plus the facts the
sidecar records); ``zoo export`` then writes, parity-checks and evaluates it with no other change.

Nothing outside this package needs to know which library produced a policy.
"""
